import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { LockAcquisitionError, type Lock, type Redlock, type RedlockOptions } from '../../lib/index.js';
import { clusterSlotOf } from '../../lib/backend/cluster/cluster-slot.js';
import { clusterStemOf } from '../../lib/backend/cluster/cluster-keys.js';
import { startRedisClusters, type RedisClusters } from '../../tools/redis-clusters.js';
import { acrossShards, redlockOnClusters, rejectionOf, resourceName, sleep, timed, waitFor } from '../support/index.js';

describe('cluster stems: companion keys in the lock key slot', () => {
  it.each([
    ['lock:orders', 'lock:orders{lock:orders}'],
    ['lock:{order-42}:payment', 'lock:{order-42}:payment{}'],
    ['lock:orders{lock:orders}', 'lock:orders{lock:orders}{}'],
    ['lock:a}b', undefined],
    ['lock:a{b', undefined],
    ['lock:{}x', undefined],
    ['lock:}{x', undefined],
  ])('%s', (key, stem) => {
    const got = clusterStemOf(key);
    if (stem !== undefined) expect(got).toBe(stem);
    // The companions keep the key prefix (ACL and SCAN patterns) unless a stray '{' opens no tag.
    if (!key.includes('{') || stem !== undefined) expect(got.startsWith(key)).toBe(true);
    for (const suffix of [':limit', ':permit:0', ':permit:17', ':writer-waiting', ':handoff:queue', '']) {
      expect(clusterSlotOf(got + suffix)).toBe(clusterSlotOf(key));
      expect(clusterSlotOf(`__quorum-lock__:${got}${suffix}`)).toBe(clusterSlotOf(key));
    }
  });
});

describe('cluster stems: one stem per lock key', () => {
  it('no two lock keys share a stem (a shared stem shares the handoff queue and channel)', () => {
    const keys = ['lock:orders', 'lock:orders{lock:orders}', 'lock:{order-42}', 'lock:{order-42}{}', 'lock:a}b'];
    keys.push('lock:a{b', 'lock:{}x', 'lock:}{x', 'lock:x{}', 'lock:{}x{}', 'lock:a~', 'lock:a}b{~0}');
    for (const key of [...keys]) keys.push(clusterStemOf(key)); // stems are lock keys too
    const seen = new Map<string, string>();
    for (const key of new Set(keys)) {
      const stem = clusterStemOf(key);
      expect([key, seen.get(stem) ?? key]).toEqual([key, key]);
      seen.set(stem, key);
    }
  });
});

