-- The plain acquires and releases that one loop turn sent to a plain master, as one call, in the
-- order they were made (lib/backend/write-batcher.ts): each entry does what its own command would,
-- a `SET NX PX` or plain-release.
-- KEYS: the lock key of each entry
-- ARGV: three per entry: 'a' (acquire) or 'r' (release); the value; the TTL ms (acquire) or the
--   reservation ms (release, '0' for a silent one)
-- Returns: one reply per entry: 1 set or 0 held (acquire: a status reply cannot ride in an array);
--   2, 1 or 0 as plain-release (release); an error reply for an entry that failed (the others ran).
--#include names
--#include plain-release-key
local replies, n, i = {}, #KEYS, 0
-- Runs the entries after i. An entry whose command fails raises out of it; the loop below keeps
-- the error as that entry's reply and calls it again for the next ones: one pcall per script call
-- instead of one per entry.
local function run()
  while i < n do
    i = i + 1
    local j = 3 * i
    if ARGV[j - 2] == 'a' then
      replies[i] = redis.call('set', KEYS[i], ARGV[j - 1], 'PX', ARGV[j], 'NX') and 1 or 0
    else
      replies[i] = releaseKey(KEYS[i], ARGV[j - 1], ARGV[j])
    end
  end
end
while i < n do
  local ok, reply = pcall(run)
  -- a failed redis.call raises a table with `err`, which the reply keeps as this entry's error
  if not ok then replies[i] = type(reply) == 'table' and reply or { err = tostring(reply) } end
end
return replies
