-- The handoff queue's keys, declared (KEYS[2..4]) so that a cluster routes the call by slot.
local queueKey, leaseKey, claimKey = KEYS[2], KEYS[3], KEYS[4]
