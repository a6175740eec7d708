-- Registers (or refreshes) a waiting writer, which holds new readers off.
-- KEYS: intent keys
-- ARGV: waiter id, ttl ms
-- Returns: 1.
for i = 1, #KEYS do redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2]) end
return 1
