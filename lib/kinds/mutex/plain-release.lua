-- The release on a plain master, in the shape of a compare-and-delete: the queue's keys and the
-- release channel are named here from the lock key (as the library names them), so an uncontended
-- release sends one key and two short arguments. A standalone master runs a script that touches
-- undeclared keys; a cluster node needs them declared for routing (handoff-release).
-- numberOfKeys: 1
-- KEYS: lock key
-- ARGV: value, reservation ms ('0': silent, no handover, no message)
-- Returns: 2 when it handed the key on, 1 when it deleted it, 0 when the key did not hold the value.
--#include names
local queueKey, leaseKey, claimKey = KEYS[1] .. ':handoff:queue', KEYS[1] .. ':handoff:lease', KEYS[1] .. ':handoff:claim'
local reserve = ARGV[2]
local announce = reserve == '0' and '0' or '1'
local channel = RELEASE_PREFIX .. KEYS[1]
--#include claimant
--#include hand-over
--#include release-or-hand-over

