import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { Redlock } from '../../lib/index.js';
import { clusterStemOf, lockKeyOfClusterStem } from '../../lib/backend/cluster/cluster-keys.js';
import { startRedisClusters, type RedisCluster, type RedisClusters } from '../../tools/redis-clusters.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { builtCli, acrossShards, resourceName, waitFor } from '../support/index.js';

const built = builtCli('cluster');

const cli = built.cli;

/** `cluster:<startup>+<startup>` for `--nodes`: every primary, as URLs and as host:port. */
const spec = (c: RedisCluster): string =>
  `cluster:${c.startupNodes.map((n, i) => (i === 0 ? `redis://${n.host}:${n.port}` : `${n.host}:${n.port}`)).join('+')}`;

describe('the command-line inspector on Redis Cluster nodes (built bin, real local clusters)', () => {
  let clusters: RedisClusters;
  let plain: RedisMasters;
  let redlock: Redlock;

  beforeAll(async () => {
    await built.build();
    // Two clusters of three shards and one plain master: three votes, mixed as the library allows.
    clusters = await startRedisClusters(2, { shards: 3 });
    plain = await startRedisMasters(1);
    redlock = new Redlock({
      nodes: [...clusters.clusters.map((c) => ({ cluster: c.startupNodes })), plain.urls[0]],
      restartGuard: false,
      retryCount: 0,
    });
    await redlock.connect();
  }, 180_000);
  afterAll(async () => {
    await redlock?.close();
    await clusters?.stop();
    await plain?.stop();
    built.remove();
  });

  const nodes = (): string => [...clusters.clusters.map(spec), plain.urls[0]].join(',');

  it('inspect: lists locks held on every shard of each cluster, one vote per cluster, companions under their resource', async () => {
    const [a] = clusters.clusters;
    const exclusive = acrossShards(a, 'cl-order');
    const counted = resourceName('cl-permits');
    const locks = await Promise.all(exclusive.map((r) => redlock.acquire(r, 30_000)));
    const permit = await redlock.acquire(counted, 30_000, { limit: 2 });
    try {
      const table = await cli('inspect', '--nodes', nodes());
      expect(table.stderr).toBe('');
      expect(table.code).toBe(0);
      const lines = table.stdout.split('\n');
      expect(lines[0]).toContain(`3 masters (quorum 2): cluster:${a.startupNodes[0].host}:${a.startupNodes[0].port}`);
      for (const r of exclusive) {
        const line = lines.find((l) => l.startsWith(`${r} `));
        expect(line).toMatch(/\bheld\s+3\/3\s+\d+(\.\d)? s\s+/);
      }
      // The permit keys are `lock:<r>{lock:<r>}:permit:0` on a cluster: shown as the resource's permit row.
      expect(lines.find((l) => l.startsWith(`${counted} `))).toMatch(/\bpermit [12]\/2\s+3\/3\s+/);
      expect(table.stdout).not.toContain('{lock:');

      const json = JSON.parse((await cli('inspect', '--nodes', nodes(), '--json', 'cl-*')).stdout) as {
        nodes: { master: string; error?: string }[];
        quorum: number;
        locks: { resource: string; held: boolean; agreeing: number; permits?: { held: number } }[];
      };
      expect(json.nodes).toHaveLength(3);
      expect(json.nodes.every((n) => n.error === undefined)).toBe(true);
      expect(json.quorum).toBe(2);
      for (const r of exclusive)
        expect(json.locks.find((l) => l.resource === r)).toMatchObject({ held: true, agreeing: 3 });
      expect(json.locks.find((l) => l.resource === counted)?.permits?.held).toBe(1);
      expect(json.locks.map((l) => l.resource).sort()).toEqual([...exclusive, counted].sort());
    } finally {
      await Promise.all([...locks, permit].map((l) => l.release()));
    }
  }, 60_000);

  it('inspect: finds keys that only one cluster holds, on each of its shards (SCAN on every primary)', async () => {
    const [a] = clusters.clusters;
    const strays = acrossShards(a, 'cl-stray');
    const writer = new Cluster(a.startupNodes);
    try {
      for (const r of strays) await writer.set(`lock:${r}`, 'stray-holder', 'PX', 30_000);
      const table = await cli('inspect', '--nodes', nodes(), 'cl-stray*');
      expect(table.code).toBe(0);
      const lines = table.stdout.split('\n');
      for (const r of strays) expect(lines.find((l) => l.startsWith(`${r} `))).toMatch(/\bminority\s+1\/3\s+/);
    } finally {
      await Promise.all(strays.map((r) => writer.del(`lock:${r}`)));
      writer.disconnect();
    }
  }, 60_000);

  it('masters: one row per cluster (every shard a primary, its youngest uptime), duplicates and quorum decide the exit code', async () => {
    const [a, b] = clusters.clusters;
    const label = (c: RedisCluster): string => `cluster:${c.startupNodes[0].host}:${c.startupNodes[0].port}`;
    // Past a 1 ms restart guard from an uptime of 2 s on (INFO counts whole seconds, one short).
    expect(
      await waitFor(
        async () => (await cli('masters', '--nodes', nodes(), '--ttl', '1')).stdout.includes('3 of 3 count for locks'),
        15_000,
        500,
      ),
    ).toBe(true);
    const res = await cli('masters', '--nodes', nodes(), '--ttl', '1');
    const rows = res.stdout.split('\n');
    for (const c of [a, b])
      expect(rows.find((l) => l.startsWith(`${label(c)} `))).toMatch(
        /\bup\s+master\s+\d+\.\d+\.\d+\s+\S+ s\s+trusted\s+noeviction$/,
      );
    expect(res.stdout).toContain('3 of 3 reachable; a lock needs 2.');

    const json = JSON.parse((await cli('masters', '--nodes', nodes(), '--ttl', '1', '--json')).stdout) as {
      counting: number;
      masters: { master: string; shards?: number; counts: boolean }[];
    };
    expect(json.counting).toBe(3);
    expect(json.masters.map((m) => m.shards)).toEqual([3, 3, undefined]);

    // The same cluster through another startup node is the same servers: its vote does not count twice.
    const again = `cluster:${a.startupNodes[2].host}:${a.startupNodes[2].port}`;
    const twice = await cli('masters', '--nodes', [spec(a), again, 'redis://127.0.0.1:1'].join(','), '--ttl', '1');
    expect(twice.code).toBe(1);
    expect(twice.stdout).toContain(`same server as ${label(a)}`);
    expect(twice.stdout).toContain('1 of 3 count for locks');

    // One of its shard primaries given as a plain master is one of its servers: no second vote.
    const shard = `redis://${a.startupNodes[1].host}:${a.startupNodes[1].port}`;
    const overlap = await cli('masters', '--nodes', [spec(a), shard, spec(b)].join(','), '--ttl', '1');
    expect(overlap.code).toBe(0);
    expect(overlap.stdout).toContain(`${a.startupNodes[1].host}:${a.startupNodes[1].port}: same server as ${label(a)}`);
    expect(overlap.stdout).toContain('2 of 3 count for locks');

    // A cluster's node given as a plain master would not count: the library refuses it.
    const asPlain = `${b.startupNodes[0].host}:${b.startupNodes[0].port}`;
    const misused = await cli(
      'masters',
      '--nodes',
      [`redis://${asPlain}`, spec(a), plain.urls[0]].join(','),
      '--ttl',
      '1',
    );
    expect(misused.code).toBe(0);
    expect(misused.stdout).toContain(`${asPlain}: a cluster node: give its cluster as cluster:host:port`);
    expect(misused.stdout).toContain('2 of 3 count for locks');

    // A cluster nobody answers for is down; below a quorum the exit code is 1.
    const down = await cli(
      'masters',
      '--nodes',
      [spec(a), 'cluster:127.0.0.1:1+127.0.0.1:2', 'redis://127.0.0.1:3'].join(','),
    );
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(/cluster:127\.0\.0\.1:1\s+down \(/);
    expect(down.stdout).toContain('1 of 3 reachable; a lock needs 2.');
    const inspectDown = await cli(
      'inspect',
      '--nodes',
      [spec(a), 'cluster:127.0.0.1:1', 'redis://127.0.0.1:3'].join(','),
    );
    expect(inspectDown.code).toBe(1);
  }, 90_000);

  it('bad cluster syntax is bad usage (exit 2), naming --nodes', async () => {
    const empty = await cli('masters', '--nodes', 'cluster:,redis://127.0.0.1:1');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('--nodes: cluster: lists no startup node');
    const bad = await cli('inspect', '--nodes', 'cluster:http://user:hunter2@x:1');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--nodes');
    expect(bad.stderr).not.toContain('hunter2');
  });

  it('lockKeyOfClusterStem inverts clusterStemOf for every key shape', () => {
    for (const key of [
      'lock:orders',
      'lock:{order-42}:payment',
      'lock:a}b',
      'lock:a{b',
      'lock:{}x',
      'lock:orders{lock:orders}',
    ])
      expect(lockKeyOfClusterStem(clusterStemOf(key))).toBe(key);
  });
});
