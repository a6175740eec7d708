-- Takes one permit slot of a counting lock of limit n: n slot keys, each a mutex key, plus a limit
-- record that holds n and lives at least as long as every slot beside it, so that holders
-- disagreeing on n meet on the master their quorums share.
-- KEYS: the n slot keys, then the limit key
-- ARGV: value, ttl ms, n, slot (1-based)
-- Returns: {1, free} = slot granted; {0, free} = slot held; `free` is a string of '1'/'0' per slot
--   (after the grant), so that a refused attempt can pick the slot free on the most masters;
--   {-1, held} = the holders here use another limit `held`.
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
return {granted, free}
