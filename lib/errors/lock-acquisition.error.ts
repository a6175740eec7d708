import { describeOutcomes, quorumOf, type MasterOutcome } from './outcomes.js';
import { quote } from './quote.js';
import { RedlockError } from './redlock.error.js';

/**
 * Why an acquisition failed:
 * - `votes`: no quorum of masters granted the lock (held by another holder, or Redis trouble: see `outcomes`);
 * - `too-late`: a quorum was won, but no validity was left (the TTL is too short for the latency);
 * - `fencing`: the lock was won, but no quorum of masters took its fencing token;
 * - `timeout`: `acquireTimeout` ran out while the masters had not yet answered.
 *
 * @example
 * if (e instanceof LockAcquisitionError && e.reason === 'too-late') raiseTheTtl();
 * @publicApi
 */
export type LockAcquisitionReason = 'votes' | 'too-late' | 'fencing' | 'timeout';

/** What `LockAcquisitionError.of` needs to explain a failure. @internal */
export interface AcquisitionFailure {
  resources: readonly string[];
  attempts: number;
  /** Each master's answer to the last attempt, in `nodes` order (`timeout` where none came). */
  outcomes: readonly MasterOutcome[];
  reason: LockAcquisitionReason;
  /** What ended the retries: the `acquireTimeout` in ms, or the `retryCount`. */
  budget: { acquireTimeout: number } | { retryCount: number };
}

/**
 * No quorum could be won for the resources within the retry budget (`retryCount`, `acquireTimeout`).
 * `reason` says why; `outcomes` gives each master's answer to the last attempt (the last one every
 * master answered, when `acquireTimeout` cut a round short), so that "busy" (another holder) and
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
    /** Why the acquisition failed. */
    readonly reason: LockAcquisitionReason = 'votes',
  ) {
    super(message);
  }

  /** Builds the error with its message from what happened. @internal */
  static of(failure: AcquisitionFailure): LockAcquisitionError {
    const { resources, attempts, outcomes, reason, budget } = failure;
    const n = outcomes.length;
    const why =
      reason === 'too-late'
        ? 'the quorum was won too late: no validity was left (raise `ttl` or lower latency)'
        : reason === 'fencing'
          ? 'the lock was won but no quorum of masters took its fencing token'
          : `${quorumOf(n)} of ${n} masters are needed; last attempt: ${describeOutcomes(outcomes, 'held by another holder')}`;
    const within =
      'acquireTimeout' in budget
        ? `within \`acquireTimeout\` (${budget.acquireTimeout} ms)`
        : `after ${attempts} attempt${attempts === 1 ? '' : 's'} (\`retryCount\` ${budget.retryCount})`;
    return new LockAcquisitionError(
      resources,
      attempts,
      outcomes,
      `Could not lock ${quote(resources)} ${within}: ${why}.`,
      reason,
    );
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
