-- releaseKey(lockKey, lockValue, reserve): the release of one mutex key on a plain master, where
-- the script names the key's handoff queue itself (as the library names it) instead of declaring
-- it. `reserve` is the reservation ms for a waiter, '0' for a silent release (no handover, no
-- message). Returns 2 when it handed the key on, 1 when it deleted it, 0 when the key did not hold
-- the value. Needs: names.
local function releaseKey(lockKey, lockValue, reserve)
  local queueKey, leaseKey, claimKey = lockKey .. ':handoff:queue', lockKey .. ':handoff:lease', lockKey .. ':handoff:claim'
  local announce = reserve == '0' and '0' or '1'
  local channel = RELEASE_PREFIX .. lockKey
  --#include claimant
  --#include hand-over
  --#include release-or-hand-over
end
