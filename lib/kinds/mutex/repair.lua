-- Quorum repair (docs/quorum-repair.md): sent only after an extension won a quorum, to the masters
-- that answered 2 (the key is gone there). Re-takes every key with the same value and TTL, unless
-- one of them holds another value.
-- KEYS: the lock keys
-- ARGV: value, ttl ms
-- Returns: 1 = every key holds the value now, 0 = another holder has one.
for i = 1, #KEYS do
  local v = redis.pcall('get', KEYS[i])
  if v and v ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do
  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
