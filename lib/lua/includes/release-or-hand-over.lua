-- The release of a mutex key: compare-and-delete; when announcing and a live ticket waits, hands
-- the key to the claimant (see hand-over) instead, else publishes the value on the release
-- channel. Needs: names, claimant, hand-over, lockKey, lockValue, queueKey, leaseKey,
-- claimKey, announce, channel, reserve.
if redis.pcall('get', lockKey) ~= lockValue then return 0 end
redis.call('del', lockKey)
-- Without queue or claims (no waiter queued, no handover), an uncontended release ends here or publishes.
local queued = redis.call('exists', queueKey, claimKey) > 0
if queued then redis.call('hdel', claimKey, 'h' .. lockValue) end -- a handover's renewal limit (see hand-over): the lock is over
if announce == '0' then return 1 end
local pub = announce == 's' and 'spublish' or 'publish'
if queued and redis.call('exists', queueKey) == 1 then
--#include prune-queue
  local first = claimant(now)
  if first and string.match(first, ' (%S+)$') == lockValue then
    -- the holder's own ticket: its withdrawal did not land before this release
    redis.call('zrem', queueKey, first)
    redis.call('zrem', leaseKey, first)
    redis.call('hdel', claimKey, 'w' .. first, 'd' .. first)
    first = claimant(now)
  end
  if first then
    hand(first, reserve, now, pub, channel, lockValue)
    return 2
  end
end
redis.call(pub, channel, lockValue)
return 1
