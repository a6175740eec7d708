import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock, LockIssuer } from './lock.js';

interface LockFrame {
  readonly lock: Lock;
  readonly parent: LockFrame | undefined;
}

const storage = new AsyncLocalStorage<LockFrame>();

/** Runs `fn` with `lock` as the innermost lock of the current call chain. */
export function runWithLock<T>(lock: Lock, fn: () => T): T {
  return storage.run({ lock, parent: storage.getStore() }, fn);
}

/**
 * The live lock of this call chain that `issuer` granted on the Redis `key`, if any (used for
 * reentrancy). Matching on the key and the issuer, not the bare resource name, keeps two `Redlock`s
 * with other prefixes or other masters from mistaking each other's locks for their own.
 */
export function lockHeldInChain(issuer: LockIssuer, key: string): Lock | undefined {
  for (let frame = storage.getStore(); frame; frame = frame.parent) {
    const lock = frame.lock;
    if (lock.isIssuedBy(issuer) && lock.isHeld && lock.keys.includes(key)) return lock;
  }
  return undefined;
}

/**
 * The lock held by the current call chain: the innermost one, or the one covering `resource`.
 * Inside a `@Locked` method or a `using()` callback it gives the lock's `signal` and remaining
 * `validity`; elsewhere it returns `undefined`.
 *
 * @example
 * \@Locked('order:#id')
 * async pay(id: string) {
 *   const lock = currentLock()!;
 *   await gateway.charge(id, { signal: lock.signal });
 * }
 * @publicApi
 */
export function currentLock(resource?: string): Lock | undefined {
  const frame = storage.getStore();
  if (resource === undefined) return frame?.lock;
  for (let f = frame; f; f = f.parent) if (f.lock.resources.includes(resource)) return f.lock;
  return undefined;
}
