import type { parseReleaseMessage } from '../kinds/mutex/handoff.js';
import type { KeyQueue } from './key-queues.js';

/**
 * How long a waiter that some master (not yet a majority) handed the key waits for the others
 * before it tries: a split handover is resolved by the waiters' attempts (docs/handoff.md §6).
 */
const PARTIAL_HANDOVER_MS = 10;

/** A release message read: the released value, and the ticket it was handed to (at that master time). */
type ReleaseMessage = ReturnType<typeof parseReleaseMessage>;

/**
 * Who a release of the key of `queue` wakes: the head waiter, once per released value; or, when
 * the message names the ticket the key was handed to (`value\nticket`), only that waiter, once a
 * majority (`quorum`) of masters has handed it the key. `master` and `arrived` (monotonic ms): the
 * master whose message this is, and when it arrived.
 */
export function wakeOnRelease(
  queue: KeyQueue,
  message: string,
  { value, ticket, at }: ReleaseMessage,
  master: number | undefined,
  arrived: number,
  quorum: number,
): void {
  if (ticket === undefined) {
    if (queue.lastValue === message) return;
    queue.lastValue = message;
    queue.tickets[0]?.wake();
    return;
  }
  const named = queue.tickets.find((t) => t.remoteId === ticket);
  if (!named) return; // handed to a waiter of another process
  // A direct handover: this master set the waiter's value at that master time (docs/handoff.md §3).
  if (at !== undefined && master !== undefined && !(at <= (named.handedAt.get(master)?.at ?? -Infinity)))
    named.handedAt.set(master, { at, arrived });
  // Wake it once a majority of masters has handed it the key: woken by the first, its attempt
  // could reach a master that has not yet seen the release and split the vote.
  // Messages of several handoffs can interleave: count each one apart (a few at a time).
  const handoff = `${value}\n${ticket}`;
  if (queue.lastValue === handoff) return;
  const count = (queue.handedOver.get(handoff) ?? 0) + 1;
  queue.handedOver.set(handoff, count);
  if (queue.handedOver.size > 16) queue.handedOver.delete(queue.handedOver.keys().next().value!);
  if (count < quorum) {
    // Should no majority follow (a split handover), the waiter's attempt finds out and settles it.
    if (count === 1) setTimeout(() => queue.handedOver.has(handoff) && named.wake(true), PARTIAL_HANDOVER_MS).unref();
    return;
  }
  queue.handedOver.delete(handoff);
  queue.lastValue = handoff;
  named.wake();
}
