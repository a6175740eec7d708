import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { RedlockError } from '../errors/redlock.error.js';
import type { Lock } from '../lock/lock.js';
import type { Master } from '../backend/master.js';
import { companionKeyOf } from '../backend/cluster/cluster-keys.js';

/**
 * `'write'` (the default) is the exclusive lock; `'read'` is shared with other readers and excludes
 * writers. See docs/read-write-and-counting-locks.md.
 *
 * @example
 * await redlock.using('catalog', 5_000, render, { mode: 'read' });
 * @publicApi
 */
export type LockMode = 'read' | 'write';

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

/** What a lock is, beyond the plain mutex. */
export type SharedShape = { readonly kind: 'read' } | { readonly kind: 'permit'; readonly limit: number; slot: number };

/** The shape a call asks for: undefined = the mutex (write). */
export type RequestedShape = SharedShape | undefined;

/**
 * Refuses malformed `mode` / `limit` (naming the option) and returns the shape asked for.
 * Nothing is sent to a master before this passes.
 */
export function checkLockMode(options: LockModeOptions | undefined, resourceCount = 1): RequestedShape {
  if (options === undefined || options === null || typeof options !== 'object') return undefined;
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
    return { kind: 'permit', limit, slot: -1 };
  }
  return mode === 'read' ? { kind: 'read' } : undefined;
}

// On a cluster node the companion keys are in the lock key's slot (`companionKeyOf`, docs/cluster.md).
/** Redis key of permit slot `i` of a counting lock on `key`, on `master`. @internal */
export const permitKeyOf = (key: string, i: number, master: Pick<Master, 'cluster'> = {}): string =>
  companionKeyOf(master, key, `:permit:${i}`);
/** Redis key of the limit record of a counting lock on `key`, on `master`. @internal */
export const limitKeyOf = (key: string, master: Pick<Master, 'cluster'> = {}): string =>
  companionKeyOf(master, key, ':limit');
/** Redis key of the waiting-writer intent on `key` (it holds off new readers), on `master`. @internal */
export const intentKeyOf = (key: string, master: Pick<Master, 'cluster'> = {}): string =>
  companionKeyOf(master, key, ':writer-waiting');

const shapes = new WeakMap<Lock, SharedShape>();

/** Records what kind of shared lock `lock` is. @internal */
export function setShape(lock: Lock, shape: SharedShape): void {
  shapes.set(lock, shape);
}

/** The shared shape of `lock`, or undefined for the mutex. @internal */
export function shapeOf(lock: Lock): SharedShape | undefined {
  return shapes.get(lock);
}

/**
 * The mode of a lock: `'read'`, `'write'` or, for a counting lock, its `limit`.
 *
 * @example
 * const { mode, limit } = lockModeOf(currentLock()!); // { mode: 'write', limit: 3 }
 * @publicApi
 */
export function lockModeOf(lock: Lock): { mode: LockMode; limit?: number } {
  const shape = shapes.get(lock);
  if (shape?.kind === 'read') return { mode: 'read' };
  if (shape?.kind === 'permit') return { mode: 'write', limit: shape.limit };
  return { mode: 'write' };
}

/**
 * Reentrancy: does `held`, a lock of the enclosing call chain on the same resource, cover the
 * request? A write lock covers reads and writes; a read lock covers reads; a permit covers a request
 * of the same `limit`. A read lock cannot be upgraded in place (the writer would wait for its own
 * reader), and a different `limit` is the mismatch every holder is refused: both throw.
 */
export function coversRequest(held: Lock, requested: RequestedShape, resource: string): boolean {
  const shape = shapes.get(held);
  if (requested?.kind === 'permit' || shape?.kind === 'permit') {
    const heldLimit = shape?.kind === 'permit' ? shape.limit : undefined;
    const wanted = requested?.kind === 'permit' ? requested.limit : undefined;
    if (heldLimit === wanted) return true;
    throw new RedlockConfigError(
      'limit',
      `\`limit\` ${wanted ?? '(none)'} differs from the limit ${heldLimit ?? '(none: an exclusive lock)'} this call chain already holds ${JSON.stringify(resource)} with.`,
    );
  }
  if (shape?.kind === 'read' && requested?.kind !== 'read') {
    throw new RedlockError(
      `Cannot take a write lock on ${JSON.stringify(resource)} inside a read lock on it in the same call chain: the writer would wait for its own reader. Take the write lock in the outer call.`,
    );
  }
  return true;
}
