-- A release where waiters may queue (cluster nodes, and connections with a keyPrefix; a plain
-- master runs plain-release, the same script with the queue's keys named on the master).
-- KEYS: lock key, queue, leases, claims
-- ARGV: value, announce ('1', 's' for SPUBLISH, '0'), release channel, reservation ms
-- Returns: 2 when it handed the key on, 1 when it deleted it, 0 when the key did not hold the value.
--#include names
--#include handoff-keys
local lockValue, announce, channel, reserve = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
--#include claimant
--#include hand-over
--#include release-or-hand-over

