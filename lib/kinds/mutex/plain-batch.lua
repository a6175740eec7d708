-- The plain acquires and releases that one loop turn sent to a plain master, as one call, in the
-- order they were made (lib/backend/write-batcher.ts): each entry does what its own command would,
-- a `SET NX PX` or plain-release. The key is tested before it is set, so a SET that MONITOR shows
-- from this script always took the key.
-- KEYS: the lock key of each entry
-- ARGV: three per entry: 'a' (acquire) or 'r' (release); the value; the TTL ms (acquire) or the
--   reservation ms (release, '0' for a silent one)
-- Returns: one reply per entry: 1 set or 0 held (acquire: a status reply cannot ride in an array);
--   2, 1 or 0 as plain-release (release); an error reply for an entry that failed (the others ran).
--#include names
--#include plain-release-key
local function acquireKey(key, value, ttl)
  if redis.call('exists', key) == 1 then return 0 end
  redis.call('set', key, value, 'PX', ttl)
  return 1
end
local replies = {}
for i = 1, #KEYS do
  local op = ARGV[3 * i - 2] == 'a' and acquireKey or releaseKey
  local ok, reply = pcall(op, KEYS[i], ARGV[3 * i - 1], ARGV[3 * i])
  -- a failed redis.call raises a table with `err`, which the reply keeps as this entry's error
  if not ok and type(reply) ~= 'table' then reply = { err = tostring(reply) } end
  replies[i] = reply
end
return replies
