-- claimant(now): the ticket a free key (or a release's handover) goes to: the first in the queue
-- whose claim has not lapsed (docs/handoff.md §4), with its score and claim deadline; nil when every
-- ticket's has (only the first 16 are looked at). A ticket without a claim (queued by an older
-- version) claims. A ticket without a lease is dropped: nothing would ever prune it (an evicting
-- master dropped the leases key but not the queue's), and without a claim either it would hold the
-- key back for good. Needs: queueKey, leaseKey, claimKey.
local function claimant(now)
  local q = redis.call('zrange', queueKey, 0, 15, 'withscores')
  for i = 1, #q, 2 do
    if redis.call('zscore', leaseKey, q[i]) then
      local d = tonumber(redis.call('hget', claimKey, 'd' .. q[i]))
      if not d or d > now then return q[i], tonumber(q[i + 1]), d end
    else
      redis.call('zrem', queueKey, q[i])
      redis.call('hdel', claimKey, 'w' .. q[i], 'd' .. q[i])
    end
  end
  return nil
end
