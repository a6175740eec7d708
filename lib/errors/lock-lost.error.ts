import { quote } from './quote.js';
import { RedlockError } from './redlock.error.js';

/**
 * Why a lock can no longer be trusted:
 * - `not-renewed`: auto-renewal could not reach a quorum before the lock's validity ended;
 * - `lapsed`: the lock was not renewed (no auto-renewal) and its validity ran out; also `adopt()` of a
 *   handle whose lock the masters no longer hold;
 * - `majority-lost`: a majority of masters answered that they no longer hold it;
 * - `released`: it had been released when it was used (for example extended);
 * - `shutdown`: `close()` (Nest `app.close()`) released it;
 * - `resigned`: a leadership's term ended because it resigned (or its campaign stopped);
 * - `not-leader`: a leadership's signal while it is not leading;
 * - `max-hold`: the lock had been held for its `maxHold`, so renewal stopped;
 * - `revoked`: an operator revoked it (`revoke()`, the CLI's `release --force`) and removed its keys.
 *
 * @example
 * if (lock.lostReason?.reason === 'shutdown') return; // the app is stopping, not a conflict
 * @publicApi
 */
export type LockLostReason =
  | 'not-renewed'
  | 'lapsed'
  | 'majority-lost'
  | 'released'
  | 'shutdown'
  | 'resigned'
  | 'not-leader'
  | 'max-hold'
  | 'revoked';

/**
 * The lock can no longer be trusted to be held; `reason` says why. It is the `reason` of
 * `lock.signal`, and a `@Locked` call or `using()` whose lock was lost rejects with it after the
 * work settles.
 *
 * @example
 * lock.signal.addEventListener('abort', () => stopWriting());
 * @publicApi
 */
export class LockLostError extends RedlockError {
  constructor(
    /** The resources the lost lock covered (without the key prefix). */
    readonly resources: readonly string[],
    /** Why the lock was lost. */
    readonly reason: LockLostReason,
    /** Details after the standard sentence (for example how many masters still hold it). */
    detail?: string,
    options?: ErrorOptions,
  ) {
    super(LockLostError.messageOf(resources, reason, detail), options);
  }

  /** Auto-renewal did not get through before the validity ended. */
  static notRenewed(resources: readonly string[]): LockLostError {
    return new LockLostError(resources, 'not-renewed');
  }

  /** The validity ran out without renewal, or a lapsed lock was used. */
  static lapsed(resources: readonly string[]): LockLostError {
    return new LockLostError(resources, 'lapsed');
  }

  /** `refused` of `masters` masters answered that they no longer hold the lock. */
  static majorityLost(resources: readonly string[], refused: number, masters: number): LockLostError {
    return new LockLostError(resources, 'majority-lost', `${refused} of ${masters} masters no longer hold it`);
  }

  /** The lock had been released. */
  static released(resources: readonly string[]): LockLostError {
    return new LockLostError(resources, 'released');
  }

  /** `close()` released the lock. */
  static shutdown(resources: readonly string[]): LockLostError {
    return new LockLostError(resources, 'shutdown');
  }

  /** A leadership was resigned. */
  static resigned(resources: readonly string[]): LockLostError {
    return new LockLostError(resources, 'resigned');
  }

  /** A leadership is not leading; `why` says since when or why. */
  static notLeader(resources: readonly string[], why: string): LockLostError {
    return new LockLostError(resources, 'not-leader', why);
  }

  /** The lock had been held for `maxHold` ms: renewal stopped on purpose. */
  static maxHold(resources: readonly string[], maxHold: number): LockLostError {
    return new LockLostError(resources, 'max-hold', `${maxHold} ms`);
  }

  /** An operator revoked the lock (`revoke()`), giving `why` (the revocation's `reason`), if any. */
  static revoked(resources: readonly string[], why?: string): LockLostError {
    return new LockLostError(resources, 'revoked', why || undefined);
  }

  private static messageOf(resources: readonly string[], reason: LockLostReason, detail: string | undefined): string {
    const on = `The lock on ${quote(resources)}`;
    switch (reason) {
      case 'not-renewed':
        return `${on} was not renewed before its validity ended${detail ? ` (${detail})` : ''}; mutual exclusion is no longer guaranteed.`;
      case 'lapsed':
        return `${on} lapsed: its validity ended without renewal${detail ? ` (${detail})` : ''}. A lapsed lock is never revived; acquire it again.`;
      case 'majority-lost':
        return `${on} was lost: ${detail ?? 'a majority of masters no longer hold it'}.`;
      case 'released':
        return `${on} was already released${detail ? ` (${detail})` : ''}; acquire it again.`;
      case 'shutdown':
        return `${on} was released because the application is shutting down${detail ? ` (${detail})` : ''}.`;
      case 'resigned':
        return `Leadership of ${quote(resources)} was resigned${detail ? ` (${detail})` : ''}.`;
      case 'not-leader':
        return `Not the leader of ${quote(resources)}${detail ? `: ${detail}` : ''}.`;
      case 'revoked':
        return `${on} was revoked: its keys were removed from the masters${detail ? ` (${detail})` : ''}; mutual exclusion is no longer guaranteed.`;
      case 'max-hold':
        return `${on} was held for its \`maxHold\`${detail ? ` (${detail})` : ''}: renewal stopped, and mutual exclusion is no longer guaranteed.`;
    }
  }
}
