/**
 * Real `redis-server` masters for a spec file (no mocks): {@link useMasters} starts them in
 * `beforeAll` on free loopback ports and stops them, and everything opened on them, in `afterAll`.
 */
import { afterAll, beforeAll } from '@jest/globals';
import type { Redis } from 'ioredis';
import { waitFor } from './wait-for.js';
import { Redlock, type RedlockOptions } from '../../lib/index.js';
import { startRedisMasters, type RedisMaster, type RedisMasters } from '../../tools/redis-masters.js';
import { inspector } from './inspector.js';

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

/** Pauses (SIGSTOP) `masters`, runs `fn`, and always resumes them, also when `fn` throws. */
export async function whilePaused<T>(masters: readonly RedisMaster[], fn: () => Promise<T>): Promise<T> {
  try {
    for (const m of masters) m.pause();
    return await fn();
  } finally {
    for (const m of masters) m.resume();
  }
}

/**
 * Waits until every master of `set` has been up longer than `ms` (INFO's uptime is whole seconds,
 * counted one short): a client that keeps the restart guard on then counts them for locks of that TTL.
 *
 * @example
 * expect(await mastersOlderThan(set, 2_000 * 1.01 + 2)).toBe(true);
 */
export async function mastersOlderThan(set: { clients: readonly Redis[] }, ms: number): Promise<boolean> {
  const guard = Math.ceil(ms / 1_000) + 1;
  const uptime = async (c: Redis): Promise<number> =>
    Number(/uptime_in_seconds:(\d+)/.exec(await c.info('server'))?.[1]);
  return waitFor(async () => (await Promise.all(set.clients.map(uptime))).every((u) => u >= guard), 10_000, 100);
}

/** How many commands `client`'s server refused with NOSCRIPT since its start (INFO errorstats). */
export async function noScriptErrors(client: Redis): Promise<number> {
  const info = await client.info('errorstats');
  return Number(/^errorstat_NOSCRIPT:count=(\d+)/m.exec(info)?.[1] ?? 0);
}
