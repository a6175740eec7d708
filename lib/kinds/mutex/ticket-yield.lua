-- Gives a key handed to this waiter on to the claimant (see hand-over), or frees it when none
-- waits, unless that ticket is not ahead of this waiter in the masters' order (the waiter ahead,
-- not queued here yet, will be: giving the key to one behind would serve it out of turn);
-- `~id\nnext[\ntime]` goes to the next ticket's instance. The waiter, still waiting, takes its
-- place in the queue again.
-- KEYS: lock key, queue, leases, claims
-- ARGV: value, channel, reservation ms, queue entry, ticket id, announce ('1', or 's' to SPUBLISH),
--   the ticket's score, its lease ms, its claim window ms
-- Returns: 1 when it gave the key on, else 0.
--#include names
--#include handoff-keys
--#include claimant
--#include hand-over
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then return 0 end
--#include prune-queue
local first, score = claimant(now)
if first and (score > tonumber(ARGV[7]) or (score == tonumber(ARGV[7]) and first >= ARGV[4])) then return 0 end
local pub = ARGV[6] == 's' and 'spublish' or 'publish'
redis.call('del', KEYS[1])
if first then
  hand(first, ARGV[3], now, pub, ARGV[2], RESERVED_PREFIX .. ARGV[5])
else
  redis.call(pub, ARGV[2], RESERVED_PREFIX .. ARGV[5])
end
local lease = tonumber(ARGV[8])
redis.call('zadd', queueKey, ARGV[7], ARGV[4])
redis.call('zadd', leaseKey, now + lease, ARGV[4])
redis.call('hset', claimKey, 'w' .. ARGV[4], ARGV[9], 'd' .. ARGV[4], now + tonumber(ARGV[9]))
for i = 2, 4 do
  if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
end
return 1
