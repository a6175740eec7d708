import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { now } from '../util/clock.js';
import { abortableSleep } from './sleep.js';

/**
 * `onBusy: 'skip'` and split votes. Contenders that ask at the same instant can split the votes
 * (each wins one master, or a master times out while two of them split the others): nobody wins a
 * quorum, and each sees a refusal. That is not "someone else holds it", so skipping on it would lose
 * the fire on every instance. An attempt that won a vote but no quorum therefore tries again, after
 * a short random delay (its votes have been released by then, and the delays spread the contenders
 * out so that one of them wins), a few times within half the TTL; an attempt that no master
 * granted skips at once when refused (`busy`), and rejects at once on Redis trouble.
 */

/** Tries after a split, at most. */
export const SPLIT_RETRIES = 8;
/** The longest random delay before a try after a split, in ms (also capped at a tenth of the TTL). */
export const SPLIT_DELAY_MAX = 100;

/**
 * True when `error` says no quorum was won although some master granted this caller's vote: a
 * split with a simultaneous contender (or with a master that timed out), not a clear answer.
 */
export function isSplitVote(error: unknown): error is LockAcquisitionError {
  return (
    error instanceof LockAcquisitionError &&
    error.reason === 'votes' &&
    error.outcomes.some((o) => o.status === 'granted')
  );
}

/**
 * Runs `attempt` and, while it rejects with a split vote, runs it again after a random delay
 * (uniform up to 20, 40, 80… ms, capped at `SPLIT_DELAY_MAX` and a tenth of `ttl`), at most
 * `SPLIT_RETRIES` times and only until half of `ttl` has passed since the first try. Other
 * outcomes pass through; after the last try its error is rethrown, and the caller decides on it
 * (`busy`: skip; else Redis trouble). `signals` end a delay early.
 *
 * @example
 * const lock = await settleSplitVotes(() => acquireOnce(), ttl, [signal, closing]);
 */
export async function settleSplitVotes<T>(
  attempt: () => Promise<T>,
  ttl: number,
  signals: readonly (AbortSignal | undefined)[],
): Promise<T> {
  const until = now() + ttl / 2;
  const cap = Math.max(2, Math.min(SPLIT_DELAY_MAX, ttl / 10));
  for (let tries = 0; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isSplitVote(error) || tries >= SPLIT_RETRIES) throw error;
      const wait = Math.random() * Math.min(cap, 20 * 2 ** tries);
      if (now() + wait >= until) throw error;
      await abortableSleep(wait, signals);
    }
  }
}
