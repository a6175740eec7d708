-- Deletes the keys that still hold the value (compare-and-delete), and when announcing publishes
-- the value on each deleted key's channel to wake the waiters (a failed attempt's clean-up passes
-- '0': nothing was really free).
-- KEYS: the lock keys
-- ARGV: value, announce ('1', 's' for SPUBLISH on a Redis 7+ cluster, '0'), one channel per key
-- Returns: how many keys it deleted.
local n = 0
for i = 1, #KEYS do
  if redis.pcall('get', KEYS[i]) == ARGV[1] then
    redis.call('del', KEYS[i])
    n = n + 1
    if ARGV[2] ~= '0' then redis.call(ARGV[2] == 's' and 'spublish' or 'publish', ARGV[2 + i], ARGV[1]) end
  end
end
return n
