import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { LockLostError, type Redlock, type RedlockOptions } from '../../lib/index.js';
import { clusterStemOf } from '../../lib/backend/cluster/cluster-keys.js';
import { startRedisClusters, type RedisClusters } from '../../tools/redis-clusters.js';
import { redlockOnClusters, resourceName, waitFor } from '../support/index.js';

describe('owner and revoke on three independent 3-shard clusters', () => {
  let clusters: RedisClusters;
  let readers: Cluster[];
  const open: Redlock[] = [];
  const redlock = (options: Partial<RedlockOptions> = {}): Promise<Redlock> =>
    redlockOnClusters(clusters.clusters, open, options);
  const onAll = <T>(fn: (c: Cluster) => Promise<T>): Promise<T[]> => Promise.all(readers.map(fn));

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

  it('an exclusive lock: inspect shows its owner; revoke removes it and the holder hears it', async () => {
    const holder = await redlock({ owner: 'cluster-worker' });
    const operator = await redlock();
    const resource = resourceName('cluster-revoke');
    const lock = await holder.acquire(resource, 60_000, { autoExtend: true });
    expect((await operator.inspect(resource)).owner).toBe('cluster-worker');

    const result = await operator.revoke(resource, { reason: 'cluster test' });

    expect(result).toEqual({ revoked: true, holder: lock.value, owner: 'cluster-worker' });
    expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
    expect((lock.signal.reason as LockLostError).reason).toBe('revoked');
    expect(await onAll((c) => c.exists(`lock:${resource}`))).toEqual([0, 0, 0]);
  });

  it('a counting lock: every permit and the limit record go, in the lock key slot', async () => {
    const one = await redlock({ owner: 'permit-a' });
    const two = await redlock({ owner: 'permit-b' });
    const operator = await redlock();
    const resource = resourceName('cluster-permits');
    const p1 = await one.acquire(resource, 60_000, { limit: 2 });
    const p2 = await two.acquire(resource, 60_000, { limit: 2 });

    const result = await operator.revoke(resource);

    expect(result.revoked).toBe(true);
    expect(['permit-a', 'permit-b']).toContain(result.owner);
    for (const permit of [p1, p2]) expect(await waitFor(() => permit.signal.aborted, 5_000)).toBe(true);
    const stem = clusterStemOf(`lock:${resource}`);
    expect(await onAll((c) => c.exists(`${stem}:limit`, `${stem}:permit:0`, `${stem}:permit:1`))).toEqual([0, 0, 0]);
  });
});
