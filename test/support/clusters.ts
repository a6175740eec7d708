import { clusterSlotOf } from '../../lib/core/cluster-slot.js';
import type { RedisCluster } from '../../tools/redis-clusters.js';
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
