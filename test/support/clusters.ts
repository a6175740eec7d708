import { Redlock, type RedlockOptions } from '../../lib/index.js';
import { clusterSlotOf } from '../../lib/backend/cluster/cluster-slot.js';
import { nodeCommand, type RedisCluster } from '../../tools/redis-clusters.js';
import type { RedisMaster } from '../../tools/redis-masters.js';
import { resourceName } from './masters.js';

export { nodeCommand };

/** A logger that drops everything: cluster clients log every redirection and reconnect. */
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * A connected Redlock with one vote per cluster of `clusters`, logger quiet and the restart guard
 * off (it would only distrust the fresh clusters for a while); pushed onto `open` so the suite
 * closes it. `options` override any of these.
 * @example
 * const redlock = (options = {}) => redlockOnClusters(clusters.clusters, open, options);
 */
export async function redlockOnClusters(
  clusters: readonly RedisCluster[],
  open: Redlock[],
  options: Partial<RedlockOptions> = {},
): Promise<Redlock> {
  const redlock = new Redlock({
    nodes: clusters.map((c) => ({ cluster: c.startupNodes })),
    restartGuard: false,
    logger: quiet,
    ...options,
  });
  open.push(redlock);
  await redlock.connect();
  return redlock;
}

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
