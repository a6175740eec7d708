import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { createHash } from 'node:crypto';
import type { Redlock, RedlockOptions } from '../../lib/index.js';
import { clusterStemOf } from '../../lib/backend/cluster/cluster-keys.js';
import { SCRIPTS } from '../../lib/lua/scripts.generated.js';
import { openMasters } from '../../lib/backend/master.js';
import { handoverChannelOf, releaseChannelFor } from '../../lib/kinds/channels.js';
import { Wakeups } from '../../lib/waiting/wakeups.js';
import { startRedisClusters, type RedisClusters } from '../../tools/redis-clusters.js';
import { now, redlockOnClusters, resourceName, startMonitor, waitFor } from '../support/index.js';

/**
 * A Redis Cluster node's subscriber follows several shards, so no handover message from it can be
 * tied to a shard identity the restart guard vetted (docs/handoff.md *Safety*): such a message only
 * wakes the waiter, and the waiter's own attempt, vetted shard by shard, takes the handed key.
 */
describe('handover messages from a Redis Cluster node only wake the waiter (one 3-shard cluster)', () => {
  let clusters: RedisClusters;
  let reader: Cluster;
  const open: Redlock[] = [];
  const closers: (() => void)[] = [];

  // The guard off (the helper's default): the rule holds either way.
  const redlock = (options: Partial<RedlockOptions> = {}): Promise<Redlock> =>
    redlockOnClusters(clusters.clusters.slice(0, 1), open, options);

  beforeAll(async () => {
    clusters = await startRedisClusters(1, { shards: 3 });
    reader = new Cluster(clusters.clusters[0].startupNodes);
  }, 90_000);
  afterEach(async () => {
    for (const close of closers.splice(0)) close();
    await Promise.all(open.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    reader?.disconnect();
    await clusters?.stop();
  });

  it('a handover message is no evidence: the waiter is woken but keeps no handover instant', async () => {
    const cluster = new Cluster(clusters.clusters[0].startupNodes);
    closers.push(() => cluster.disconnect());
    const masters = openMasters([cluster]);
    const wakeups = new Wakeups(masters, true, () => true); // every plain master's handover would count
    closers.push(() => wakeups.close());
    const key = `lock:${resourceName('cluster-message')}`;
    const ticket = wakeups.join([key], 1, `${wakeups.tag}waiter`);
    const channel = handoverChannelOf(releaseChannelFor(masters[0], key), wakeups.tag);
    // Classic pub/sub here (the cluster was not probed): PUBLISH reaches every node.
    expect(
      await waitFor(async () => {
        const [, n] = (await reader.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
        return Number(n) > 0;
      }, 10_000),
    ).toBe(true);
    const woken = ticket.wait(10_000);
    await reader.publish(channel, `value\n${ticket.remoteId}\n${Date.now()}`);
    expect(await woken).toBe(true);
    expect([...ticket.handedAt.keys()]).toEqual([]);
    ticket.leave();
  }, 30_000);

  it('a release still hands the key to the waiter at once, which takes it with an attempt of its own', async () => {
    const resource = resourceName('cluster-handover');
    const key = `lock:${resource}`;
    const queue = `${clusterStemOf(key)}:handoff:queue`;
    const holder = await redlock();
    const waiter = await redlock({ retryDelay: 10_000, retryJitter: 0, retryCount: 3 });
    const held = await holder.acquire(resource, 10_000);
    const waiting = waiter.acquire(resource, 10_000).then((lock) => ({ lock, at: now() }));
    waiting.catch(() => undefined);
    expect(await waitFor(async () => (await reader.zcard(queue)) === 1, 5_000, 50)).toBe(true);
    // Its subscriber listens (sharded on Redis 7+, else classic: count both).
    const release = `__quorum-lock__:${clusterStemOf(key)}`;
    expect(
      await waitFor(async () => {
        const counts = await Promise.all(
          reader.nodes('master').map(async (n) => {
            const [, s] = (await n.call('PUBSUB', 'SHARDNUMSUB', release)) as [string, number];
            const [, c] = (await n.call('PUBSUB', 'NUMSUB', release)) as [string, number];
            return Number(s) + Number(c);
          }),
        );
        return counts.some((n) => n > 0);
      }, 5_000),
    ).toBe(true);

    // Ticket scripts run on the primaries after the release: the waiter's attempt.
    const ticketScript = createHash('sha1').update(SCRIPTS.ticketAcquire.lua).digest('hex');
    let released = false;
    let attemptsAfterRelease = 0;
    for (const node of clusters.clusters[0].shards.map((s) => s.primary)) {
      const monitor = await startMonitor(node.port);
      closers.push(() => monitor.disconnect());
      monitor.on('monitor', (_time: string, args: string[]) => {
        const [command, script] = [args[0]?.toLowerCase(), args[1]];
        if (
          released &&
          ((command === 'evalsha' && script === ticketScript) ||
            (command === 'eval' && script === SCRIPTS.ticketAcquire.lua))
        )
          attemptsAfterRelease++;
      });
    }
    released = true;
    const releasedAt = now();
    await held.release();
    const { lock, at } = await waiting;
    expect({ handedOverQuickly: at - releasedAt < 5_000 }).toEqual({ handedOverQuickly: true });
    expect(await waitFor(() => attemptsAfterRelease > 0, 3_000)).toBe(true);
    expect(await reader.get(key)).toBe(lock.value);
    await lock.release();
  }, 40_000);

  it('close() withdraws a waiter queued on a cluster node: once the holder releases, the key is free', async () => {
    const resource = resourceName('cluster-close');
    const key = `lock:${resource}`;
    const queue = `${clusterStemOf(key)}:handoff:queue`;
    const holder = await redlock();
    const waiter = await redlock({ retryDelay: 10_000, retryJitter: 0, retryCount: 3 });
    const held = await holder.acquire(resource, 10_000);
    const waiting = waiter.acquire(resource, 10_000);
    waiting.catch(() => undefined);
    expect(await waitFor(async () => (await reader.zcard(queue)) === 1, 5_000, 50)).toBe(true);
    await waiter.close();
    await expect(waiting).rejects.toThrow(/closed/);
    await held.release();
    // Nothing handed to the closed waiter (it would hold the key for its TTL).
    expect(await waitFor(async () => (await reader.exists(key, queue)) === 0, 500, 20)).toBe(true);
  }, 30_000);
});
