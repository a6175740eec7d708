import { voteRound } from '../../quorum/vote-round.js';
import type { RoundContext } from '../acquire-request.js';
import { writerDoneOn, writerWaitingOn } from './read-calls.js';

// Writer preference (docs/read-write-and-counting-locks.md): a writer that has to wait registers an
// intent on every master, and new readers are refused there while it lives. The writer is the
// mutex (mutex-kind.ts); this is what it does while it waits.

/**
 * Registers a waiting writer on every master (new readers are refused while it lasts).
 *
 * @example
 * registerWriter(context, ['lock:catalog'], waiterId, 2 * (retryDelay + retryJitter) + 2 * timeout + 50);
 */
export function registerWriter(ctx: RoundContext, keys: readonly string[], waiter: string, ttl: number): void {
  voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) => writerWaitingOn(m, keys, waiter, String(ttl)),
    () => true,
  );
}

/**
 * Withdraws a writer's intent (it got the lock or gave up).
 *
 * @example
 * withdrawWriter(context, ['lock:catalog'], waiterId);
 */
export function withdrawWriter(ctx: RoundContext, keys: readonly string[], waiter: string): void {
  voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) => writerDoneOn(m, keys, waiter),
    () => true,
  );
}
