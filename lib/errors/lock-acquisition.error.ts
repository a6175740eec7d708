import type { MasterOutcome } from '../core/votes.js';
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
    /** How many attempts were made. */
    readonly attempts: number,
    /** Each master's answer to the last attempt, in `nodes` order. */
    readonly outcomes: readonly MasterOutcome[],
    message: string,
  ) {
    super(message);
  }

  /** True when at least one master answered that another holder has the lock. */
  get busy(): boolean {
    return this.outcomes.some((o) => o.status === 'refused');
  }
}
