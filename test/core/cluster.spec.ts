import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { LockAcquisitionError, Redlock, RedlockConfigError, type RedlockOptions } from '../../lib/index.js';
import { clusterSlotOf } from '../../lib/backend/cluster/cluster-slot.js';
import { startRedisClusters, type RedisCluster, type RedisClusters } from '../../tools/redis-clusters.js';
import { rejectionOf, resourceName, sleep, timed, waitFor } from '../support/index.js';

/** The shard of `cluster` that serves `key`. */
function shardOf(cluster: RedisCluster, key: string) {
  const slot = clusterSlotOf(key);
  return cluster.shards.find((s) => s.slots[0] <= slot && slot <= s.slots[1])!;
}

/** Resources whose `lock:` keys fall in three different shards of a 3-shard cluster. */
function acrossShards(cluster: RedisCluster, label: string): string[] {
  const found = new Map<number, string>();
  for (let i = 0; found.size < 3; i++) {
    const name = `${resourceName(label)}-${i}`;
    const shard = cluster.shards.indexOf(shardOf(cluster, `lock:${name}`));
    if (!found.has(shard)) found.set(shard, name);
  }
  return [...found.values()];
}

describe('Redis Cluster nodes (three independent 3-shard clusters, one replica per shard)', () => {
  let clusters: RedisClusters;
  let readers: Cluster[];
  const open: Redlock[] = [];

  const redlock = async (options: Partial<RedlockOptions> = {}, connect = true): Promise<Redlock> => {
    const r = new Redlock({
      nodes: clusters.clusters.map((c) => ({ cluster: c.startupNodes })),
      restartGuard: { largestTtl: 200 },
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
      ...options,
    });
    open.push(r);
    if (connect) {
      await r.connect();
      // Fresh clusters: wait out the restart guard (their uptime is short).
      await waitFor(async () => (await r.refreshMasterStates()).every((s) => s.trusted), 15_000, 200);
    }
    return r;
  };
  const values = (key: string): Promise<(string | null)[]> => Promise.all(readers.map((c) => c.get(key)));

  beforeAll(async () => {
    clusters = await startRedisClusters(3, { shards: 3, replicas: 1 });
    readers = clusters.clusters.map((c) => new Cluster(c.startupNodes, { slotsRefreshInterval: 500 }));
  }, 90_000);
  afterEach(async () => {
    await Promise.all(open.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    for (const r of readers ?? []) r.disconnect();
    await clusters?.stop();
  });

  it('takes, extends and releases a lock with each cluster as one vote', async () => {
    const r = await redlock();
    expect(r.quorum).toBe(2);
    expect(r.masterStates().map((s) => s.label)).toEqual(
      clusters.clusters.map((c) => `cluster:127.0.0.1:${c.startupNodes[0].port}`),
    );
    const resource = resourceName('single');
    const lock = await r.acquire(resource, 5_000);
    expect(await values(`lock:${resource}`)).toEqual([lock.value, lock.value, lock.value]);
    const seen = await r.inspect(resource);
    expect(seen.held).toBe(true);
    expect(seen.holder).toBe(lock.value);
    await lock.extend(8_000);
    const pttls = await Promise.all(readers.map((c) => c.pttl(`lock:${resource}`)));
    for (const p of pttls) expect(p).toBeGreaterThan(5_000);
    await lock.release();
    expect(await values(`lock:${resource}`)).toEqual([null, null, null]);
  });

  it('takes a multi-resource lock across slots with no CROSSSLOT error, and extends and releases it', async () => {
    const r = await redlock();
    const resources = acrossShards(clusters.clusters[0], 'multi');
    const lock = await r.acquire(resources, 5_000);
    for (const name of resources) expect(await values(`lock:${name}`)).toEqual([lock.value, lock.value, lock.value]);
    await lock.extend(6_000);
    await lock.release();
    for (const name of resources) expect(await values(`lock:${name}`)).toEqual([null, null, null]);
  });

  it('keeps a multi-resource lock all-or-nothing on each cluster when one slot refuses', async () => {
    const r = await redlock({ retryCount: 0 });
    const resources = acrossShards(clusters.clusters[0], 'all-or-nothing');
    const blocked = `lock:${resources[2]}`;
    await readers[0].set(blocked, 'someone-else', 'PX', 10_000); // held on cluster 0 only
    const lock = await r.acquire(resources, 5_000); // clusters 1 and 2 are a quorum
    // Cluster 0 refused: the slots it had granted are undone, so it holds none of this lock's keys.
    // The acquisition decided on clusters 1 and 2; cluster 0's round and its undo may still be landing.
    for (const name of resources.slice(0, 2)) {
      const undone = async () =>
        JSON.stringify(await values(`lock:${name}`)) === JSON.stringify([null, lock.value, lock.value]);
      await waitFor(undone, 2_000);
      expect(await values(`lock:${name}`)).toEqual([null, lock.value, lock.value]);
    }
    expect(await readers[0].get(blocked)).toBe('someone-else');
    await lock.release();
    await readers[0].del(blocked);

    await readers[1].set(blocked, 'someone-else', 'PX', 10_000);
    await readers[2].set(blocked, 'someone-else', 'PX', 10_000);
    const error = await rejectionOf(r.acquire(resources, 5_000));
    expect(error).toBeInstanceOf(LockAcquisitionError);
    for (const name of resources.slice(0, 2)) expect(await values(`lock:${name}`)).toEqual([null, null, null]);
    await readers[1].del(blocked);
    await readers[2].del(blocked);
  });

  it('issues increasing fencing tokens for multi-resource locks whose keys and counters span slots', async () => {
    const r = await redlock({ fencing: true });
    const resources = acrossShards(clusters.clusters[0], 'fenced');
    const first = await r.acquire(resources, 5_000);
    await first.release();
    const second = await r.acquire(resources, 5_000);
    expect(first.fencingToken).toBeGreaterThan(0);
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken!);
    for (const name of resources) {
      const counters = await values(`fence:${name}`);
      expect(counters.filter((c) => Number(c) === second.fencingToken).length).toBeGreaterThanOrEqual(2);
    }
    await second.release();
  });

  it('wakes a waiter in another Redlock on release, long before its retry delay', async () => {
    const holder = await redlock();
    const waiter = await redlock({ retryDelay: 12_000, retryJitter: 0, retryCount: 2 });
    const resources = acrossShards(clusters.clusters[0], 'wake');
    const held = await holder.acquire(resources, 10_000);
    const waiting = timed(waiter.acquire(resources, 10_000));
    await sleep(1_000); // the waiter's first attempt has failed and it subscribed; it sleeps on its 12 s fallback
    await held.release();
    const { value: lock, error, ms } = await waiting;
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(7_000); // without the wake-up it would have slept 12 s
    await lock!.release();
  });

  it('runs using(), counting and read-write locks on clusters (their keys in the lock key slot)', async () => {
    const r = await redlock();
    expect(await r.using(resourceName('using'), 2_000, async () => 42)).toBe(42);
    // Refused before their companion keys were put in the lock key's slot; cluster-shared.spec.ts covers them.
    const permit = await r.acquire(resourceName('permit'), 1_000, { limit: 3 });
    const read = await r.acquire(resourceName('read'), 1_000, { mode: 'read' });
    await Promise.all([permit.release(), read.release()]);
  });

  it('refuses a cluster listed twice, or a cluster node also given as a plain master', async () => {
    const [a, b] = clusters.clusters;
    // Different startup nodes of one cluster pass this check; the shards' run_ids catch them at connect (next test).
    expect(
      () =>
        new Redlock({
          nodes: [{ cluster: [a.startupNodes[0]] }, { cluster: [a.startupNodes[1]] }, { cluster: b.startupNodes }],
        }),
    ).not.toThrow();
    expect(
      () =>
        new Redlock({
          nodes: [{ cluster: a.startupNodes }, { cluster: a.startupNodes.slice(0, 1) }, { cluster: b.startupNodes }],
        }),
    ).toThrow(/nodes\[1\].*(one server has one vote|count twice)/);
    expect(
      () =>
        new Redlock({
          nodes: [
            { cluster: a.startupNodes },
            `redis://127.0.0.1:${a.startupNodes[0].port}`,
            { cluster: b.startupNodes },
          ],
        }),
    ).toThrow(/both point at 127\.0\.0\.1/);
  });

  it('refuses the same cluster reached through different startup nodes (its shards have one identity)', async () => {
    const [a, b] = clusters.clusters;
    const r = new Redlock({
      nodes: [{ cluster: [a.startupNodes[0]] }, { cluster: [a.startupNodes[1]] }, { cluster: b.startupNodes }],
      restartGuard: false,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    open.push(r);
    const error = await rejectionOf(r.connect());
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe('nodes[1]');
  });

  it('refuses a cluster node given as a plain master, naming the fix', async () => {
    const [a, b, c] = clusters.clusters;
    const r = new Redlock({
      nodes: [`redis://127.0.0.1:${a.startupNodes[0].port}`, { cluster: b.startupNodes }, { cluster: c.startupNodes }],
      restartGuard: false,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    open.push(r);
    const error = await rejectionOf(r.connect());
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as Error).message).toMatch(/\{ cluster: \[\{ host, port \}\] \}/);
  });

  it('leaves a user-supplied Cluster open on close()', async () => {
    const mine = new Cluster(clusters.clusters[2].startupNodes);
    const r = new Redlock({
      nodes: [{ cluster: clusters.clusters[0].startupNodes }, { cluster: clusters.clusters[1].startupNodes }, mine],
      restartGuard: false,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    await r.connect();
    const lock = await r.acquire(resourceName('mine'), 2_000);
    await lock.release();
    await r.close();
    expect(await mine.set(resourceName('still-open'), '1', 'PX', 1_000)).toBe('OK');
    mine.disconnect();
  });

  it('distrusts a cluster whose shard primary failed over, and never double-grants', async () => {
    const ttl = 15_000;
    const guard = { largestTtl: ttl };
    const holder = await redlock({ restartGuard: false });
    const resource = resourceName('failover');
    const key = `lock:${resource}`;
    const held = await holder.acquire(resource, ttl);
    // A guarded contender that has seen every shard before the failover.
    const contender = await redlock({ restartGuard: guard, retryCount: 0 });
    await waitFor(() => contender.masterStates().every((s) => s.connected && s.runId !== undefined), 10_000, 100);

    // Fail over the shard serving the key on clusters 0 and 1, and lose the key there (asynchronous
    // replication can lose the last writes: delete it on the promoted replica to model that).
    for (const c of [0, 1]) {
      const shard = shardOf(clusters.clusters[c], key);
      await shard.primary.kill();
    }
    for (const c of [0, 1]) {
      const promoted = shardOf(clusters.clusters[c], key).replicas[0];
      const client = new Redis(promoted.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
      const ok = await waitFor(async () => /role:master/.test(await client.info('replication')), 20_000, 200);
      expect(ok).toBe(true);
      await client.del(key);
      client.disconnect();
    }
    await clusters.clusters[0].waitUntilOk(20_000);
    await clusters.clusters[1].waitUntilOk(20_000);

    const seen = await waitFor(
      () => contender.masterStates().filter((s) => s.distrust === 'failover').length === 2,
      15_000,
      100,
    );
    expect(seen).toBe(true);
    const states = contender.masterStates();
    expect(states[0].failovers).toBeGreaterThanOrEqual(1);
    expect(states[0].distrustedFor).toBeGreaterThan(0);

    const error = await rejectionOf(contender.acquire(resource, 2_000));
    expect(error).toBeInstanceOf(LockAcquisitionError);
    const outcomes = (error as LockAcquisitionError).outcomes;
    expect(outcomes[0]).toMatchObject({ status: 'restarted', distrust: 'failover' });
    expect(outcomes[1]).toMatchObject({ status: 'restarted', distrust: 'failover' });
    expect(outcomes[2].status).toBe('refused'); // cluster 2 still holds the lock for the holder

    // Without the guard, the same contender state is a double grant: the hazard the guard closes.
    const unguarded = await redlock({ restartGuard: false, retryCount: 0 }, false);
    await unguarded.connect();
    const second = await unguarded.acquire(resource, 2_000).catch(() => undefined);
    expect(second).toBeDefined();
    await second?.release();
    await held.release();
  }, 120_000);
});
