import type { MasterOutcome } from '../core/votes.js';
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
}
