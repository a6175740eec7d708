-- Withdraws this writer's intent where it is still the latest.
-- KEYS: intent keys
-- ARGV: waiter id
-- Returns: how many intents it removed.
local n = 0
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[1] then redis.call('del', KEYS[i]); n = n + 1 end
end
return n
