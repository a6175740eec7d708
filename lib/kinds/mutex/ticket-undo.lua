-- Undoes a failed ticketed attempt: deletes the value while the ticket is still queued (a grant of
-- this attempt). A key handed over by a release (the ticket has left the queue) stays: the waiter
-- counts it (docs/handoff.md §3). Only a direct ticket (`id ttl value`) is ever handed its value: a
-- fenced ticket's entry is its id, a release gives it a reservation, so its value is always this
-- attempt's and goes even when the ticket left the queue otherwise (its lease lapsed while the
-- waiter stalled, and another script pruned it). So does a direct ticket's value that this attempt
-- set itself, unless a release has handed the value over since (a handover leaves `h<value>` in the
-- claims: see hand-over).
-- KEYS: lock key, queue, claims
-- ARGV: value, queue entry, took ('1' when this attempt's reply from this master said it set the
--   value itself: granted, not handed)
-- Returns: 1 when it deleted the value, else 0.
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('zscore', KEYS[2], ARGV[2]) or not string.find(ARGV[2], ' ', 1, true)
  or (ARGV[3] == '1' and redis.call('hexists', KEYS[3], 'h' .. ARGV[1]) == 0) then
  redis.call('del', KEYS[1])
  return 1
end
return 0
