-- Raises the fencing counters to the proposed token if all are below it.
-- KEYS: the fencing counters
-- ARGV: the proposed token
-- Returns: the highest counter found before: below the token means "written".
local token = tonumber(ARGV[1])
local high = 0
for i = 1, #KEYS do
  local c = tonumber(redis.call('get', KEYS[i]) or '0')
  if c > high then high = c end
end
if high < token then
  for i = 1, #KEYS do redis.call('set', KEYS[i], ARGV[1]) end
end
return high
