-- Removes the reader; the key then expires with the last remaining reader (or goes now).
-- KEYS: the lock keys
-- ARGV: value, announce ('1', 's' for SPUBLISH, '0'), then one release channel per key
-- Returns: how many keys it left.
--#include server-time
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
return removed
