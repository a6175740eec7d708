-- The release of a mutex key: compare-and-delete; when announcing and a live ticket waits, hands
-- the key to the claimant (see hand-over) instead, else publishes the value on the release
-- channel. Needs: names, claimant, hand-over, lockKey, lockValue, queueKey, leaseKey,
-- claimKey, announce, channel, reserve.
if redis.pcall('get', lockKey) ~= lockValue then return 0 end
redis.call('del', lockKey)
-- Without queue or claims (no waiter queued, no handover), an uncontended release ends here.
if redis.call('exists', queueKey, claimKey) == 0 then
  if announce ~= '0' then redis.call(announce == 's' and 'spublish' or 'publish', channel, lockValue) end
  return 1
end
--#include release-queued
