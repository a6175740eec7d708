-- The release on a plain master, in the shape of a compare-and-delete: the queue's keys and the
-- release channel are named here from the lock key (as the library names them), so an uncontended
-- release sends one key and two short arguments. A standalone master runs a script that touches
-- undeclared keys; a cluster node needs them declared for routing (handoff-release).
-- numberOfKeys: 1
-- KEYS: lock key
-- ARGV: value, reservation ms ('0': silent, no handover, no message)
-- Returns: 2 when it handed the key on, 1 when it deleted it, 0 when the key did not hold the value.
--#include names
--#include plain-release-key
return releaseKey(KEYS[1], ARGV[1], ARGV[2])

