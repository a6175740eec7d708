import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { now } from './clock.js';
import { abortableSleep } from './retry.js';

/**
 * `onBusy: 'skip'` and split votes. Contenders that ask at the same instant can split the votes
 * (each wins one master, or a master times out while two of them split the others): nobody wins a
 * quorum, and each sees a refusal. That is not "someone else holds it", so skipping on it would lose
 * the fire on every instance. An attempt that won a vote but no quorum therefore tries again, after
 * a short random delay (the contenders' votes have been released by then, and the delays spread
 * them out so one of them wins), a few times within a fraction of the TTL; an attempt that no
 * master granted is a clear "busy" and skips at once.
 */

/** Tries after a split, at most. */
export const SPLIT_RETRIES = 5;
/** The longest random delay before a try after a split, in ms (also capped at a tenth of the TTL). */
export const SPLIT_DELAY_MAX = 40;

/** True when `error` is a busy refusal in which some master granted this caller's vote: a split, not a holder. */
export function isSplitVote(error: unknown): error is LockAcquisitionError {
  return error instanceof LockAcquisitionError && error.busy && error.outcomes.some((o) => o.status === 'granted');
}

/**
 * Runs `attempt` and, while it rejects with a split vote, runs it again after a random delay
 * (growing from a few ms up to `SPLIT_DELAY_MAX`), at most `SPLIT_RETRIES` times and only while a
 * quarter of `ttl` has not passed since the first try. Other outcomes pass through; the last
 * split's error is rethrown (its `busy` is true, so the caller skips). `signals` end a delay early.
 *
 * @example
 * const lock = await settleSplitVotes(() => acquireOnce(), ttl, [signal, closing]);
 */
export async function settleSplitVotes<T>(
  attempt: () => Promise<T>,
  ttl: number,
  signals: readonly (AbortSignal | undefined)[],
): Promise<T> {
  const until = now() + ttl / 4;
  const cap = Math.max(2, Math.min(SPLIT_DELAY_MAX, ttl / 10));
  for (let tries = 0; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isSplitVote(error) || tries >= SPLIT_RETRIES) throw error;
      const wait = Math.random() * Math.min(cap, 5 * 2 ** tries);
      if (now() + wait >= until) throw error;
      await abortableSleep(wait, signals);
    }
  }
}
