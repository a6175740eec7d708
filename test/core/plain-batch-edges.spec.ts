import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { createClient, type RedisClientType } from 'redis';
import type { Master } from '../../lib/backend/master.js';
import { coalesceWrites, MAX_BATCH_CALLS } from '../../lib/backend/write-batcher.js';
import { plainAcquire, plainRelease } from '../../lib/kinds/mutex/plain-batch.js';
import { defineScripts } from '../../lib/lua/scripts.js';
import { Redlock, type Lock } from '../../lib/index.js';
import { startRedisClusters, type RedisClusters } from '../../tools/redis-clusters.js';
import {
  expectAbsentOnAll,
  expectEventuallyAbsent,
  redlockOnClusters,
  resourceName,
  useMasters,
  waitFor,
} from '../support/index.js';

/** Top-level script calls and plain SETs one master counted since its last RESETSTAT. */
async function calls(client: Redis): Promise<{ scripts: number; sets: number }> {
  const info = await client.info('commandstats');
  let scripts = 0;
  for (const m of info.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) scripts += Number(m[1]);
  return { scripts, sets: Number(/^cmdstat_set:calls=(\d+)/m.exec(info)?.[1] ?? 0) };
}

/** Collects the process's unhandled rejections while a test runs. */
function unhandledRejections(): unknown[] {
  const seen: unknown[] = [];
  const listener = (reason: unknown): void => void seen.push(reason);
  beforeEach(() => {
    seen.length = 0;
    process.on('unhandledRejection', listener);
  });
  afterEach(() => void process.off('unhandledRejection', listener));
  return seen;
}

/**
 * The batched plain path (plain-batch.lua, lib/backend/write-batcher.ts) where it meets the rest:
 * a flushed script cache, close(), clients shared by two instances, commands that do not batch, and
 * backends that must not batch.
 */
