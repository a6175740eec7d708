-- Leaves the queue; a reservation for the ticket, or the value given up, passes to the claimant
-- (`~id\nnext[\ntime]` to its instance), or the key is freed (`~id` on the release channel).
-- KEYS: lock key, queue, leases, claims
-- ARGV: queue entry, channel, reservation ms, ticket id, value given up ('' when the waiter won)[,
--   's' to SPUBLISH]
-- Returns: 1 when it freed or passed on the key, else 0.
--#include names
--#include handoff-keys
--#include claimant
--#include hand-over
redis.call('zrem', queueKey, ARGV[1])
redis.call('zrem', leaseKey, ARGV[1])
redis.call('hdel', claimKey, 'w' .. ARGV[1], 'd' .. ARGV[1])
if ARGV[5] ~= '' then redis.call('hdel', claimKey, 'h' .. ARGV[5]) end
local mine = RESERVED_PREFIX .. ARGV[4]
local v = redis.pcall('get', KEYS[1])
if v ~= mine and (ARGV[5] == '' or v ~= ARGV[5]) then return 0 end
local pub = ARGV[6] == 's' and 'spublish' or 'publish'
redis.call('del', KEYS[1])
--#include prune-queue
local first = claimant(now)
if first then
  hand(first, ARGV[3], now, pub, ARGV[2], mine)
else
  redis.call(pub, ARGV[2], mine)
end
return 1
