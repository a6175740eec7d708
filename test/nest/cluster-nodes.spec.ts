/**
 * The Nest layer with three independent 3-shard Redis Clusters as `nodes`: `RedlockService.lead()`,
 * `@LeaderOnly` and `@Locked` (exclusive and read) in two application instances of one process,
 * each with its own connections, as on plain masters.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { LeaderOnly, Locked, RedlockService, type RedlockModuleOptions } from '../../lib/index.js';
import { startRedisClusters, type RedisClusters } from '../../tools/redis-clusters.js';
import { resourceName, sleep, waitFor } from '../support/index.js';
import { startApp } from '../support/nest.js';

const LEADER_RESOURCE = 'cluster-nest:leader-job';

/** How many callers are inside each guarded section at once, shared by both apps (one process). */
const inside = { exclusive: 0, overlaps: 0, readers: 0, mostReaders: 0 };

@Injectable()
class ClusterJobs {
  leaderCalls = 0;

  @LeaderOnly(LEADER_RESOURCE, { ttl: 2_000, retryDelay: 8_000 })
  async nightly(): Promise<string> {
    this.leaderCalls++;
    return 'ran';
  }

  @Locked('cluster-nest:exclusive', { ttl: 2_000 })
  async exclusive(): Promise<void> {
    if (++inside.exclusive > 1) inside.overlaps++;
    await sleep(20);
    inside.exclusive--;
  }

  @Locked('cluster-nest:catalog', { ttl: 2_000, mode: 'read' })
  async read(): Promise<void> {
    inside.mostReaders = Math.max(inside.mostReaders, ++inside.readers);
    await sleep(300);
    inside.readers--;
  }
}

let clusters: RedisClusters;
let apps: INestApplication[] = [];

const options = (): RedlockModuleOptions => ({
  nodes: clusters.clusters.map((c) => ({ cluster: c.startupNodes })),
  ttl: 2_000,
  retryCount: 100,
  retryDelay: 50,
  retryJitter: 20,
  restartGuard: false,
});

beforeAll(async () => {
  clusters = await startRedisClusters(3, { shards: 3 });
  apps = await Promise.all([0, 1].map(() => startApp(options(), { providers: [ClusterJobs] })));
}, 90_000);

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await clusters?.stop();
});

describe('Nest with Redis Cluster nodes', () => {
  it('RedlockService.lead(): one leader across the apps; a standby takes over on resign, long before its retry delay', async () => {
    const [a, b] = apps.map((app) => app.get(RedlockService));
    const resource = resourceName('cluster-lead');
    const leader = a.lead(resource, { ttl: 2_000 });
    expect(await waitFor(() => leader.isLeader, 5_000, 10)).toBe(true);
    const standby = b.lead(resource, { ttl: 2_000, retryDelay: 10_000 });
    await sleep(300); // refused once: it sleeps on its 10 s fallback
    expect(standby.isLeader).toBe(false);
    await sleep(2_200); // past the TTL: renewal on the clusters keeps the term
    expect(leader.isLeader).toBe(true);
    expect(leader.terms).toBe(1);
    const resigned = performance.now();
    await leader.resign();
    expect(await waitFor(() => standby.isLeader, 6_000, 10)).toBe(true);
    expect(performance.now() - resigned).toBeLessThan(6_000); // woken by the release, not the 10 s delay
    await standby.resign();
  });

  it('@LeaderOnly runs in one app only', async () => {
    const jobs = apps.map((app) => app.get(ClusterJobs));
    expect(
      await waitFor(async () => (await Promise.all(jobs.map((j) => j.nightly()))).includes('ran'), 5_000, 20),
    ).toBe(true);
    for (let i = 0; i < 10; i++) {
      const results = await Promise.all(jobs.map((job) => job.nightly()));
      expect(results.filter((r) => r === 'ran')).toHaveLength(1);
      expect(results.filter((r) => r === undefined)).toHaveLength(1);
    }
    expect(jobs.filter((j) => j.leaderCalls > 0)).toHaveLength(1);
  });

  it('@Locked: callers of two apps never overlap on one resource; read locks are shared', async () => {
    const jobs = apps.map((app) => app.get(ClusterJobs));
    await Promise.all(Array.from({ length: 16 }, (_, i) => jobs[i % 2].exclusive()));
    expect(inside.overlaps).toBe(0);
    await Promise.all([jobs[0].read(), jobs[1].read()]);
    expect(inside.mostReaders).toBe(2);
  });
});
