-- Renews a reader on every key. The key then lives exactly as long as its longest-lived reader, so
-- a reader shortened to its `minHold` does not keep writers out until its old TTL.
-- KEYS: the lock keys
-- ARGV: value, ttl ms
-- Returns: 1 = extended; 0 = this reader is no longer on some key.
local ttl = tonumber(ARGV[2])
--#include server-time
for i = 1, #KEYS do
  if redis.call('type', KEYS[i]).ok ~= 'zset' then return 0 end
  local score = redis.call('zscore', KEYS[i], ARGV[1])
  if not score or tonumber(score) <= now then return 0 end
end
for i = 1, #KEYS do
  redis.call('zadd', KEYS[i], now + ttl, ARGV[1])
  redis.call('zremrangebyscore', KEYS[i], '-inf', now)
  local last = redis.call('zrange', KEYS[i], -1, -1, 'withscores')
  redis.call('pexpire', KEYS[i], math.max(1, tonumber(last[2]) - now))
end
return 1
