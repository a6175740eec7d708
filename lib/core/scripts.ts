import type { MasterConnection } from './master-connection.js';

/**
 * The Lua scripts of the algorithm. Resource keys travel as KEYS and the lock value and TTL as
 * ARGV: nothing user-supplied is spliced into Lua. Each script covers all of a lock's resources at
 * once on one master, so a master grants, extends or releases all of them or none.
 */
export const LUA = {
  /** Sets every key to the value with a TTL if none of them exists. 1 = granted, 0 = some key is held. */
  acquire: `
for i = 1, #KEYS do
  if redis.call('exists', KEYS[i]) == 1 then return 0 end
end
for i = 1, #KEYS do
  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1`,
  /**
   * The acquire of a fenced lock. KEYS: the n lock keys, then the n fencing counters; ARGV: value,
   * TTL, n. On a grant it returns the highest counter (0 when none exists yet); -1 = some key is held.
   */
  fencedAcquire: `
local n = tonumber(ARGV[3])
for i = 1, n do
  if redis.call('exists', KEYS[i]) == 1 then return -1 end
end
local high = 0
for i = 1, n do
  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])
  local c = tonumber(redis.call('get', KEYS[n + i]) or '0')
  if c > high then high = c end
end
return high`,
  /**
   * Raises the fencing counters (KEYS) to the proposed token ARGV[1] if all are below it, and returns
   * the highest counter found before: below the token means "written".
   */
  fence: `
local token = tonumber(ARGV[1])
local high = 0
for i = 1, #KEYS do
  local c = tonumber(redis.call('get', KEYS[i]) or '0')
  if c > high then high = c end
end
if high < token then
  for i = 1, #KEYS do redis.call('set', KEYS[i], ARGV[1]) end
end
return high`,
  /**
   * Resets the TTL of every key if all of them still hold the value. 1 = extended; 0 = some key
   * holds another value; 2 = none holds another value but some key is gone (nothing extended: the
   * quorum repair may re-take it, see `repair`).
   */
  extend: `
local absent = false
for i = 1, #KEYS do
  local v = redis.pcall('get', KEYS[i])
  if v ~= ARGV[1] then
    if v then return 0 end
    absent = true
  end
end
if absent then return 2 end
for i = 1, #KEYS do
  redis.call('pexpire', KEYS[i], ARGV[2])
end
return 1`,
  /**
   * Quorum repair (docs/quorum-repair.md): sent only after an extension won a quorum, to the masters
   * that answered 2 (the key is gone there). Re-takes every key with the same value and TTL, unless
   * one of them holds another value. 1 = every key holds the value now, 0 = another holder has one.
   */
  repair: `
for i = 1, #KEYS do
  local v = redis.pcall('get', KEYS[i])
  if v and v ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do
  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1`,
  /**
   * Deletes the keys that still hold the value (compare-and-delete). Returns how many it deleted.
   * When ARGV[2] is '1' ('s': sharded, SPUBLISH on a Redis 7+ cluster), it publishes the value on the
   * channel ARGV[2 + i] for each key it deleted, to wake the waiters (a failed attempt's clean-up
   * passes '0': nothing was really free).
   */
  release: `
local n = 0
for i = 1, #KEYS do
  if redis.pcall('get', KEYS[i]) == ARGV[1] then
    redis.call('del', KEYS[i])
    n = n + 1
    if ARGV[2] ~= '0' then redis.call(ARGV[2] == 's' and 'spublish' or 'publish', ARGV[2 + i], ARGV[1]) end
  end
end
return n`,
} as const;

/** A client with the scripts registered as commands (EVALSHA, with EVAL on NOSCRIPT). */
export interface ScriptedClient {
  quorumLockAcquire(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockFencedAcquire(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockFence(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockExtend(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockRelease(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockRepair(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
}

/** Registers the scripts on a client with ioredis `defineCommand` (idempotent). */
export function defineScripts(client: MasterConnection): ScriptedClient {
  const scripted = client as unknown as Partial<ScriptedClient>;
  if (typeof scripted.quorumLockRepair !== 'function') {
    client.defineCommand('quorumLockAcquire', { lua: LUA.acquire });
    client.defineCommand('quorumLockFencedAcquire', { lua: LUA.fencedAcquire });
    client.defineCommand('quorumLockFence', { lua: LUA.fence });
    client.defineCommand('quorumLockExtend', { lua: LUA.extend });
    client.defineCommand('quorumLockRelease', { lua: LUA.release });
    client.defineCommand('quorumLockRepair', { lua: LUA.repair });
  }
  return client as unknown as ScriptedClient;
}
