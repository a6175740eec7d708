import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { startRedisClusters, type RedisClusters } from '../../tools/redis-clusters.js';

describe('startRedisClusters', () => {
  let clusters: RedisClusters;
  beforeAll(async () => {
    clusters = await startRedisClusters(2, { shards: 3, replicas: 1 });
  }, 60_000);
  afterAll(async () => {
    await clusters?.stop();
  });

  it('starts independent clusters whose slots are all served', async () => {
    expect(clusters.clusters).toHaveLength(2);
    const ports = clusters.clusters.flatMap((c) => c.nodes.map((n) => n.port));
    expect(new Set(ports).size).toBe(ports.length);
    for (const c of clusters.clusters) {
      expect(c.nodes).toHaveLength(6);
      const client = new Redis(c.startupNodes[0].port, '127.0.0.1');
      const info = await client.cluster('INFO');
      expect(info).toMatch(/cluster_state:ok/);
      expect(info).toMatch(/cluster_known_nodes:6/);
      expect(info).toMatch(/cluster_size:3/);
      client.disconnect();
    }
  });

  it('routes keys of different slots through an ioredis Cluster, apart from the other cluster', async () => {
    const [a, b] = clusters.clusters.map((c) => new Cluster(c.startupNodes));
    try {
      for (let i = 0; i < 20; i++) await a.set(`k${i}`, String(i));
      expect(await a.get('k7')).toBe('7');
      expect(await b.get('k7')).toBeNull();
      expect(a.nodes('master')).toHaveLength(3);
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });

  it('promotes a replica when its primary is killed', async () => {
    const cluster = clusters.clusters[1];
    const shard = cluster.shards[0];
    const replica = shard.replicas[0];
    await shard.primary.kill();
    const deadline = Date.now() + 20_000;
    let role = '';
    while (Date.now() < deadline) {
      const client = new Redis(replica.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
      role = /role:(\w+)/.exec(await client.info('replication'))?.[1] ?? '';
      client.disconnect();
      if (role === 'master') break;
      await sleep(200);
    }
    expect(role).toBe('master');
    await cluster.waitUntilOk();
  }, 40_000);
});