describe('plain-call batches at the edges (3 masters)', () => {
  const set = useMasters(3);
  const unhandled = unhandledRejections();

  it('a batch after SCRIPT FLUSH on every master still runs (the client falls back to EVAL), and every lock is taken and freed', async () => {
    const redlock = await set.redlock({ retryCount: 0 });
    // Warm up: the batch script is loaded on every connection.
    const warm = await Promise.all([1, 2, 3, 4].map((i) => redlock.acquire(resourceName(`warm-${i}`), 10_000)));
    await Promise.all(warm.map((l) => l.release()));
    await Promise.all(set.clients.map((c) => c.script('FLUSH')));
    await Promise.all(set.clients.map((c) => c.config('RESETSTAT')));
    const resources = Array.from({ length: 16 }, (_, i) => resourceName(`flushed-${i}`));
    const locks = await Promise.all(resources.map((r) => redlock.acquire(r, 10_000)));
    await Promise.all(locks.map((lock) => lock.release()));
    for (const client of set.clients) {
      // Batched: a few script calls (a refused EVALSHA and its EVAL count twice), not 16 and 16.
      expect((await calls(client)).scripts).toBeLessThanOrEqual(8);
    }
    for (const r of resources) await expectAbsentOnAll(set.clients, `lock:${r}`);
  }, 30_000);

  it('close() in the same loop turn as 16 acquisitions and 8 releases: it resolves, no rejection goes unhandled, nothing is left on the masters', async () => {
    const redlock = new Redlock({ nodes: set.urls, restartGuard: false, retryCount: 0 });
    await redlock.connect();
    const held = await Promise.all(
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => redlock.acquire(resourceName(`held-${i}`), 10_000)),
    );
    const resources = Array.from({ length: 16 }, (_, i) => resourceName(`closing-${i}`));
    // One synchronous turn: the acquisitions and releases are deferred when close() starts.
    const acquiring = resources.map((r) => redlock.acquire(r, 10_000));
    const releasing = held.map((lock) => lock.release());
    const closed = redlock.close();
    const settled = await Promise.allSettled([...acquiring, ...releasing]);
    await closed;
    for (const s of settled.slice(0, acquiring.length)) expect(s.status).toBe('rejected');
    for (const s of settled.slice(acquiring.length)) expect(s.status).toBe('fulfilled');
    for (const r of resources) await expectEventuallyAbsent(set.clients, `lock:${r}`, 5_000);
    for (const lock of held) await expectEventuallyAbsent(set.clients, lock.keys[0], 5_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
  }, 30_000);

  it('close() while a paused master holds deferred calls on its busy connection resolves, and the calls are answered in call order once it resumes', async () => {
    const commandTimeout = 500;
    const redlock = new Redlock({ nodes: set.urls, restartGuard: false, retryCount: 0, commandTimeout });
    await redlock.connect();
    const paused = set.masters[2];
    const resources = Array.from({ length: 24 }, (_, i) => resourceName(`paused-${i}`));
    paused.pause();
    try {
      // 16 acquisitions leave their commands unanswered on the paused master: its connection is busy.
      const first = await Promise.all(resources.slice(0, 16).map((r) => redlock.acquire(r, 10_000)));
      // The next turn's calls are held on it (busy) while close() releases every lock.
      const more = resources.slice(16).map((r) => redlock.acquire(r, 10_000));
      const closed = redlock.close();
      const settled = await Promise.allSettled(more);
      await closed;
      expect(first).toHaveLength(16);
      for (const s of settled) expect(['fulfilled', 'rejected']).toContain(s.status);
    } finally {
      paused.resume();
    }
    const live = set.clients.slice(0, 2);
    for (const r of resources) await expectAbsentOnAll(live, `lock:${r}`);
    // The paused master ran what reached it in call order: each SET before its release.
    for (const r of resources) await expectEventuallyAbsent([set.clients[2]], `lock:${r}`, 5_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
  }, 30_000);

  it('two Redlock instances on the same app-supplied clients batch on one connection: each key goes to one instance, and all are freed', async () => {
    const shared = set.urls.map((url) => new Redis(url, { lazyConnect: true }));
    await Promise.all(shared.map((c) => c.connect()));
    const a = new Redlock({ nodes: shared, restartGuard: false, retryCount: 0 });
    const b = new Redlock({ nodes: shared, restartGuard: false, retryCount: 0 });
    try {
      await Promise.all([a.connect(), b.connect()]);
      const resources = Array.from({ length: 12 }, (_, i) => resourceName(`shared-${i}`));
      await Promise.all(set.clients.map((c) => c.config('RESETSTAT')));
      const results = await Promise.allSettled(resources.flatMap((r) => [a.acquire(r, 10_000), b.acquire(r, 10_000)]));
      for (let i = 0; i < resources.length; i++) {
        const won = [results[2 * i], results[2 * i + 1]].filter((s) => s.status === 'fulfilled');
        expect(won).toHaveLength(1);
        const lock = won[0].value;
        for (const c of set.clients) expect(await c.get(`lock:${resources[i]}`)).toBe(lock.value);
      }
      for (const client of set.clients) expect((await calls(client)).scripts).toBeLessThanOrEqual(8);
      const locks = results.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      await Promise.all(locks.map((l) => l.release()));
      for (const r of resources) await expectAbsentOnAll(set.clients, `lock:${r}`);
    } finally {
      await Promise.all([a.close(), b.close()]);
      for (const c of shared) c.disconnect();
    }
  }, 30_000);

  it("an app's quit() in the same turn as deferred calls on its client: every call settles, and a rejected one left nothing", async () => {
    const client = new Redis(set.urls[0]);
    await client.ping();
    const master = { client, scripts: defineScripts(client), label: 'm0' } as unknown as Master;
    const keys = [0, 1, 2].map((i) => `lock:${resourceName(`quit-${i}`)}`);
    const deferred = keys.map((key) => plainAcquire(master, key, 'v', '10000'));
    const quit = client.quit();
    const settled = await Promise.allSettled(deferred);
    await quit.catch(() => undefined);
    for (let i = 0; i < keys.length; i++) {
      const held = await set.clients[0].get(keys[i]);
      expect(held).toBe(settled[i].status === 'fulfilled' ? 'v' : null);
    }
    await set.clients[0].del(...keys);
    expect(unhandled).toEqual([]);
  }, 30_000);

  it('a release that hands the key to a queued waiter works inside a batch: the waiter of another instance gets the lock', async () => {
    const holder = await set.redlock({ retryCount: 0 });
    const waiter = await set.redlock({ retryCount: 200, retryDelay: 50 });
    const [k1, k2] = [resourceName('handed'), resourceName('beside')];
    const [l1, l2] = await Promise.all([holder.acquire(k1, 10_000), holder.acquire(k2, 10_000)]);
    const waiting = waiter.acquire(k1, 10_000);
    await waitFor(async () => {
      const queued = await Promise.all(set.clients.map((c) => c.zcard(`lock:${k1}:handoff:queue`)));
      return queued.every((n) => n > 0);
    }, 10_000);
    // One turn: both releases leave as one script call per master.
    await Promise.all([l1.release(), l2.release()]);
    const handed = await waiting;
    for (const c of set.clients) expect(await c.get(`lock:${k1}`)).toBe(handed.value);
    await handed.release();
    await expectAbsentOnAll(set.clients, `lock:${k1}`);
    await expectAbsentOnAll(set.clients, `lock:${k2}`);
  }, 30_000);

  it('a command that does not batch, made after deferred calls in the same turn, runs after them (call order on the connection)', async () => {
    const client = set.clients[0];
    const master = { client, scripts: defineScripts(client), label: 'm0' } as unknown as Master;
    const key = `lock:${resourceName('mixed-order')}`;
    const acquired = plainAcquire(master, key, 'v1', '10000');
    const extended = plainAcquire(master, `${key}:other`, 'v2', '10000');
    // As vote-round.ts does for a command that does not batch.
    coalesceWrites(master);
    const extend = master.scripts.quorumLockExtend(1, key, 'v1', '60000');
    const released = plainRelease(master, key, 'v1', '0');
    expect(await Promise.all([acquired, extended, extend, released])).toEqual([1, 1, 1, 1]);
    expect(await client.exists(key)).toBe(0);
    await client.del(`${key}:other`);
  }, 30_000);

  it('node-redis masters do not batch: each acquisition sends its own SET NX PX', async () => {
    const clients = set.urls.map((url) => createClient({ url }) as RedisClientType);
    await Promise.all(clients.map((c) => c.connect()));
    const redlock = new Redlock({ nodes: clients, restartGuard: false, retryCount: 0 });
    try {
      await redlock.connect();
      await Promise.all(set.clients.map((c) => c.config('RESETSTAT')));
      const resources = Array.from({ length: 8 }, (_, i) => resourceName(`node-redis-${i}`));
      const locks = await Promise.all(resources.map((r) => redlock.acquire(r, 10_000)));
      await Promise.all(locks.map((l) => l.release()));
      for (const client of set.clients) expect(await calls(client)).toEqual({ scripts: 8, sets: 8 });
      for (const r of resources) await expectAbsentOnAll(set.clients, `lock:${r}`);
    } finally {
      await redlock.close();
      await Promise.all(clients.map((c) => c.close()));
    }
  }, 30_000);

  it('50,000 acquisitions in one loop turn are all taken (a batch that large must not overflow the call stack)', async () => {
    const redlock = await set.redlock({ retryCount: 0, commandTimeout: 20_000 });
    const prefix = resourceName('many');
    const resources = Array.from({ length: 50_000 }, (_, i) => `${prefix}:${i}`);
    const settled = await Promise.allSettled(resources.map((r) => redlock.acquire(r, 60_000)));
    const failed = settled.filter((s) => s.status === 'rejected');
    expect(failed.map((s) => String(s.reason)).slice(0, 1)).toEqual([]);
    const locks = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    expect(locks).toHaveLength(resources.length);
    await Promise.all(locks.map((l) => l.release()));
    // A release decides on a quorum: the last master's replies may come in after it.
    await waitFor(async () => (await Promise.all(set.clients.map((c) => c.dbsize()))).every((n) => n === 0), 10_000);
    expect(await Promise.all(set.clients.map((c) => c.dbsize()))).toEqual([0, 0, 0]);
    expect(unhandled).toEqual([]);
  }, 120_000);

  it('a master killed while a batch is deferred, then restarted: the batch decides on the others, and the next batch reaches the restarted master', async () => {
    const redlock = await set.redlock({ retryCount: 0, commandTimeout: 1_000 });
    const victim = set.masters[2];
    const before = Array.from({ length: 16 }, (_, i) => resourceName(`killed-${i}`));
    // One synchronous turn: the calls are deferred when the kill starts.
    const acquiring = before.map((r) => redlock.acquire(r, 10_000));
    const killed = victim.kill();
    const first = await Promise.allSettled(acquiring);
    await killed;
    for (const s of first) expect(s.status).toBe('fulfilled');
    await Promise.all(first.map((s) => (s as PromiseFulfilledResult<Lock>).value.release()));
    for (const r of before) await expectAbsentOnAll(set.clients.slice(0, 2), `lock:${r}`);
    await victim.restart();
    await waitFor(async () => (await set.clients[2].ping().catch(() => '')) === 'PONG', 10_000);
    const after = Array.from({ length: 16 }, (_, i) => resourceName(`reborn-${i}`));
    // The library's connection to it reconnects; then every master takes the batch's keys.
    await waitFor(async () => {
      const lock = await redlock.acquire(resourceName('probe'), 10_000);
      const on = await set.clients[2].get(lock.keys[0]);
      await lock.release();
      return on === lock.value;
    }, 10_000);
    const locks = await Promise.all(after.map((r) => redlock.acquire(r, 10_000)));
    for (const lock of locks) for (const c of set.clients) expect(await c.get(lock.keys[0])).toBe(lock.value);
    await Promise.all(locks.map((l) => l.release()));
    for (const r of after) await expectAbsentOnAll(set.clients, `lock:${r}`);
    expect(unhandled).toEqual([]);
  }, 60_000);

  it('a batch larger than one script call keeps call order across its script calls', async () => {
    const client = set.clients[1];
    const master = { client, scripts: defineScripts(client), label: 'm1' } as unknown as Master;
    const prefix = `lock:${resourceName('chunked')}`;
    const key = `${prefix}:k`;
    const filler = Array.from({ length: MAX_BATCH_CALLS - 1 }, (_, i) =>
      plainAcquire(master, `${prefix}:${i}`, 'f', '10000'),
    );
    // The last call of the first script call, then the first calls of the second.
    const replies = await Promise.all([
      plainAcquire(master, key, 'first', '10000'),
      plainRelease(master, key, 'first', '0'),
      plainAcquire(master, key, 'second', '10000'),
      plainAcquire(master, key, 'third', '10000'),
    ]);
    expect(replies.map((r) => (r === 'OK' ? 1 : r === null ? 0 : r))).toEqual([1, 1, 1, 0]);
    expect(await Promise.all(filler)).toEqual(filler.map(() => 1));
    expect(await client.get(key)).toBe('second');
    await client.del(key, ...filler.map((_, i) => `${prefix}:${i}`));
  }, 30_000);
});

/** The restart guard's trust is read when a vote comes in, batched or not. */
describe('batched votes and the restart guard (3 masters)', () => {
  const set = useMasters(3);

  it("a restarted master's batched grants do not count: with another master refusing, concurrent acquisitions fail, and nothing is left", async () => {
    const ttl = 3_000;
    const redlock = await set.redlock({ restartGuard: { largestTtl: ttl }, retryCount: 0, commandTimeout: 1_000 });
    // Fresh masters are distrusted for the guard's duration (ttl + drift).
    await waitFor(async () => (await redlock.refreshMasterStates()).every((m) => m.trusted), 15_000, 200);
    const resources = Array.from({ length: 8 }, (_, i) => resourceName(`guarded-${i}`));
    // Master 1 refuses every key: only masters 0 and 2 could grant.
    for (const r of resources) await set.clients[1].set(`lock:${r}`, 'someone-else', 'PX', 60_000);
    await set.masters[2].kill();
    await set.masters[2].restart();
    await waitFor(async () => (await redlock.refreshMasterStates())[2].connected, 10_000, 20);
    const states = await redlock.refreshMasterStates();
    expect(states[2].trusted).toBe(false);
    // One turn: the 8 acquisitions leave as one script call per master.
    const settled = await Promise.allSettled(resources.map((r) => redlock.acquire(r, ttl)));
    for (const s of settled) expect(s.status).toBe('rejected');
    for (const r of resources) await expectEventuallyAbsent([set.clients[0], set.clients[2]], `lock:${r}`, 5_000);
  }, 60_000);
});

/** A cluster node names every key of a script call in one slot: its calls must not be batched. */
describe('plain calls on a cluster node are not batched (one 3-shard cluster, no replicas)', () => {
  let clusters: RedisClusters;
  let primaries: Redis[];
  beforeAll(async () => {
    clusters = await startRedisClusters(1, { shards: 3, replicas: 0 });
    primaries = clusters.clusters[0].shards.map((s) => new Redis(s.primary.port, '127.0.0.1'));
  }, 90_000);
  afterAll(async () => {
    for (const p of primaries ?? []) p.disconnect();
    await clusters?.stop();
  });

  it('16 concurrent acquisitions send 16 SET NX PX and 16 release scripts across the shards, and every lock is freed', async () => {
    const open: Redlock[] = [];
    const redlock = await redlockOnClusters(clusters.clusters, open, { retryCount: 0 });
    try {
      await Promise.all(primaries.map((p) => p.config('RESETSTAT')));
      const resources = Array.from({ length: 16 }, (_, i) => resourceName(`cluster-${i}`));
      const locks = await Promise.all(resources.map((r) => redlock.acquire(r, 10_000)));
      await Promise.all(locks.map((l) => l.release()));
      const seen = await Promise.all(primaries.map((p) => calls(p)));
      expect(seen.reduce((sum, s) => sum + s.sets, 0)).toBe(16);
      expect(seen.reduce((sum, s) => sum + s.scripts, 0)).toBe(16);
      const reader = new Cluster(clusters.clusters[0].startupNodes);
      try {
        for (const lock of locks) expect(await reader.exists(lock.keys[0])).toBe(0);
      } finally {
        reader.disconnect();
      }
    } finally {
      await Promise.all(open.map((r) => r.close()));
    }
  }, 60_000);
});
