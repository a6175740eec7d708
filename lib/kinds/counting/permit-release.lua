-- Compare-and-delete of the slot; the limit record goes with the last slot.
-- KEYS: the n slot keys, then the limit key
-- ARGV: value, slot (1-based), announce ('1', 's' for SPUBLISH, '0'), channel
-- Returns: 1 when it freed the slot, else 0.
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
return removed
