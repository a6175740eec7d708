/**
 * Shared helpers for the end-to-end tests of the framework-free core against real `redis-server`
 * masters (no mocks). Each spec file starts its own masters in `beforeAll` with {@link useMasters}
 * and gets everything it opened closed in `afterAll`.
 */
import { afterAll, beforeAll, expect } from '@jest/globals';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock, type RedlockOptions } from '../../lib/index.js';
import { startRedisMasters, type RedisMaster, type RedisMasters } from '../../tools/redis-masters.js';

export { sleep };

/** Milliseconds on the monotonic clock the library uses. */
export const now = (): number => performance.now();

/** The drift allowance of the design: `ttl × driftFactor + 2 ms`. */
export const driftOf = (ttl: number, driftFactor = 0.01): number => ttl * driftFactor + 2;

/** Floor(N/2)+1. */
export const quorumOf = (n: number): number => Math.floor(n / 2) + 1;

let unique = 0;
/** A resource name no other test in this process uses, so tests sharing masters never collide. */
export function resourceName(label: string): string {
  unique += 1;
  return `${label}:${process.pid}:${unique}:${Math.random().toString(36).slice(2, 8)}`;
}

/** A set of running masters with one inspection client per master, for reading keys directly. */
export interface MasterSet {
  readonly redis: RedisMasters;
  readonly masters: readonly RedisMaster[];
  readonly urls: string[];
  /** One ioredis client per master (same order). Never send to a paused master. */
  readonly clients: Redis[];
  /** Creates a connected `Redlock` on these masters (or on `nodes`); it is closed in `afterAll`. */
  redlock(options?: Partial<RedlockOptions>): Promise<Redlock>;
}

/**
 * Starts `count` masters in `beforeAll` and stops them in `afterAll`, closing every Redlock made
 * with `set.redlock()` and every inspection client first. Fields are filled in by `beforeAll`.
 */
export function useMasters(count: number): MasterSet {
  const redlocks: Redlock[] = [];
  const set = {
    redis: undefined as unknown as RedisMasters,
    masters: [] as RedisMaster[],
    urls: [] as string[],
    clients: [] as Redis[],
    async redlock(options: Partial<RedlockOptions> = {}): Promise<Redlock> {
      // The masters were just started, so the restart guard (on by default) would distrust them for
      // the largest TTL; tests of the guard itself turn it back on.
      const redlock = new Redlock({ nodes: set.urls, restartGuard: false, ...options });
      redlocks.push(redlock);
      await redlock.connect();
      return redlock;
    },
  };
  beforeAll(async () => {
    set.redis = await startRedisMasters(count);
    set.masters = [...set.redis.masters];
    set.urls = set.redis.urls;
    set.clients = set.urls.map((url) => inspector(url));
    await Promise.all(set.clients.map((c) => c.ping()));
  });
  afterAll(async () => {
    for (const m of set.masters) {
      try {
        m.resume(); // never leave a SIGSTOPped server behind
      } catch {
        /* not running (killed) */
      }
    }
    await Promise.all(redlocks.map((r) => r.close()));
    for (const c of set.clients) if (c.status !== 'end') c.disconnect();
    await set.redis?.stop();
  });
  return set;
}

/**
 * An inspection client: bounded commands so a mistake cannot hang the suite, and a short
 * `disconnectTimeout` so that disconnecting from a killed master leaves no 2 s timer behind.
 */
export function inspector(url: string): Redis {
  return new Redis(url, { lazyConnect: false, commandTimeout: 2_000, maxRetriesPerRequest: 1, disconnectTimeout: 50 });
}

/** `GET key` on each client. */
export function valuesOn(clients: readonly Redis[], key: string): Promise<(string | null)[]> {
  return Promise.all(clients.map((c) => c.get(key)));
}

/** `PTTL key` on each client (-2: no key, -1: no expiry). */
export function pttlsOn(clients: readonly Redis[], key: string): Promise<number[]> {
  return Promise.all(clients.map((c) => c.pttl(key)));
}

/**
 * `DBSIZE` on each client. Release and extend resolve once a quorum confirmed; the commands to the
 * other masters are already sent but may land a moment later, so this first waits up to `settleMs`
 * for every database to be empty.
 */
export async function dbsizesOn(clients: readonly Redis[], settleMs = 300): Promise<number[]> {
  const sizes = () => Promise.all(clients.map((c) => c.dbsize()));
  await waitFor(async () => (await sizes()).every((n) => n === 0), settleMs, 10);
  return sizes();
}

/**
 * Asserts that `key` holds `value` with a live TTL on every client. `acquire()` returns once a quorum
 * granted, so the last masters may answer a moment later (e.g. after an EVALSHA → NOSCRIPT → EVAL
 * round trip): wait up to `settleMs` for all of them first.
 */
export async function expectHeldOnAll(clients: readonly Redis[], key: string, value: string, settleMs = 500): Promise<void> {
  await waitFor(async () => (await valuesOn(clients, key)).every((v) => v === value), settleMs, 10);
  expect(await valuesOn(clients, key)).toEqual(clients.map(() => value));
  for (const pttl of await pttlsOn(clients, key)) expect(pttl).toBeGreaterThan(0);
}

/**
 * Asserts that `key` exists on none of the clients. Release resolves once a quorum deleted the key;
 * the deletes sent to the other masters may land a moment later: wait up to `settleMs` for them.
 */
export async function expectAbsentOnAll(clients: readonly Redis[], key: string, settleMs = 300): Promise<void> {
  await waitFor(async () => (await valuesOn(clients, key)).every((v) => v === null), settleMs, 10);
  expect(await valuesOn(clients, key)).toEqual(clients.map(() => null));
}

/** Polls `check` until it returns true or `timeoutMs` passes; returns the last result. */
export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, intervalMs = 20): Promise<boolean> {
  const deadline = now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (now() >= deadline) return false;
    await sleep(intervalMs);
  }
}

/** Polls until `key` is gone from every client (up to `timeoutMs`), then asserts it. */
export async function expectEventuallyAbsent(clients: readonly Redis[], key: string, timeoutMs = 1_000): Promise<void> {
  await expectAbsentOnAll(clients, key, timeoutMs);
}

/** Pauses (SIGSTOP) `masters`, runs `fn`, and always resumes them, also when `fn` throws. */
export async function whilePaused<T>(masters: readonly RedisMaster[], fn: () => Promise<T>): Promise<T> {
  try {
    for (const m of masters) m.pause();
    return await fn();
  } finally {
    for (const m of masters) m.resume();
  }
}

/** Awaits a promise that must reject and returns what it rejected with (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

/** The time a promise takes to settle, and how it settled. */
export async function timed<T>(promise: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const start = now();
  try {
    const value = await promise;
    return { ms: now() - start, value };
  } catch (error) {
    return { ms: now() - start, error };
  }
}

/** Resolves with the signal's reason and the monotonic time at which it aborted. */
export function abortOf(signal: AbortSignal): Promise<{ at: number; reason: unknown }> {
  if (signal.aborted) return Promise.resolve({ at: now(), reason: signal.reason });
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve({ at: now(), reason: signal.reason }), { once: true }));
}
