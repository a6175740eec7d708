-- Takes every key of a multi-key lock, or none (one key goes as a plain SET NX PX, no script).
-- KEYS: the lock keys
-- ARGV: value, ttl ms
-- Returns: 1 = granted, 0 = some key is held.
for i = 1, #KEYS do
  if redis.call('exists', KEYS[i]) == 1 then return 0 end
end
for i = 1, #KEYS do
  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
