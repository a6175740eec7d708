import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { Lock } from '../lock/lock.js';
import { PERMIT, permitRequest } from './counting/counting-kind.js';
import { modeOf, type KindRequest, type LockKind, type LockMode } from './lock-kind.js';
import { MUTEX, MUTEX_REQUEST } from './mutex/mutex-kind.js';
import { READ, READ_REQUEST } from './read-write/read-kind.js';

export type { LockMode };

// The kind a call asks for, from its options: the one place that chooses among the kinds.

/**
 * The kind of lock a call takes: exclusive (default), shared for reading, or one of `limit` permits.
 *
 * @example
 * await redlock.acquire(`export:${tenant}`, 60_000, { limit: 3 }); // at most 3 exports per tenant
 * @publicApi
 */
export interface LockModeOptions {
  /**
   * `'read'`: shared with other readers, never beside a writer. `'write'`: exclusive, the same
   * lock (same keys) as a call without `mode`. Waiting writers hold off new readers. @default 'write'
   */
  mode?: LockMode;
  /**
   * A counting lock: at most `limit` holders at once, each with its own `Lock`. Every holder of a
   * resource must use the same `limit`; another value is refused while the resource is held.
   * Not combined with `mode: 'read'`, nor with several resources in one call.
   */
  limit?: number;
}

/**
 * Refuses malformed `mode` / `limit` (naming the option) and returns the kind asked for: the mutex
 * by default. Nothing is sent to a master before this passes.
 */
export function checkLockMode(options: LockModeOptions | undefined, resourceCount = 1): KindRequest {
  if (options === undefined || options === null || typeof options !== 'object') return MUTEX_REQUEST;
  const { mode, limit } = options;
  if (mode !== undefined && mode !== 'read' && mode !== 'write') {
    throw new RedlockConfigError(
      'mode',
      `\`mode\` must be 'read' or 'write'; got ${typeof mode === 'string' ? JSON.stringify(mode) : String(mode)}.`,
    );
  }
  if (limit !== undefined) {
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
      throw new RedlockConfigError(
        'limit',
        `\`limit\` must be a positive whole number (the most holders at once); got ${typeof limit === 'string' ? JSON.stringify(limit) : String(limit)}.`,
      );
    }
    if (mode === 'read') {
      throw new RedlockConfigError(
        'mode',
        "`mode: 'read'` cannot be combined with `limit`: a counting lock has no readers and writers (use one or the other).",
      );
    }
    if (resourceCount > 1) {
      throw new RedlockConfigError('limit', '`limit` applies to one resource per call; lock the resources one by one.');
    }
    return permitRequest(limit);
  }
  return mode === 'read' ? READ_REQUEST : MUTEX_REQUEST;
}

/**
 * The mode of a lock: `'read'`, `'write'` or, for a counting lock, its `limit`.
 *
 * @example
 * const { mode, limit } = lockModeOf(currentLock()!); // { mode: 'write', limit: 3 }
 * @publicApi
 */
export function lockModeOf(lock: Lock): { mode: LockMode; limit?: number } {
  const { mode, limit } = modeOf(lock);
  return limit === undefined ? { mode } : { mode, limit };
}

/**
 * Every kind, in the order `inspect()` asks their readers (the first to name an owner wins). A new
 * kind adds itself here and its option to `LockModeOptions` / `checkLockMode` above.
 */
export const KINDS: readonly LockKind[] = [MUTEX, READ, PERMIT];
