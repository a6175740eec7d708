-- hand(first, res, now, pub, ch, head): hands the lock key to the queue entry `first`: a direct
-- ticket gets its value for its TTL and leaves the queue; any other gets a reservation for `res`
-- ms. Publishes `head .. '\n' .. ticket id` (and, for a direct handover, `'\n' .. the master's
-- time`, ms) with `pub` on the handover channel of the ticket's instance (from the release channel
-- `ch`). Needs: names, claimant, lockKey, queueKey, leaseKey,
-- claimKey.
local function hand(first, res, now, pub, ch, head)
  local id, ttl, v = string.match(first, '^(%S+) (%d+) (%S+)$')
  local tail = first
  if v then
    redis.call('set', lockKey, v, 'PX', ttl)
    redis.call('zrem', queueKey, first)
    redis.call('zrem', leaseKey, first)
    local w = tonumber(redis.call('hget', claimKey, 'w' .. first))
    redis.call('hdel', claimKey, 'w' .. first, 'd' .. first)
    if w then
      -- its attempts may renew the handed key for two claim windows (see the ticket script)
      redis.call('hset', claimKey, 'h' .. v, now + 2 * w)
      if redis.call('pttl', claimKey) < 2 * w then redis.call('pexpire', claimKey, 2 * w) end
    end
    tail = id .. '\n' .. now
  else
    id = first
    redis.call('set', lockKey, RESERVED_PREFIX .. first, 'PX', res)
  end
  local channel = HANDOVER_PREFIX .. string.sub(id, 1, INSTANCE_TAG_LENGTH) .. ':' .. string.sub(ch, #RELEASE_PREFIX + 1)
  redis.call(pub, channel, head .. '\n' .. tail)
end
