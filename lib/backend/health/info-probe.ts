import { now } from '../../util/clock.js';
import { redactError } from '../../util/redact.js';
import { infoField, uptimeMsOf } from '../info-field.js';
import type { Master } from '../master.js';
import { readClusterIdentity, type ClusterIdentity } from '../cluster/cluster-identity.js';

/** What one master's `INFO` (and `CONFIG GET`, when `INFO` lacks the memory policy) said. */
export interface InfoProbe {
  runId?: string;
  replId?: string;
  uptimeMs?: number;
  role?: string;
  roundTripMs?: number;
  maxmemoryPolicy?: string;
  maxmemory?: number;
  policyUnreadable?: string;
  /** A plain master whose server runs in cluster mode (it answers MOVED for most keys). */
  clusterMode?: boolean;
}

/** One reading of a master: what it said, when its answer arrived, and for a cluster node its shards. */
export interface InfoReading {
  readonly probe: InfoProbe;
  /** Monotonic instant the `INFO` reply arrived: the restart guard counts the uptime back from it. */
  readonly answered: number;
  readonly identity?: ClusterIdentity;
}

/**
 * Reads master's `INFO` (for a cluster node, its shards' `INFO` combined), and `CONFIG GET` when `INFO`
 * lacks the memory policy. `secrets` are scrubbed from the `CONFIG GET` error it reports.
 */
export async function readInfo(master: Master, secrets: readonly string[]): Promise<InfoReading> {
  const asked = now();
  const cluster = master.cluster;
  const identity = cluster ? await readClusterIdentity(cluster) : undefined;
  const info = identity ? identity.info : await master.client.info();
  // The uptime was measured when the server answered, so the guard counts it back from the reply's
  // arrival: counted from the request, a reply held up (a paused server) would date the start early.
  const answered = now();
  const roundTripMs = Math.round((answered - asked) * 100) / 100;
  const probe: InfoProbe = {
    runId: infoField(info, 'run_id'),
    replId: infoField(info, 'master_replid'),
    role: infoField(info, 'role'),
    ...(!cluster && infoField(info, 'cluster_enabled') === '1' ? { clusterMode: true } : {}),
    roundTripMs,
    uptimeMs: uptimeMsOf(info),
    maxmemoryPolicy: infoField(info, 'maxmemory_policy'),
    maxmemory: infoField(info, 'maxmemory') === undefined ? undefined : Number(infoField(info, 'maxmemory')),
  };
  if (probe.maxmemoryPolicy === undefined) await readPolicyByConfig(master, probe, secrets);
  return { probe, answered, ...(identity ? { identity } : {}) };
}

/** `CONFIG GET maxmemory*` into `probe`, or why the policy cannot be read. */
async function readPolicyByConfig(master: Master, probe: InfoProbe, secrets: readonly string[]): Promise<void> {
  try {
    const reply = (await master.client.call('CONFIG', 'GET', 'maxmemory*')) as string[];
    for (let k = 0; k + 1 < reply.length; k += 2) {
      if (reply[k] === 'maxmemory-policy') probe.maxmemoryPolicy = reply[k + 1];
      if (reply[k] === 'maxmemory') probe.maxmemory = Number(reply[k + 1]);
    }
    if (probe.maxmemoryPolicy === undefined) probe.policyUnreadable = 'neither INFO nor CONFIG GET reports it';
  } catch (error) {
    probe.policyUnreadable = `INFO does not report it and CONFIG GET failed (${redactError(error, secrets)}): CONFIG may be disabled or renamed`;
  }
}
