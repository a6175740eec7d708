-- Renews a permit slot and the limit record beside it.
-- KEYS: the slot key, the limit key
-- ARGV: value, ttl ms, n
-- Returns: 1 = extended; 0 = the slot is not ours.
local ttl = tonumber(ARGV[2])
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local held = redis.call('get', KEYS[2])
if held and held ~= ARGV[3] then return 0 end
redis.call('pexpire', KEYS[1], ttl)
if redis.call('pttl', KEYS[2]) < ttl then redis.call('set', KEYS[2], ARGV[3], 'PX', ttl) end
return 1
