-- A reader joins every key, or none. Readers live at the lock key as a sorted set of values scored
-- by their expiry (master ms), the key expiring with the last reader; a writer's SET NX fails while
-- any reader is there. Writer preference: refused while a writer waits (its intent key exists, or a
-- live ticket of a queued writer is in the key's handoff lease set).
-- KEYS: n lock keys, their n intent keys, then their n handoff lease sets
-- ARGV: value, ttl ms, n
-- Returns: 1 = granted on all keys; 0 = a writer holds one; -1 = a writer waits for one.
local n = tonumber(ARGV[3])
local ttl = tonumber(ARGV[2])
--#include server-time
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
return 1
