import { RedlockError } from './redlock.error.js';

/**
 * The lock can no longer be trusted to be held: renewal could not reach a quorum before the lock's
 * validity ended, a majority of masters no longer hold it, it lapsed without renewal, or it was
 * released at shutdown. It is the `reason` of `lock.signal`, and a `@Locked` call or `using()` whose
 * lock was lost rejects with it after the work settles.
 *
 * @example
 * lock.signal.addEventListener('abort', () => stopWriting());
 * @publicApi
 */
export class LockLostError extends RedlockError {
  constructor(
    /** The resources the lost lock covered (without the key prefix). */
    readonly resources: readonly string[],
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
