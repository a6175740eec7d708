// The portable form of a lock: plain data another process adopts (docs/portable-handles.md).

/** The shape of handle this version writes and reads. */
export const LOCK_HANDLE_VERSION = 1;

/**
 * A held lock as plain, JSON-safe data, to finish the work in another process: `lock.toHandle()`
 * writes it, `RedlockService.adopt(handle)` (or `Redlock.adopt`) rebuilds a `Lock` from it on the
 * same masters. It carries the lock's random value, which proves ownership on the masters: whoever
 * has the handle can extend and release the lock, so send it only where you would send a password
 * (never to a log). It says nothing about validity: the adopter measures its own.
 *
 * @example
 * const lock = await redlock.acquire(`order:${id}`, 30_000);
 * await queue.add('ship', { id, lock: lock.toHandle() }); // JSON-safe
 * // in the worker process:
 * const adopted = await redlock.adopt(job.data.lock, { autoExtend: true });
 * @publicApi
 */
export interface LockHandle {
  /** The shape of this object; an adopter refuses a version it does not know. Always 1 for now. */
  readonly version: 1;
  /** The resources the lock covers, without the key prefix. */
  readonly resources: readonly string[];
  /** The lock's `keyPrefix`: the adopter must use the same one (else it would look at other keys). */
  readonly keyPrefix: string;
  /** The holder's random value on the masters. */
  readonly value: string;
  /** The TTL the lock was last set with, ms: the adoption extends the lock by it (not a remaining validity). */
  readonly ttl: number;
  /** `'write'` (the exclusive lock, and a counting lock's permit) or `'read'`. */
  readonly mode: 'read' | 'write';
  /** A counting lock: its `limit`. */
  readonly limit?: number;
  /** A counting lock: the permit slot this holder has, 0 to `limit − 1`. */
  readonly slot?: number;
  /** With fencing: the token the lock was issued with (the adopted lock keeps it). */
  readonly fencingToken?: number;
}
