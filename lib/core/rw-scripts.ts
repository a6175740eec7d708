import type { MasterConnection } from './master-connection.js';

/**
 * Lua of read-write locks, per master. The write lock is the ordinary mutex: a string at
 * `keyPrefix + resource` (SET NX). Readers live at the SAME key, as a sorted set of reader values
 * scored by their expiry (server milliseconds), the key itself expiring with the last reader. So a
 * writer's SET NX fails while any reader is there, and a reader is refused while the key is a
 * string (a writer). Writer preference: new readers are refused while a writer waits, that is
 * while a waiting writer's intent key (`resource + ':writer-waiting'`, with a TTL; multi-key
 * writers) exists or a live ticket of a queued writer (docs/handoff.md) is in the key's handoff
 * lease set. Keys travel as KEYS, values as ARGV.
 */
export const RW_LUA = {
  /**
   * KEYS: n lock keys, their n intent keys, then their n handoff lease sets; ARGV: value, ttl, n.
   * 1 = granted on all keys; 0 = a writer holds one; -1 = a writer waits for one.
   */
  readAcquire: `
local n = tonumber(ARGV[3])
local ttl = tonumber(ARGV[2])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, n do
  local kind = redis.call('type', KEYS[i]).ok
  if kind ~= 'none' and kind ~= 'zset' then return 0 end
  if redis.call('exists', KEYS[n + i]) == 1 then return -1 end
  if redis.call('zcount', KEYS[2 * n + i], '(' .. now, '+inf') > 0 then return -1 end
end
for i = 1, n do
  redis.call('zremrangebyscore', KEYS[i], '-inf', now)
  redis.call('zadd', KEYS[i], now + ttl, ARGV[1])
  if redis.call('pttl', KEYS[i]) < ttl then redis.call('pexpire', KEYS[i], ttl) end
end
return 1`,
  /**
   * KEYS: the lock keys; ARGV: value, ttl. 1 = extended; 0 = this reader is no longer on some key.
   * The key then lives exactly as long as its longest-lived reader, so a reader shortened to its
   * `minHold` does not keep writers out until its old TTL.
   */
  readExtend: `
local ttl = tonumber(ARGV[2])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #KEYS do
  if redis.call('type', KEYS[i]).ok ~= 'zset' then return 0 end
  local score = redis.call('zscore', KEYS[i], ARGV[1])
  if not score or tonumber(score) <= now then return 0 end
end
for i = 1, #KEYS do
  redis.call('zadd', KEYS[i], now + ttl, ARGV[1])
  redis.call('zremrangebyscore', KEYS[i], '-inf', now)
  local last = redis.call('zrange', KEYS[i], -1, -1, 'withscores')
  redis.call('pexpire', KEYS[i], math.max(1, tonumber(last[2]) - now))
end
return 1`,
  /**
   * KEYS: the lock keys; ARGV: value, announce ('1', 's' for SPUBLISH, '0'), then one release channel per key.
   * Removes the reader; the key then expires with the last remaining reader (or goes now).
   */
  readRelease: `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local removed = 0
for i = 1, #KEYS do
  if redis.call('type', KEYS[i]).ok == 'zset' and redis.call('zrem', KEYS[i], ARGV[1]) == 1 then
    removed = removed + 1
    redis.call('zremrangebyscore', KEYS[i], '-inf', now)
    local last = redis.call('zrange', KEYS[i], -1, -1, 'withscores')
    if last[2] then
      redis.call('pexpire', KEYS[i], math.max(1, tonumber(last[2]) - now))
    end
    if ARGV[2] ~= '0' then redis.call(ARGV[2] == 's' and 'spublish' or 'publish', ARGV[2 + i], ARGV[1]) end
  end
end
return removed`,
  /** KEYS: intent keys; ARGV: waiter id, ttl. Registers (or refreshes) a waiting writer. */
  writerWaiting: `
for i = 1, #KEYS do redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2]) end
return 1`,
  /** KEYS: intent keys; ARGV: waiter id. Withdraws this writer's intent where it is still the latest. */
  writerDone: `
local n = 0
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[1] then redis.call('del', KEYS[i]); n = n + 1 end
end
return n`,
} as const;

/** A client with the read-write scripts registered (EVALSHA, EVAL on NOSCRIPT). */
export interface RwScriptedClient {
  quorumLockReadAcquire(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockReadExtend(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockReadRelease(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockWriterWaiting(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockWriterDone(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
}

/** Registers the read-write scripts on a client (idempotent). */
export function rwScripts(client: MasterConnection): RwScriptedClient {
  const scripted = client as unknown as Partial<RwScriptedClient>;
  if (typeof scripted.quorumLockWriterDone !== 'function') {
    client.defineCommand('quorumLockReadAcquire', { lua: RW_LUA.readAcquire });
    client.defineCommand('quorumLockReadExtend', { lua: RW_LUA.readExtend });
    client.defineCommand('quorumLockReadRelease', { lua: RW_LUA.readRelease });
    client.defineCommand('quorumLockWriterWaiting', { lua: RW_LUA.writerWaiting });
    client.defineCommand('quorumLockWriterDone', { lua: RW_LUA.writerDone });
  }
  return client as unknown as RwScriptedClient;
}
