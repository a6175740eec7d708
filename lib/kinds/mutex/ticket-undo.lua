-- Undoes a failed ticketed attempt: deletes the value while the ticket is still queued (a grant of
-- this attempt). A key handed over by a release (the ticket has left the queue) stays: the waiter
-- counts it (docs/handoff.md §3). Only a direct ticket (`id ttl value`) is ever handed its value: a
-- fenced ticket's entry is its id, a release gives it a reservation, so its value is always this
-- attempt's and goes even when the ticket left the queue otherwise.
-- KEYS: lock key, queue
-- ARGV: value, queue entry
-- Returns: 1 when it deleted the value, else 0.
if redis.pcall('get', KEYS[1]) == ARGV[1] and (redis.call('zscore', KEYS[2], ARGV[2]) or not string.find(ARGV[2], ' ', 1, true)) then
  redis.call('del', KEYS[1])
  return 1
end
return 0
