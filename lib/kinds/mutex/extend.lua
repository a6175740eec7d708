-- Resets the TTL of every key if all of them still hold the value.
-- KEYS: the lock keys
-- ARGV: value, ttl ms
-- Returns: 1 = extended; 0 = some key holds another value; 2 = none holds another value but some
--   key is gone (nothing extended: the quorum repair may re-take it, see repair.lua).
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
return 1
