-- The acquire of a fenced lock: every key or none, and the highest fencing counter seen.
-- KEYS: the n lock keys, then the n fencing counters
-- ARGV: value, ttl ms, n
-- Returns: the highest counter on a grant (0 when none exists yet); -1 = some key is held.
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
return high
