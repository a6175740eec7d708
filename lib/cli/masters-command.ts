// `nestjs-quorum-lock masters`: each master's state, and whether a quorum would count now.
import { driftOf } from '../util/clock.js';
import { clusterInfo } from '../backend/cluster/cluster-probe.js';
import { infoField, uptimeMsOf } from '../backend/info-field.js';
import { REDLOCK_DEFAULTS } from '../options/redlock-options.js';
import { quorumOf } from '../errors/outcomes.js';
import { scrub, type CliNode } from './cli-nodes.js';
import { table, formatMs, type Output } from './table.js';

interface MasterReport {
  master: string;
  reachable: boolean;
  error?: string;
  role?: string;
  version?: string;
  runId?: string;
  uptimeSeconds?: number;
  /** For a cluster: how many shards (primaries) it has; one vote for all of them. */
  shards?: number;
  restartGuard?: { trusted: boolean; distrustedForMs: number; forTtl: number };
  maxmemoryPolicy?: string;
  evicting?: boolean;
  /** The earlier node that is the same server (same `run_id`): its vote would not count twice. */
  sameServerAs?: string;
  /** A server in cluster mode given as a plain master: the library refuses it (most keys answer MOVED). */
  clusterMode?: boolean;
  /** Its vote would count for a lock now: reachable, a master, past the guard, noeviction, no duplicate. */
  counts: boolean;
  /** Why it would not count, when it would not. */
  notCounting?: string;
}

/** Why a master's vote would not count for a lock now (as the library decides), or undefined. */
function whyNotCounting(r: Omit<MasterReport, 'counts'>): string | undefined {
  if (!r.reachable) return 'unreachable';
  if (r.role !== undefined && r.role !== 'master') return `role ${r.role}`;
  if (r.sameServerAs !== undefined) return `same server as ${r.sameServerAs}`;
  if (r.clusterMode) return 'a cluster node: give its cluster as cluster:host:port';
  if (r.evicting) return `maxmemory-policy ${r.maxmemoryPolicy}`;
  if (r.restartGuard && !r.restartGuard.trusted) return 'restart guard';
  return undefined;
}

/** Master `n`'s report as its `INFO` reads (without who it duplicates, nor whether it counts). */
async function readMaster(
  n: CliNode,
  ttl: number,
  guard: number,
  nodes: readonly CliNode[],
): Promise<Omit<MasterReport, 'counts'>> {
  try {
    // A cluster is read as the library reads it: every shard primary's INFO, combined
    // (its youngest shard's uptime, `master` only if every shard's is, run_id per shard).
    const [server, replication, memory, clustering] = n.cluster
      ? await clusterInfo(n.cluster).then((info) => [info, info, info, ''])
      : await Promise.all([
          n.client.info('server'),
          n.client.info('replication'),
          n.client.info('memory'),
          n.client.info('cluster'),
        ]);
    const shards = infoField(server, 'shards');
    const uptimeSeconds = Number(infoField(server, 'uptime_in_seconds') ?? 0);
    const uptimeMs = uptimeMsOf(server); // as the restart guard counts it
    const maxmemoryPolicy = infoField(memory, 'maxmemory_policy');
    return {
      master: n.label,
      reachable: true,
      role: infoField(replication, 'role'),
      version: infoField(server, 'redis_version'),
      runId: infoField(server, 'run_id'),
      uptimeSeconds,
      ...(shards === undefined ? {} : { shards: Number(shards) }),
      restartGuard: {
        trusted: uptimeMs >= guard,
        distrustedForMs: Math.max(0, Math.ceil(guard - uptimeMs)),
        forTtl: ttl,
      },
      ...(maxmemoryPolicy === undefined ? {} : { maxmemoryPolicy, evicting: maxmemoryPolicy !== 'noeviction' }),
      ...(infoField(clustering, 'cluster_enabled') === '1' ? { clusterMode: true } : {}),
    };
  } catch (e) {
    return { master: n.label, reachable: false, error: scrub((e as Error).message, nodes) };
  }
}

/** A cluster's run_id is `slot=id,…` (one per shard): its servers' ids. */
const ids = (runId: string | undefined): string[] => (runId ?? '').split(',').map((x) => x.replace(/^\d+=/, ''));

/** True when two run_ids name the same server (for clusters: if any shard's id is shared). */
const sameServer = (a: string | undefined, b: string | undefined): boolean =>
  a !== undefined && b !== undefined && ids(a).some((x) => x !== '?' && x !== '' && ids(b).includes(x));

/** Each master's report, with the earlier node it duplicates and whether its vote would count. */
function judge(probed: readonly Omit<MasterReport, 'counts'>[]): MasterReport[] {
  return probed.map((p, i) => {
    const first = p.runId === undefined ? -1 : probed.findIndex((q) => sameServer(q.runId, p.runId));
    const r = first >= 0 && first < i ? { ...p, sameServerAs: probed[first].master } : p;
    const why = whyNotCounting(r);
    return { ...r, counts: why === undefined, ...(why === undefined ? {} : { notCounting: why }) };
  });
}

/** The table's row of one master. */
function masterRow(r: MasterReport): string[] {
  return [
    r.master,
    r.reachable ? 'up' : `down (${r.error})`,
    r.role ?? '-',
    r.version ?? '-',
    r.uptimeSeconds === undefined ? '-' : formatMs(r.uptimeSeconds * 1_000),
    !r.restartGuard
      ? '-'
      : r.restartGuard.trusted
        ? 'trusted'
        : `distrusted for ${formatMs(r.restartGuard.distrustedForMs)}`,
    r.maxmemoryPolicy === undefined
      ? '-'
      : r.evicting
        ? `${r.maxmemoryPolicy} (can evict locks: set noeviction)`
        : r.maxmemoryPolicy,
  ];
}

/**
 * `masters`: prints each master's state (reachable, role, version, uptime against the restart guard
 * for locks of `ttl` ms, memory policy), and returns how many would count for a lock now.
 */
export async function masters(
  nodes: readonly CliNode[],
  errors: readonly (Error | undefined)[],
  ttl: number,
  json: boolean,
  out: Output,
): Promise<number> {
  const guard = ttl + driftOf(ttl, REDLOCK_DEFAULTS.driftFactor);
  const probed = await Promise.all(
    nodes.map(async (n, i): Promise<Omit<MasterReport, 'counts'>> => {
      if (errors[i]) return { master: n.label, reachable: false, error: scrub(errors[i].message, nodes) };
      return readMaster(n, ttl, guard, nodes);
    }),
  );
  const reports = judge(probed);
  const counting = reports.filter((r) => r.counts).length;
  const quorum = quorumOf(nodes.length);
  if (json) {
    out.write(`${JSON.stringify({ quorum, counting, masters: reports }, null, 2)}\n`);
    return counting;
  }
  const rows = [['MASTER', 'STATUS', 'ROLE', 'VERSION', 'UPTIME', `RESTART GUARD (ttl ${ttl} ms)`, 'MAXMEMORY-POLICY']];
  for (const r of reports) rows.push(masterRow(r));
  const up = reports.filter((r) => r.reachable).length;
  const notCounting = reports.filter((r) => !r.counts).map((r) => `${r.master}: ${r.notCounting}`);
  out.write(
    table(rows) +
      `${up} of ${nodes.length} reachable; a lock needs ${quorum}.\n` +
      `${counting} of ${nodes.length} count for locks up to ${ttl} ms${notCounting.length ? ` (not: ${notCounting.join('; ')})` : ''}` +
      `${counting >= quorum ? '.' : `: below the quorum of ${quorum}, no lock can be taken now.`}\n`,
  );
  return counting;
}
