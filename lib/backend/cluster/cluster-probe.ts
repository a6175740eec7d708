import type { Cluster } from 'ioredis';
import { infoField } from '../info-field.js';

/** Orders `7.0.15` before `7.2.4` (numerically, part by part). */
function byVersion(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] || 0) - (pb[i] || 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Clusters whose every shard primary runs Redis 7 or later, as their last `INFO` said. */
const sharded = new WeakSet<Cluster>();

/**
 * True when release announcements on `cluster` use sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`): every
 * shard primary reported Redis 7+ at the last `INFO` read (`connect()`, then on every failover or
 * reconnect). False until then, and on older servers: classic `PUBLISH`, which every version has.
 *
 * @example
 * const command = usesShardedPubSub(cluster) ? 'spublish' : 'publish';
 */
export function usesShardedPubSub(cluster: Cluster): boolean {
  return sharded.has(cluster);
}

/** The primary (`host:port`) serving each shard, by the first slot it serves, as the client's slot map says. */
export function shardPrimaries(cluster: Cluster): Map<string, number> {
  const first = new Map<string, number>();
  cluster.slots.forEach((owners, slot) => {
    const primary = owners?.[0];
    if (primary !== undefined && !first.has(primary)) first.set(primary, slot);
  });
  return first;
}

/** A fingerprint of the slot map: which primary serves each shard. Changes on a failover or resharding. */
export function topologyOf(cluster: Cluster): string {
  return [...shardPrimaries(cluster)].map(([primary, slot]) => `${slot}=${primary}`).join(',');
}

/**
 * The `INFO` of a whole cluster as one master's: every shard primary is asked, and the fields the
 * restart guard reads are combined per shard (see {@link combineShardInfos}).
 *
 * @example
 * const info = await clusterInfo(cluster); // "run_id:0=ab…,5461=cd…,10923=ef…\r\nuptime_in_seconds:…"
 */
export async function clusterInfo(cluster: Cluster): Promise<string> {
  const primaries = shardPrimaries(cluster);
  const nodes = cluster.nodes('master');
  const byKey = new Map(nodes.map((n) => [`${n.options.host}:${n.options.port}`, n]));
  const shards = [...primaries].sort((a, b) => a[1] - b[1]);
  if (shards.length === 0) throw new Error('the cluster has no slot map yet');
  const infos = await Promise.all(
    shards.map(async ([key, slot]) => {
      const node = byKey.get(key);
      if (!node) throw new Error(`no connection to shard primary ${key}`);
      return { slot, info: await node.info() };
    }),
  );
  return combineShardInfos(cluster, infos);
}

/**
 * Combines the `INFO` of each shard primary (by the first slot it serves) into one master's, so that
 * a change on any shard is a change of the node. `run_id` and `master_replid` become `slot=value`
 * lists; the uptime is the smallest; the role is `master` only when every shard's primary says so;
 * the memory policy is the first one that can evict (else `noeviction`). Also records whether the
 * cluster can use sharded pub/sub (every shard on Redis 7+).
 *
 * @example
 * combineShardInfos(cluster, [{ slot: 0, info: a }, { slot: 8192, info: b }]); // "run_id:0=…,8192=…\r\n…"
 */
export function combineShardInfos(cluster: Cluster, infos: readonly { slot: number; info: string }[]): string {
  const list = (name: string): string =>
    infos.map(({ slot, info }) => `${slot}=${infoField(info, name) ?? '?'}`).join(',');
  const uptime = Math.min(...infos.map(({ info }) => Number(infoField(info, 'uptime_in_seconds') ?? 0)));
  const roles = infos.map(({ info }) => infoField(info, 'role'));
  const policies = infos.map(({ info }) => infoField(info, 'maxmemory_policy'));
  const policy = policies.find((p) => p !== undefined && p !== 'noeviction') ?? policies[0];
  const maxmemory = infoField(infos[0].info, 'maxmemory');
  const major = (info: string): number => Number((infoField(info, 'redis_version') ?? '0').split('.')[0]);
  if (infos.every(({ info }) => major(info) >= 7)) sharded.add(cluster);
  else sharded.delete(cluster);
  return [
    `run_id:${list('run_id')}`,
    `master_replid:${list('master_replid')}`,
    `role:${roles.every((r) => r === 'master') ? 'master' : roles.find((r) => r !== 'master')}`,
    `uptime_in_seconds:${uptime}`,
    ...(policy !== undefined ? [`maxmemory_policy:${policy}`] : []),
    ...(maxmemory !== undefined ? [`maxmemory:${maxmemory}`] : []),
    `shards:${infos.length}`,
    // the oldest shard's version: what every shard supports
    `redis_version:${infos.map(({ info }) => infoField(info, 'redis_version') ?? '?').sort(byVersion)[0]}`,
  ].join('\r\n');
}
