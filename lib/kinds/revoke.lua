-- Removes a resource's holders whoever they are (docs/owner-and-revoke.md): the exclusive holder
-- (only the value the revoker saw held on a quorum, so a lock taken since is left alone), every
-- reader of a read lock, every permit slot of a counting lock (and its limit record). For each
-- holder it removes, it records the revocation in a tombstone hash (value -> reason, living as long
-- as the removed entry would have) and publishes `value\nreason` on the revocation channel, which
-- every instance holding locks follows. Waiters then move as after a release: the exclusive key goes
-- through the release (the first queued ticket gets it, or the release channel hears it), and each
-- removed reader or permit is published on the release channel.
-- KEYS: lock key, handoff queue, leases, claims, tombstone, limit key, then the permit slot keys
-- ARGV: the exclusive value to revoke ('' for none), announce ('1', or 's' to SPUBLISH), release
--   channel, reservation ms (for a fenced claimant), revocation channel, reason
-- Returns: {holders removed, the exclusive release's reply (0, 1 deleted, 2 handed on)}
--#include names
--#include handoff-keys
local lockValue, announce, channel, reserve = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
--#include claimant
--#include hand-over
local function release()
--#include release-or-hand-over
end
local t = redis.call('time')
local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pub = ARGV[2] == 's' and 'spublish' or 'publish'
local removed, longest = 0, 0
local function notice(v, left)
  redis.call('hset', KEYS[5], v, ARGV[6])
  if left > longest then longest = left end
  redis.call('publish', ARGV[5], v .. '\n' .. ARGV[6])
  removed = removed + 1
end
local kind = redis.call('type', KEYS[1]).ok
if kind == 'zset' then
  local readers = redis.call('zrange', KEYS[1], 0, -1, 'withscores')
  for i = 1, #readers, 2 do
    local left = tonumber(readers[i + 1]) - clock
    if left > 0 then notice(readers[i], left) end
  end
  redis.call('del', KEYS[1])
  for i = 1, #readers, 2 do redis.call(pub, ARGV[3], readers[i]) end
end
for i = 7, #KEYS do
  local v = redis.pcall('get', KEYS[i])
  if type(v) == 'string' then
    notice(v, redis.call('pttl', KEYS[i]))
    redis.call('del', KEYS[i])
    redis.call(pub, ARGV[3], v)
  end
end
if #KEYS >= 7 then redis.call('del', KEYS[6]) end
local released = 0
if kind == 'string' and ARGV[1] ~= '' and redis.call('get', KEYS[1]) == ARGV[1] then
  notice(ARGV[1], redis.call('pttl', KEYS[1]))
  released = release()
end
if longest > 0 and redis.call('pttl', KEYS[5]) < longest then redis.call('pexpire', KEYS[5], longest) end
return {removed, released}
