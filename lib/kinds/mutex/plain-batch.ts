import type { Master } from '../../backend/master.js';
import { coalesceWrites, sendBatched, type BatchScript } from '../../backend/write-batcher.js';

// The uncontended mutex on a plain master: its `SET NX PX` and its release ride with the others of
// their loop turn in one script call (plain-batch.lua). Callers that run alone send their own
// commands, as before.

/** The batch script of plain acquires ('a') and releases ('r'): plain-batch.lua. */
const PLAIN_BATCH: BatchScript = {
  alone: (m, key, op, value, n) =>
    op === 'a' ? m.client.set(key, value, 'PX', n, 'NX') : m.scripts.quorumLockPlainRelease(key, value, n),
  together: (m, keys, args) => m.scripts.quorumLockPlainBatch(keys.length, ...keys, ...args),
};

/**
 * True when the mutex's one-key calls on `master` may be batched: a plain master, where the release
 * script names the key's queue itself (a cluster node needs every key declared, in one slot).
 */
export function batchesOn(master: Master): boolean {
  return !master.cluster && !master.client.options?.keyPrefix;
}

/**
 * `SET key value NX PX ttl`: 'OK' or null alone, 1 or 0 in a batch (read it with {@link isSet}). On a
 * plain master it is batched with the plain calls of this loop turn; elsewhere it is written with the
 * turn's other commands.
 *
 * @example
 * const granted = isSet(await plainAcquire(master, 'lock:orders', value, '10000'));
 */
export function plainAcquire(master: Master, key: string, value: string, ttl: string): Promise<unknown> {
  if (batchesOn(master)) return sendBatched(master, PLAIN_BATCH, key, 'a', value, ttl);
  coalesceWrites(master);
  return master.client.set(key, value, 'PX', ttl, 'NX');
}

/** True for a reply of {@link plainAcquire} that took the key. */
export const isSet = (reply: unknown): boolean => reply === 'OK' || reply === 1;

/**
 * The plain release (plain-release.lua) on a plain master ({@link batchesOn}), batched with the plain
 * calls of this loop turn: 2 handed on, 1 deleted, 0 not held.
 *
 * @example
 * await plainRelease(master, 'lock:orders', lock.value, String(commandTimeout));
 */
export function plainRelease(master: Master, key: string, value: string, reserve: string): Promise<number> {
  return sendBatched(master, PLAIN_BATCH, key, 'r', value, reserve) as Promise<number>;
}
