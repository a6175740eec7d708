-- A queued waiter's attempt (docs/handoff.md). Grants when the key already holds this value
-- (`handed` is 1 when the ticket has left the queue: only a release's handover does that; the TTL
-- starts again), when it is reserved for this ticket, or when it is free and this ticket is the
-- claimant: the first live one whose claim has not lapsed (or none). Either way the ticket is
-- (re)queued: the winner withdraws it from every master once it has a quorum, so that a waiter that
-- lost a split vote keeps its place on every master and the masters' queues stay the same. A
-- ticket's claim lapses `window` ms after its last attempt that found the key taken: taking a free
-- key (and failing to keep it) does not renew it, nor does a refusal once it has lapsed, so a
-- waiter that cannot finish holds a free key back for one window at most.
-- KEYS: lock key, queue, leases, claims[, fencing counter]
-- ARGV: value, ttl, queue entry, score, lease ms, claim window ms, ticket id
-- Returns: {1, highest fencing counter, master time ms, handed} on a grant; else {0, how many live
--   tickets are ahead, time, 0, ahead, wait}: `ahead` 1 when a live ticket ahead of it waits or a
--   waiter ahead of it holds the key (a handed value names its ticket's order), `wait` the ms until
--   the key can be this waiter's at the soonest (the claimant's claim lapses, or the key expires),
--   -1 if unknown; {0, 0, time, 0, 0, pttl} for a handed key no longer renewable.
--#include names
--#include handoff-keys
--#include prune-queue
--#include claimant
local v = redis.pcall('get', KEYS[1])
if type(v) == 'table' then v = '' end -- readers or permits hold the key: taken, by nobody queued
if v == ARGV[1] then
  local handed = 1
  if redis.call('zscore', queueKey, ARGV[3]) then handed = 0 end
  local renewable = tonumber(redis.call('hget', claimKey, 'h' .. ARGV[1]))
  if handed == 1 and renewable and renewable <= now then
    -- handed over two claim windows ago and still not counted (its replies and messages are lost or
    -- late): no longer renewed, the key lives out its TTL and then goes to the claimant
    return {0, 0, now, 0, 0, redis.call('pttl', KEYS[1])}
  end
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, 0, now, handed}
end
local free = v == (RESERVED_PREFIX .. ARGV[7])
local first, score, deadline
if v == false then
  first, score, deadline = claimant(now)
  free = first == nil or first == ARGV[3]
end
local lease = tonumber(ARGV[5])
local function queue()
  redis.call('zadd', queueKey, ARGV[4], ARGV[3])
  redis.call('zadd', leaseKey, now + lease, ARGV[3])
  redis.call('hset', claimKey, 'w' .. ARGV[3], ARGV[6])
  local d = tonumber(redis.call('hget', claimKey, 'd' .. ARGV[3]))
  if v or d == nil or (not free and d > now) then
    redis.call('hset', claimKey, 'd' .. ARGV[3], now + tonumber(ARGV[6]))
  end
  for i = 2, 4 do
    if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
  end
end
if free then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  -- written by this attempt, not handed: an earlier handover's mark no longer applies (the undo of
  -- a failed attempt reads it as "a release handed the value over since", see ticket-undo)
  redis.call('hdel', claimKey, 'h' .. ARGV[1])
  queue()
  local high = 0
  if #KEYS > 4 then high = tonumber(redis.call('get', KEYS[5]) or '0') end
  return {1, high, now, 0}
end
queue()
local rank = redis.call('zrank', queueKey, ARGV[3])
local ahead = 0
if rank > 0 then ahead = 1 end
if v then
  local score, id = string.match(v, '^(%d+)%.([%w_%-]+)%.')
  if score and (tonumber(score) < tonumber(ARGV[4]) or (tonumber(score) == tonumber(ARGV[4]) and id < ARGV[7])) then ahead = 1 end
end
local wait = -1
if v then wait = redis.call('pttl', KEYS[1]) elseif deadline then wait = deadline - now end
return {0, rank, now, 0, ahead, wait}
