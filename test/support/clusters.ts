import { Redis } from 'ioredis';
import { clusterSlotOf } from '../../lib/core/cluster-slot.js';
import type { RedisCluster } from '../../tools/redis-clusters.js';
import type { RedisMaster } from '../../tools/redis-masters.js';
import { resourceName } from './masters.js';

/** Resources whose `lock:` keys fall in three different shards of a 3-shard cluster. */
export function acrossShards(cluster: RedisCluster, label: string): string[] {
  const found = new Map<number, string>();
  for (let i = 0; found.size < 3; i++) {
    const name = `${resourceName(label)}-${i}`;
    const slot = clusterSlotOf(`lock:${name}`);
    const shard = cluster.shards.findIndex((s) => s.slots[0] <= slot && slot <= s.slots[1]);
    if (!found.has(shard)) found.set(shard, name);
  }
  return [...found.values()];
}

/** Sends one command to one cluster node (a short-lived connection of its own). */
export async function nodeCommand(node: RedisMaster, ...args: (string | number)[]): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port: node.port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(String(args[0]), ...args.slice(1).map(String));
  } finally {
    client.disconnect();
  }
}

/** A shard as the cluster reports it now (failovers swap roles, so `RedisCluster.shards` may be stale). */
export interface LiveShard {
  readonly primary: RedisMaster;
  readonly primaryId: string;
  readonly replicas: readonly RedisMaster[];
}

/** The node ids of `cluster`'s live nodes, by port, as `CLUSTER NODES` on a live node reports them. */
async function clusterNodes(
  cluster: RedisCluster,
): Promise<{ id: string; port: number; master: string; slots: string[]; flags: string }[]> {
  const live = cluster.nodes.filter((n) => n.pid !== undefined);
  for (const node of live) {
    try {
      const text = String(await nodeCommand(node, 'CLUSTER', 'NODES'));
      return text
        .trim()
        .split('\n')
        .map((line) => {
          const [id, address, flags, master, , , , , ...slots] = line.split(' ');
          return { id, port: Number(address.split('@')[0].split(':')[1]), master, slots, flags };
        });
    } catch {
      // try the next live node
    }
  }
  throw new Error('no live node of the cluster answered CLUSTER NODES');
}

/** The shard that serves `key` now: its primary (the node claiming the key's slot) and that primary's replicas. */
export async function liveShardOf(cluster: RedisCluster, key: string): Promise<LiveShard> {
  const slot = clusterSlotOf(key);
  const nodes = await clusterNodes(cluster);
  const owner = nodes.find(
    (n) =>
      n.flags.includes('master') &&
      n.slots.some((range) => {
        if (range.startsWith('[')) return false;
        const [a, b] = range.split('-').map(Number);
        return a <= slot && slot <= (b ?? a);
      }),
  );
  if (!owner) throw new Error(`no primary serves slot ${slot}`);
  const byPort = (port: number): RedisMaster => cluster.nodes.find((n) => n.port === port)!;
  return {
    primary: byPort(owner.port),
    primaryId: owner.id,
    replicas: nodes.filter((n) => n.master === owner.id).map((n) => byPort(n.port)),
  };
}

/** Another primary of `cluster` than `shard`'s (for moving a slot to it). */
export async function otherPrimary(
  cluster: RedisCluster,
  shard: LiveShard,
): Promise<{ node: RedisMaster; id: string }> {
  const nodes = await clusterNodes(cluster);
  const other = nodes.find(
    (n) => n.flags.includes('master') && !n.flags.includes('fail') && n.id !== shard.primaryId && n.slots.length > 0,
  );
  if (!other) throw new Error('the cluster has a single primary');
  return { node: cluster.nodes.find((n) => n.port === other.port)!, id: other.id };
}