describe('shared locks, handoff and sharded wake-ups on three independent 3-shard clusters', () => {
  let clusters: RedisClusters;
  let readers: Cluster[];
  const open: Redlock[] = [];

  const redlock = (options: Partial<RedlockOptions> = {}): Promise<Redlock> =>
    redlockOnClusters(clusters.clusters, open, options);
  /** `fn` on every cluster. */
  const onAll = <T>(fn: (c: Cluster) => Promise<T>): Promise<T[]> => Promise.all(readers.map(fn));
  /** Sharded subscribers of the release channel of `resource`, per cluster. */
  const shardSubscribers = (resource: string): Promise<number[]> =>
    onAll(async (c) => {
      const channel = `__quorum-lock__:${clusterStemOf(`lock:${resource}`)}`;
      const counts = await Promise.all(
        c.nodes('master').map((n) => n.call('PUBSUB', 'SHARDNUMSUB', channel) as Promise<[string, number]>),
      );
      return counts.reduce((sum, [, n]) => sum + Number(n), 0);
    });

  beforeAll(async () => {
    clusters = await startRedisClusters(3, { shards: 3 });
    readers = clusters.clusters.map((c) => new Cluster(c.startupNodes));
  }, 90_000);
  afterEach(async () => {
    await Promise.all(open.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    for (const r of readers ?? []) r.disconnect();
    await clusters?.stop();
  });

  it.each([
    ['plain', 'permits'],
    ['stray brace', 'permits}x'],
    ['empty tag', '{}permits'],
    ['own tag', '{tenant-7}:permits'],
  ])('counting locks: n+1 holders with limit n, one admitted after a release (%s name)', async (_, label) => {
    const limit = 3;
    const resource = `${resourceName('count')}-${label}`;
    const holders = await Promise.all(Array.from({ length: limit + 1 }, () => redlock({ retryCount: 0 })));
    const locks: Lock[] = [];
    for (const h of holders.slice(0, limit)) locks.push((await h.tryAcquire(resource, 10_000, { limit }))!);
    expect(new Set(locks.map((l) => l.value)).size).toBe(limit);
    const refused = await rejectionOf(holders[limit].acquire(resource, 10_000, { limit }));
    expect(refused).toBeInstanceOf(LockAcquisitionError);
    // The permits and the limit record are in the lock key's slot, on every cluster.
    const stem = clusterStemOf(`lock:${resource}`);
    expect(await onAll((c) => c.get(`${stem}:limit`))).toEqual(['3', '3', '3']);
    const view = await holders[0].inspect(resource);
    expect(view.permits?.held).toBe(limit);

    await locks[1].extend(10_000);
    await locks[1].release();
    const admitted = await holders[limit].acquire(resource, 10_000, { limit });
    expect(admitted.isHeld).toBe(true);
    await Promise.all([admitted, ...locks].map((l) => l.release()));
    expect(await onAll((c) => c.exists(`${stem}:limit`))).toEqual([0, 0, 0]);
  });

  it('read-write locks across slots: readers together, a writer alone, all or nothing per cluster', async () => {
    const [a, b, c] = await Promise.all([redlock({ retryCount: 0 }), redlock({ retryCount: 0 }), redlock()]);
    const resources = acrossShards(clusters.clusters[0], 'rw');
    const first = await a.acquire(resources, 10_000, { mode: 'read' });
    const second = await b.acquire(resources, 10_000, { mode: 'read' });
    expect(await onAll((cl) => cl.zcard(`lock:${resources[1]}`))).toEqual([2, 2, 2]);
    expect(await c.tryAcquire(resources[2], 10_000)).toBeNull(); // a writer is refused while readers hold
    await first.extend(10_000);

    // A writer waiting for the readers holds new readers off (its intent is in the lock key's slot).
    const waiting = timed(c.acquire(resources[0], 10_000, { retryDelay: 200, retryCount: 100 }));
    await waitFor(
      async () =>
        (await onAll((cl) => cl.exists(`${clusterStemOf(`lock:${resources[0]}`)}:writer-waiting`))).includes(1),
      5_000,
      50,
    );
    await first.release();
    await second.release();
    const { value: written, error } = await waiting;
    expect(error).toBeUndefined();
    // While the writer holds resources[0], a reader of all three is refused and leaves nothing on the other slots.
    const reader = await rejectionOf(a.acquire(resources, 10_000, { mode: 'read' }));
    expect(reader).toBeInstanceOf(LockAcquisitionError);
    await sleep(200); // the undo of each cluster's granted slots lands after its answer
    for (const name of resources.slice(1)) expect(await onAll((cl) => cl.exists(`lock:${name}`))).toEqual([0, 0, 0]);
    await written!.release();

    // A writer on cluster 0 only: clusters 1 and 2 grant the reader; cluster 0 refused one slot and
    // undid the other two (nothing else cleans a node that refused an acquisition that succeeded).
    await readers[0].set(`lock:${resources[0]}`, 'someone-else', 'PX', 10_000);
    const after = await a.acquire(resources, 10_000, { mode: 'read' });
    for (const name of resources.slice(1)) {
      const undone = async (): Promise<boolean> =>
        JSON.stringify(await onAll((cl) => cl.zcard(`lock:${name}`))) === JSON.stringify([0, 1, 1]);
      await waitFor(undone, 2_000, 25);
      expect(await onAll((cl) => cl.zcard(`lock:${name}`))).toEqual([0, 1, 1]);
    }
    await after.release();
    await readers[0].del(`lock:${resources[0]}`);
  });

  it('queues waiters of separate Redlocks with handoff tickets in the lock key slot, one holder at a time', async () => {
    const contenders = await Promise.all(
      Array.from({ length: 3 }, () => redlock({ retryDelay: 5_000, retryJitter: 0, retryCount: 20 })),
    );
    const resource = resourceName('handoff');
    const queue = `${clusterStemOf(`lock:${resource}`)}:handoff:queue`;
    const first = await contenders[0].acquire(resource, 10_000);
    let holding = 0;
    let overlap = 0;
    const order: number[] = [];
    const runs = contenders.slice(1).map(async (r, i) => {
      const lock = await r.acquire(resource, 10_000);
      if (++holding > 1) overlap++;
      order.push(i + 1);
      await sleep(100);
      holding--;
      await lock.release();
    });
    // Both waiters were refused once and took a ticket on every cluster.
    const queued = await waitFor(async () => (await onAll((c) => c.zcard(queue))).every((n) => n === 2), 5_000, 50);
    expect(queued).toBe(true);
    // And both listen for the handoff (a message sent before a subscription is in place is lost: a retry delay).
    expect(await waitFor(async () => (await shardSubscribers(resource)).every((n) => n === 2), 5_000, 50)).toBe(true);
    const started = Date.now();
    await first.release();
    await Promise.all(runs);
    expect(overlap).toBe(0);
    expect(order.sort()).toEqual([1, 2]);
    // Handed over on release (and woken by it): far sooner than the 5 s retry delay each would sleep.
    expect(Date.now() - started).toBeLessThan(4_000);
    await waitFor(async () => (await onAll((c) => c.exists(queue))).every((n) => n === 0), 3_000, 50);
    expect(await onAll((c) => c.exists(queue))).toEqual([0, 0, 0]);
  });

  it('fenced waiters queue with tickets too (the counter, in another slot, read after the grant): tokens increase', async () => {
    const [a, b] = await Promise.all([
      redlock({ fencing: true }),
      redlock({ fencing: true, retryDelay: 5_000, retryJitter: 0, retryCount: 5 }),
    ]);
    const resource = resourceName('fenced-handoff');
    const queue = `${clusterStemOf(`lock:${resource}`)}:handoff:queue`;
    const first = await a.acquire(resource, 10_000);
    const waiting = timed(b.acquire(resource, 10_000));
    expect(await waitFor(async () => (await onAll((c) => c.zcard(queue))).every((n) => n === 1), 5_000, 50)).toBe(true);
    expect(await waitFor(async () => (await shardSubscribers(resource)).every((n) => n === 1), 5_000, 50)).toBe(true);
    await first.release();
    const { value: second, error, ms } = await waiting;
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(5_000 + 4_000); // one attempt, then woken by the release: not two 5 s delays
    expect(second!.fencingToken).toBeGreaterThan(first.fencingToken!);
    await second!.release();
  });

  it('wakes a waiter through sharded pub/sub (SSUBSCRIBE on the key shard), long before its retry delay', async () => {
    const holder = await redlock();
    const waiter = await redlock({ retryDelay: 12_000, retryJitter: 0, retryCount: 2 });
    const resource = resourceName('sharded-wake');
    const held = await holder.acquire(resource, 10_000, { mode: 'read' });
    const waiting = timed(waiter.acquire(resource, 10_000));
    // The waiter subscribed with SSUBSCRIBE on the shard serving the channel's slot, on every cluster.
    expect(await waitFor(async () => (await shardSubscribers(resource)).every((n) => n === 1), 5_000, 50)).toBe(true);
    await sleep(500); // the waiter's first attempt was refused; it sleeps on its 12 s fallback
    await held.release(); // a reader's release announces with SPUBLISH from its script
    const { value: lock, error, ms } = await waiting;
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(8_000); // without the wake-up it would have slept 12 s
    await lock!.release();
  });
});
