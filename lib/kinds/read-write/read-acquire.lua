-- A reader joins every key, or none. Readers live at the lock key as a sorted set of values scored
-- by their expiry (master ms), the key expiring with the last reader; a writer's SET NX fails while
-- any reader is there. Writer preference: refused while a writer waits (its intent key exists, or a
-- live ticket of a queued writer is in the key's handoff lease set and its claim has not lapsed: a
-- queued writer that cannot finish holds readers off for one claim window, as it holds a free key
-- back from the writers behind it, not for its whole lease).
-- KEYS: n lock keys, their n intent keys, their n handoff lease sets, then their n claim hashes
-- ARGV: value, ttl ms, n
-- Returns: 1 = granted on all keys; 0 = a writer holds one; -1 = a writer waits for one.
local n = tonumber(ARGV[3])
local ttl = tonumber(ARGV[2])
--#include server-time
for i = 1, n do
  local kind = redis.call('type', KEYS[i]).ok
  if kind ~= 'none' and kind ~= 'zset' then return 0 end
  if redis.call('exists', KEYS[n + i]) == 1 then return -1 end
  for _, entry in ipairs(redis.call('zrangebyscore', KEYS[2 * n + i], '(' .. now, '+inf', 'limit', 0, 16)) do
    -- a ticket without a claim deadline (queued by an older version) waits for as long as its lease
    local d = tonumber(redis.call('hget', KEYS[3 * n + i], 'd' .. entry))
    if not d or d > now then return -1 end
  end
end
for i = 1, n do
  redis.call('zremrangebyscore', KEYS[i], '-inf', now)
  redis.call('zadd', KEYS[i], now + ttl, ARGV[1])
  if redis.call('pttl', KEYS[i]) < ttl then redis.call('pexpire', KEYS[i], ttl) end
end
return 1
