-- Reads the master's time (`now`), then drops the tickets whose lease lapsed by then from the
-- queue, and their claims. Needs: queueKey, leaseKey, claimKey.
--#include server-time
local dead = redis.call('zrangebyscore', leaseKey, '-inf', now)
for _, m in ipairs(dead) do
  redis.call('zrem', queueKey, m)
  redis.call('hdel', claimKey, 'w' .. m, 'd' .. m)
end
if #dead > 0 then redis.call('zremrangebyscore', leaseKey, '-inf', now) end
