-- releaseKey(lockKey, lockValue, reserve): the release of one mutex key on a plain master, where
-- the script names the key's handoff queue itself (as the library names it) instead of declaring
-- it. `reserve` is the reservation ms for a waiter, '0' for a silent release (no handover, no
-- message). Returns 2 when it handed the key on, 1 when it deleted it, 0 when the key did not hold
-- the value. Needs: names.
-- An uncontended release (the key held, no queue, no claims) runs GET, DEL, EXISTS and PUBLISH and
-- builds nothing else: the lease key, the handover helpers and their closures are made only by a
-- release that finds the queue or claims (releaseQueued), the same steps as handoff-release.
local function releaseQueued(lockKey, lockValue, reserve, queueKey, claimKey)
  local leaseKey = lockKey .. ':handoff:lease'
  local announce = reserve == '0' and '0' or '1'
  local channel = RELEASE_PREFIX .. lockKey
  --#include claimant
  --#include hand-over
  --#include release-queued
end
local function releaseKey(lockKey, lockValue, reserve)
  if redis.pcall('get', lockKey) ~= lockValue then return 0 end
  redis.call('del', lockKey)
  local queueKey, claimKey = lockKey .. ':handoff:queue', lockKey .. ':handoff:claim'
  if redis.call('exists', queueKey, claimKey) > 0 then
    return releaseQueued(lockKey, lockValue, reserve, queueKey, claimKey)
  end
  if reserve ~= '0' then redis.call('publish', RELEASE_PREFIX .. lockKey, lockValue) end
  return 1
end
