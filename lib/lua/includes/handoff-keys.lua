-- The lock key and its handoff queue's keys, declared (KEYS[1..4]) so that a cluster routes the call
-- by slot.
local lockKey, queueKey, leaseKey, claimKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
