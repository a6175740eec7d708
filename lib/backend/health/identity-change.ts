import { compareShards, type ClusterIdentity } from '../cluster/cluster-identity.js';
import type { InfoProbe } from './info-probe.js';
import type { IdentityChange } from './restart-guard.js';

/** How a master's identity changed between two readings, and the uptime that dates the change. */
export interface ObservedChange {
  readonly change: IdentityChange;
  readonly uptimeMs: number;
  /** For a cluster node: the shard that changed. */
  readonly shard?: string;
}

/**
 * Compares a master's new reading with its last: a new `run_id` is a restart; the same `run_id` with
 * a new `master_replid` on a master is a failover (a promotion). A cluster node is compared shard by
 * shard, slot by slot (docs/cluster.md). The first reading of a master is `first`.
 *
 * @param before The last reading of a plain master (`{}` before any).
 * @param vetted A cluster node's shards as last vetted (undefined before any, and for a plain master).
 * @param identity A cluster node's shards as just read.
 */
export function identityChange(
  before: InfoProbe,
  probe: InfoProbe,
  vetted: ClusterIdentity | undefined,
  identity: ClusterIdentity | undefined,
): ObservedChange {
  if (identity) {
    if (!vetted) return { change: 'first', uptimeMs: probe.uptimeMs ?? 0 };
    const shard = compareShards(vetted.shards, identity.shards);
    return {
      change: shard.change,
      uptimeMs: shard.uptimeMs,
      ...(shard.shard !== undefined ? { shard: shard.shard } : {}),
    };
  }
  const uptimeMs = probe.uptimeMs ?? 0;
  if (before.runId === undefined) return { change: 'first', uptimeMs };
  if (probe.runId !== before.runId) return { change: 'restarted', uptimeMs };
  if (
    probe.replId !== undefined &&
    before.replId !== undefined &&
    probe.replId !== before.replId &&
    probe.role === 'master'
  )
    return { change: 'failover', uptimeMs };
  return { change: 'same', uptimeMs };
}
