import { RedlockConfigError } from '../errors/redlock-config.error.js';

/**
 * How a renewed hold behaves around busy locks and how long it may last: the options shared by
 * `@Locked`, `using()` and `acquire()` (with `autoExtend` for `maxHold`).
 *
 * @example
 * \@Cron('* * * * * *')
 * \@Locked('nightly-report', { onBusy: 'skip', minHold: 900, maxHold: 60_000 })
 * async report() { await this.reports.build(); }
 * @publicApi
 */
export interface HoldOptions {
  /**
   * What to do when another holder has the lock: `'wait'` (retry as configured) or `'skip'` (do not
   * run; `using()` and `@Locked` resolve to `undefined`, `acquire()` to `undefined`). With `'skip'`,
   * `retryCount` defaults to 0, but a split vote (some master granted this call, no quorum: a
   * simultaneous contender) is tried again after a few ms before skipping. When Redis, not another
   * holder, stood in the way (`busy` false), the call still rejects with `LockAcquisitionError`. @default 'wait'
   */
  onBusy?: 'wait' | 'skip';
  /**
   * Keep the lock until at least this many ms after it was acquired, even when the work finishes
   * sooner: the keys are then left to lapse on the masters at that moment instead of being deleted.
   * Must not exceed the TTL (the keys, not a timer of this process, carry it). @default 0
   */
  minHold?: number;
  /**
   * Stop renewing once the lock has been held this long: the lock's `signal` aborts with
   * `LockLostError` at that moment (before the keys lapse), and `using()` / `@Locked` reject with
   * `LockLostError` after the work settles. `acquire()` accepts it only with `autoExtend`.
   */
  maxHold?: number;
}

/** The hold options in force for one call, checked. */
export interface ResolvedHoldOptions {
  readonly skip: boolean;
  readonly minHold: number;
  readonly maxHold: number | undefined;
}

const refuse = (option: string, rule: string, value: unknown): never => {
  const shown =
    typeof value === 'string'
      ? JSON.stringify(value)
      : typeof value === 'number' || value == null
        ? String(value)
        : typeof value;
  throw new RedlockConfigError(option, `\`${option}\` ${rule}; got ${shown}.`);
};

/**
 * Refuses malformed `onBusy` / `minHold` / `maxHold` (RedlockConfigError naming the option) before
 * anything is sent. `ttl` is the lock's TTL when known (a `minHold` above it is refused);
 * `renewed` is false for a plain `acquire()` without `autoExtend`, which cannot honour `maxHold`.
 */
export function resolveHoldOptions(
  options: HoldOptions | undefined,
  ttl: number | undefined,
  renewed = true,
): ResolvedHoldOptions {
  const { onBusy, minHold, maxHold } = options ?? {};
  if (onBusy !== undefined && onBusy !== 'wait' && onBusy !== 'skip')
    refuse('onBusy', "must be 'wait' or 'skip'", onBusy);
  if (minHold !== undefined && (typeof minHold !== 'number' || !Number.isSafeInteger(minHold) || minHold < 0)) {
    refuse('minHold', 'must be a whole number of milliseconds >= 0', minHold);
  }
  if (maxHold !== undefined && (typeof maxHold !== 'number' || !Number.isSafeInteger(maxHold) || maxHold <= 0)) {
    refuse('maxHold', 'must be a positive whole number of milliseconds', maxHold);
  }
  if (minHold !== undefined && ttl !== undefined && minHold > ttl) {
    refuse(
      'minHold',
      `must not exceed the lock's \`ttl\` (${ttl} ms): the keys themselves carry the hold after the work ends, so raise \`ttl\` to at least \`minHold\``,
      minHold,
    );
  }
  if (maxHold !== undefined && minHold !== undefined && maxHold < minHold) {
    refuse('maxHold', `must not be shorter than \`minHold\` (${minHold} ms)`, maxHold);
  }
  if (maxHold !== undefined && !renewed)
    refuse('maxHold', 'bounds renewal, so `acquire()` accepts it only with `autoExtend: true`', maxHold);
  return { skip: onBusy === 'skip', minHold: minHold ?? 0, maxHold };
}
