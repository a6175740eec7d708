import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import {
  LockAcquisitionError,
  Redlock,
  type MasterOutcome,
  type RedlockNode,
  type RedlockOptions,
} from '../../lib/index.js';
import { clusterSlotOf } from '../../lib/backend/cluster/cluster-slot.js';
import { startRedisClusters, type RedisClusters } from '../../tools/redis-clusters.js';
import type { RedisMaster } from '../../tools/redis-masters.js';
import { liveShardOf, nodeCommand, now, otherPrimary, resourceName, sleep, waitFor } from '../support/index.js';

/**
 * A cluster is one vote; the restart guard must distrust it whenever a shard that owns lock slots
 * changes identity, for an instance that saw that shard before the change. Each case below loses
 * the holder's key on two of the three clusters, so a vote counted from the changed shard is a
 * double grant.
 */
describe('restart guard on cluster shards (three 2-shard clusters, one replica per shard)', () => {
  let clusters: RedisClusters;
  const open: Redlock[] = [];
  const users: Cluster[] = [];
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const TTL = 6_000;

  const redlock = async (options: Partial<RedlockOptions> = {}): Promise<Redlock> => {
    const r = new Redlock({
      nodes: clusters.clusters.map((c) => ({ cluster: c.startupNodes })),
      logger: quiet,
      ...options,
    });
    open.push(r);
    await r.connect();
    // Fresh clusters (or a shard restarted by an earlier case): wait out the restart guard.
    const trusted = await waitFor(async () => (await r.refreshMasterStates()).every((s) => s.trusted), 20_000, 200);
    expect(trusted).toBe(true);
    return r;
  };

  /** Cluster instances with ioredis' defaults (no periodic slot refresh), as an application may pass them. */
  const userClusters = (): RedlockNode[] =>
    clusters.clusters.map((c) => {
      const cluster = new Cluster(c.startupNodes);
      users.push(cluster);
      return cluster;
    });

  /**
   * The holder takes `resource` on every cluster; `change` then alters the key's shard on clusters
   * 0 and 1 (losing the key there; `before` runs before the holder writes it). A contender that
   * trusted every cluster before the change tries again and again until the holder's validity
   * ends: it must be refused every time, the changed clusters' votes not counted. Returns the
   * contender and the outcomes it saw.
   */
  async function contendAfter(
    label: string,
    steps: {
      before?: (cluster: number, key: string) => Promise<void>;
      change: (cluster: number, key: string) => Promise<void>;
    },
    contenderOptions: Partial<RedlockOptions> = {},
  ): Promise<{ contender: Redlock; seen: MasterOutcome[][] }> {
    const contender = await redlock({ restartGuard: { largestTtl: TTL }, retryCount: 0, ...contenderOptions });
    const holder = await redlock({ restartGuard: false });
    const resource = resourceName(label);
    const key = `lock:${resource}`;
    if (steps.before) await Promise.all([0, 1].map((c) => steps.before!(c, key)));
    const held = await holder.acquire(resource, TTL);
    const validUntil = now() + held.validity;
    await Promise.all([0, 1].map((c) => steps.change(c, key)));
    expect(now()).toBeLessThan(validUntil - 1_000); // the change happened while the holder held the lock
    const seen: MasterOutcome[][] = [];
    let grantedEarlyBy: number | undefined;
    while (now() < validUntil) {
      try {
        const lock = await contender.acquire(resource, TTL);
        grantedEarlyBy = Math.round(validUntil - now());
        await lock.release();
        break;
      } catch (error) {
        if (!(error instanceof LockAcquisitionError)) throw error;
        seen.push([...error.outcomes]);
      }
      await sleep(100);
    }
    // A grant before the holder's validity ended is the double grant the guard must prevent.
    expect(grantedEarlyBy).toBeUndefined();
    await held.release().catch(() => undefined);
    return { contender, seen };
  }

  /** Asserts clusters 0 and 1 were not counted for `reason` (naming the shard), and are still distrusted. */
  function expectDistrusted(contender: Redlock, seen: MasterOutcome[][], reason: string, shard: RegExp): void {
    const states = contender.masterStates();
    for (const c of [0, 1]) {
      const reasons = seen.map((o) => o[c]).filter((o) => o?.status === 'restarted');
      expect(reasons.some((o) => o.distrust === reason && shard.test(o.shard ?? ''))).toBe(true);
      expect(states[c]).toMatchObject({ trusted: false, distrust: reason });
      expect(states[c].distrustedFor).toBeGreaterThan(0);
      expect(contender.distrustedFor[c]).toBeGreaterThan(0);
      expect(states[c].shard).toMatch(shard);
    }
  }

  beforeAll(async () => {
    clusters = await startRedisClusters(3, { shards: 2, replicas: 1 });
  }, 90_000);
  afterEach(async () => {
    await Promise.all(open.splice(0).map((r) => r.close()));
    for (const c of users.splice(0)) c.disconnect();
    await Promise.all(clusters.clusters.map((c) => c.waitUntilOk(20_000)));
  });
  afterAll(async () => {
    await clusters?.stop();
  });

  it('distrusts a cluster whose lock slot moved to another shard (the key lost), naming the shard', async () => {
    const { contender, seen } = await contendAfter('slot-moved', {
      change: async (c, key) => {
        const cluster = clusters.clusters[c];
        const slot = clusterSlotOf(key);
        const from = await liveShardOf(cluster, key);
        const to = await otherPrimary(cluster, from);
        // Assigned without MIGRATE: the new owner (its epoch bumped) wins the slot, the old one drops its keys.
        await nodeCommand(to.node, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.primaryId);
        await nodeCommand(to.node, 'CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
        const moved = await waitFor(
          async () => (await nodeCommand(from.primary, 'CLUSTER', 'COUNTKEYSINSLOT', slot)) === 0,
          10_000,
          50,
        );
        expect(moved).toBe(true);
      },
    });
    expectDistrusted(contender, seen, 'slot-moved', /slot \d+/);
  }, 90_000);

  it('does not count a promoted replica before it is vetted: plain CLUSTER FAILOVER, no data lost', async () => {
    const contender = await redlock({ nodes: userClusters(), restartGuard: { largestTtl: TTL }, retryCount: 0 });
    const holder = await redlock({ restartGuard: false });
    const resource = resourceName('manual-failover');
    const key = `lock:${resource}`;
    const held = await holder.acquire(resource, TTL);
    const shard = await liveShardOf(clusters.clusters[0], key);
    const replica = shard.replicas[0];
    await nodeCommand(replica, 'CLUSTER', 'FAILOVER');
    expect(
      await waitFor(
        async () => (await liveShardOf(clusters.clusters[0], key).catch(() => undefined))?.primary === replica,
        10_000,
        50,
      ),
    ).toBe(true);
    // The promoted replica has the key (a manual failover waits for replication), so its vote would
    // be a refusal; it must not count at all until its identity is read.
    const error = await contender.acquire(resource, TTL).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LockAcquisitionError);
    const outcome = (error as LockAcquisitionError).outcomes[0];
    expect(outcome.status).toBe('restarted');
    expect(await waitFor(() => contender.masterStates()[0].distrust === 'failover', 5_000, 20)).toBe(true);
    const state = contender.masterStates()[0];
    expect(state.distrustedFor).toBeGreaterThan(0);
    expect(state.shard).toContain(String(replica.port));
    expect(state.failovers).toBeGreaterThanOrEqual(1);
    await held.release();
  }, 90_000);

  it('distrusts replicas promoted by CLUSTER FAILOVER FORCE and TAKEOVER after replication was cut (the key lost)', async () => {
    const cut = new Map<number, { primary: RedisMaster; replica: RedisMaster; password: string }>();
    try {
      const { contender, seen } = await contendAfter(
        'forced-failover',
        {
          // Before the key is written, cut the replica off: the primary asks a password the replica lacks.
          before: async (c, key) => {
            // An earlier failover's old primary may still be joining as this shard's replica.
            let shard = await liveShardOf(clusters.clusters[c], key);
            const joined = await waitFor(
              async () => (shard = await liveShardOf(clusters.clusters[c], key)).replicas.length > 0,
              10_000,
              50,
            );
            expect(joined).toBe(true);
            const replica = shard.replicas[0];
            const password = `cut-${Math.random().toString(36).slice(2)}`;
            const client = new Redis({ host: '127.0.0.1', port: shard.primary.port, maxRetriesPerRequest: 0 });
            client.on('error', () => undefined);
            try {
              await client.config('SET', 'requirepass', password);
              cut.set(c, { primary: shard.primary, replica, password });
              await client.call('CLIENT', 'KILL', 'TYPE', 'replica');
            } finally {
              client.disconnect();
            }
            const down = await waitFor(
              async () => /master_link_status:down/.test(String(await nodeCommand(replica, 'INFO', 'replication'))),
              10_000,
              50,
            );
            expect(down).toBe(true);
          },
          change: async (c) => {
            const { replica } = cut.get(c)!;
            await nodeCommand(replica, 'CLUSTER', 'FAILOVER', c === 0 ? 'FORCE' : 'TAKEOVER');
            const promoted = await waitFor(
              async () => /role:master/.test(String(await nodeCommand(replica, 'INFO', 'replication'))),
              10_000,
              50,
            );
            expect(promoted).toBe(true);
          },
        },
        { nodes: userClusters() },
      );
      expectDistrusted(contender, seen, 'failover', /slots? \d+/);
    } finally {
      for (const { primary, password } of cut.values()) {
        const client = new Redis({ host: '127.0.0.1', port: primary.port, password, maxRetriesPerRequest: 0 });
        client.on('error', () => undefined);
        await client.config('SET', 'requirepass', '').catch(() => undefined);
        client.disconnect();
      }
    }
  }, 90_000);

  it('distrusts a shard primary restarted empty in place (same node id, new run_id)', async () => {
    const ids = new Map<number, string>();
    const replicas: RedisMaster[] = [];
    try {
      const { contender, seen } = await contendAfter('restarted-shard', {
        // Keep the replica from failing over while its primary is down: the same node comes back.
        before: async (c, key) => {
          const shard = await liveShardOf(clusters.clusters[c], key);
          for (const r of shard.replicas) {
            await nodeCommand(r, 'CONFIG', 'SET', 'cluster-replica-no-failover', 'yes');
            replicas.push(r);
          }
          ids.set(c, shard.primaryId);
        },
        change: async (c, key) => {
          const shard = await liveShardOf(clusters.clusters[c], key);
          await shard.primary.kill();
          await shard.primary.restart(); // same port and nodes.conf (same node id), no data
          expect((await liveShardOf(clusters.clusters[c], key)).primaryId).toBe(ids.get(c));
        },
      });
      expectDistrusted(contender, seen, 'restarted', /slots? \d+/);
    } finally {
      for (const r of replicas)
        await nodeCommand(r, 'CONFIG', 'SET', 'cluster-replica-no-failover', 'no').catch(() => undefined);
    }
  }, 90_000);
});
