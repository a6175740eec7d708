import type { MasterConnection } from './master-connection.js';

/**
 * Lua of counting locks, per master. A counting lock of limit n is n permit slots
 * (`resource + ':permit:' + i`), each an ordinary mutex key, plus a limit record
 * (`resource + ':limit'`) that holds n and lives at least as long as every slot set beside it, so
 * that holders disagreeing on n meet on the master their quorums share. Keys travel as KEYS.
 */
export const SEMAPHORE_LUA = {
  /**
   * KEYS: the n slot keys, then the limit key; ARGV: value, ttl, n, slot (1-based).
   * Returns {1, free} = slot granted; {0, free} = slot held; `free` is a string of '1'/'0' per slot
   * (after the grant), so that a refused attempt can pick the slot free on the most masters;
   * {-1, held} = the holders here use another limit `held`.
   */
  acquire: `
local n = tonumber(ARGV[3])
local ttl = tonumber(ARGV[2])
local limit = KEYS[n + 1]
local held = redis.call('get', limit)
if held and held ~= ARGV[3] then return {-1, held} end
local k = tonumber(ARGV[4])
local granted = 0
if redis.call('exists', KEYS[k]) == 0 then
  redis.call('set', KEYS[k], ARGV[1], 'PX', ttl)
  if redis.call('pttl', limit) < ttl then redis.call('set', limit, ARGV[3], 'PX', ttl) end
  granted = 1
end
local free = ''
for i = 1, n do
  if redis.call('exists', KEYS[i]) == 1 then free = free .. '0' else free = free .. '1' end
end
return {granted, free}`,
  /** KEYS: the slot key, the limit key; ARGV: value, ttl, n. 1 = extended; 0 = the slot is not ours. */
  extend: `
local ttl = tonumber(ARGV[2])
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local held = redis.call('get', KEYS[2])
if held and held ~= ARGV[3] then return 0 end
redis.call('pexpire', KEYS[1], ttl)
if redis.call('pttl', KEYS[2]) < ttl then redis.call('set', KEYS[2], ARGV[3], 'PX', ttl) end
return 1`,
  /**
   * KEYS: the n slot keys, then the limit key; ARGV: value, slot (1-based), announce ('1', 's' for
   * SPUBLISH, '0'), channel.
   * Compare-and-delete of the slot; the limit record goes with the last slot.
   */
  release: `
local n = #KEYS - 1
local k = tonumber(ARGV[2])
local removed = 0
if redis.call('get', KEYS[k]) == ARGV[1] then
  redis.call('del', KEYS[k])
  removed = 1
  if ARGV[3] ~= '0' then redis.call(ARGV[3] == 's' and 'spublish' or 'publish', ARGV[4], ARGV[1]) end
end
for i = 1, n do
  if redis.call('exists', KEYS[i]) == 1 then return removed end
end
redis.call('del', KEYS[n + 1])
return removed`,
} as const;

/** A client with the counting-lock scripts registered (EVALSHA, EVAL on NOSCRIPT). */
export interface SemaphoreScriptedClient {
  quorumLockPermitAcquire(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<unknown>;
  quorumLockPermitExtend(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockPermitRelease(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
}

/** Registers the counting-lock scripts on a client (idempotent). */
export function semaphoreScripts(client: MasterConnection): SemaphoreScriptedClient {
  const scripted = client as unknown as Partial<SemaphoreScriptedClient>;
  if (typeof scripted.quorumLockPermitRelease !== 'function') {
    client.defineCommand('quorumLockPermitAcquire', { lua: SEMAPHORE_LUA.acquire });
    client.defineCommand('quorumLockPermitExtend', { lua: SEMAPHORE_LUA.extend });
    client.defineCommand('quorumLockPermitRelease', { lua: SEMAPHORE_LUA.release });
  }
  return client as unknown as SemaphoreScriptedClient;
}
