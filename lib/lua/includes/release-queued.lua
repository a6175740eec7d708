-- The rest of a release that deleted the key and found its queue or claims: when announcing and a
-- live ticket waits, hands the key to the claimant (see hand-over), else publishes the value on the
-- release channel. Needs: names, claimant, hand-over, lockKey, lockValue, queueKey, leaseKey,
-- claimKey, announce, channel, reserve.
redis.call('hdel', claimKey, 'h' .. lockValue) -- a handover's renewal limit (see hand-over): the lock is over
if announce == '0' then return 1 end
local pub = announce == 's' and 'spublish' or 'publish'
if redis.call('exists', queueKey) == 1 then
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
