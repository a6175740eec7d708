import { quorumOf, type MasterOutcome } from '../core/votes.js';
import { RedlockError } from './redlock.error.js';

/**
 * No quorum could be won for the resources within the retry budget (`retryCount`, `acquireTimeout`).
 * `outcomes` gives each master's answer to the last attempt, so that "busy" (another holder) and
 * "Redis down" (errors, timeouts) can be told apart.
 *
 * @example
 * try { await redlock.acquire('seat:12A', 2_000); }
 * catch (e) { if (e instanceof LockAcquisitionError && e.busy) return 'taken, try later'; throw e; }
 * @publicApi
 */
export class LockAcquisitionError extends RedlockError {
  constructor(
    /** The resources asked for (without the key prefix). */
    readonly resources: readonly string[],
    /** How many tries were made; a turn spent queued behind an earlier waiter of this process counts as one. */
    readonly attempts: number,
    /** Each master's answer to the last attempt, in `nodes` order. */
    readonly outcomes: readonly MasterOutcome[],
    message: string,
  ) {
    super(message);
  }

  /**
   * True when another holder is why the lock was not won: at least one master answered that the
   * resource is held, and the masters that failed or timed out were too few to block a quorum on
   * their own. False when Redis trouble alone explains the failure.
   */
  get busy(): boolean {
    let refused = 0;
    let failed = 0;
    for (const o of this.outcomes) {
      if (o.status === 'refused') refused++;
      else if (o.status !== 'granted') failed++;
    }
    return refused > 0 && failed <= this.outcomes.length - quorumOf(this.outcomes.length);
  }
}
