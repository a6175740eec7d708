import { describeOutcomes, type MasterOutcome } from './outcomes.js';
import { quote } from './quote.js';
import { RedlockError } from './redlock.error.js';

/**
 * A manual `lock.extend()` could not reach a quorum (masters erred or timed out) although the lock
 * was still valid: it stays valid until its old deadline. When the masters say the lock is gone,
 * `extend()` rejects with `LockLostError` instead.
 *
 * @example
 * try { await lock.extend(); } catch (e) { if (e instanceof LockExtensionError) retryLater(); }
 * @publicApi
 */
export class LockExtensionError extends RedlockError {
  constructor(
    readonly resources: readonly string[],
    /** Each master's answer to the extension, in `nodes` order. */
    readonly outcomes: readonly MasterOutcome[],
    message: string,
  ) {
    super(message);
  }

  /** Builds the error with its message; `validity` is what the lock has left, in ms. @internal */
  static of(resources: readonly string[], outcomes: readonly MasterOutcome[], validity: number): LockExtensionError {
    return new LockExtensionError(
      resources,
      outcomes,
      `Could not extend the lock on ${quote(resources)}: ${describeOutcomes(outcomes, 'no longer holding it')}. It stays valid for ${Math.round(validity)} ms.`,
    );
  }
}
