import type { Cluster } from 'ioredis';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { RedlockNode } from '../options/redlock-options.js';
import { redactUrl } from '../util/redact.js';
import type { MasterConnection } from './master-connection.js';
import { describeNode } from './node-spec.js';
import type { LockScripts } from '../lua/scripts.js';
import { plainScripts } from './direct-scripts.js';
import { clusterScripts } from './cluster/cluster-scripts.js';

/** One Redis master as the library sees it. */
export interface Master {
  /** `host:port` (or the socket path), for error messages and outcomes; never holds a password. */
  readonly label: string;
  /** Its position in `nodes`. */
  readonly index: number;
  /**
   * The connection: an ioredis `Redis`, a node-redis client behind `NodeRedisConnection`, or for a
   * Redis Cluster node the ioredis `Cluster` (same command API), also in `cluster`.
   */
  readonly client: MasterConnection;
  /** Set when this node is a Redis Cluster: one vote for the whole cluster, commands routed by slot. */
  readonly cluster?: Cluster;
  /** For a cluster, the `host:port` of its startup nodes (one server, one vote is checked on them). */
  readonly servers?: readonly string[];
  /**
   * Every script of the library on this master. On a cluster node each call is split by hash slot
   * and the replies merged by the script's declared rule (`clusterScripts`); elsewhere it is the
   * connection itself.
   */
  readonly scripts: LockScripts;
  /** True when the library opened the connection and so must close it. */
  readonly owned: boolean;
  /** A user's connection the library connects if it is not open (a node-redis client), and still never closes. */
  readonly connectsIfClosed?: boolean;
  /** The last connection error of a connection the library owns (cleared when it is ready). */
  lastError?: Error;
  /**
   * Set while this master's vote can never count: the same server as an earlier node, or an
   * evicting `maxmemory-policy`. Rounds then send it nothing: a duplicate reached first would take
   * the key on the real server ahead of that server's own node.
   */
  excluded?: 'duplicate' | 'evicting-policy';
}

/**
 * Turns `nodes` into masters. Refuses a master listed twice (its vote would count twice) before any
 * connection is opened; the connections it opens are lazy until `connectMasters`.
 */
export function openMasters(nodes: readonly RedlockNode[]): Master[] {
  const described = nodes.map((node, i) => describeNode(node, `nodes[${i}]`));
  const seen = new Map<string, number>();
  described.forEach((d, i) => {
    const first = seen.get(d.label);
    if (first !== undefined) {
      throw new RedlockConfigError(
        `nodes[${i}]`,
        `\`nodes[${i}]\` is the same master as \`nodes[${first}]\` (${d.label}); its vote would count twice. List each independent master once.`,
      );
    }
    seen.set(d.label, i);
  });
  // One server, one vote: a cluster's startup nodes must not be another entry's server.
  const servers = new Map<string, number>();
  described.forEach((d, i) => {
    for (const server of d.servers ?? (d.label.startsWith('sentinel:') ? [] : [d.label])) {
      const first = servers.get(server);
      if (first !== undefined && first !== i) {
        throw new RedlockConfigError(
          `nodes[${i}]`,
          `\`nodes[${i}]\` (${d.label}) and \`nodes[${first}]\` (${described[first].label}) both point at ${server}; one server has one vote. Give each independent master or cluster once (a cluster is one entry, whatever its number of shards).`,
        );
      }
      servers.set(server, i);
    }
  });
  return described.map((d, index) => {
    const client: MasterConnection = d.instance ?? d.create!();
    const cluster = d.cluster ? (client as unknown as Cluster) : undefined;
    const master: Master = {
      label: d.label,
      index,
      client,
      ...(cluster ? { cluster, servers: d.servers } : {}),
      scripts: cluster ? clusterScripts(cluster) : plainScripts(client),
      owned: !d.instance,
      ...(d.connectsIfClosed ? { connectsIfClosed: true } : {}),
    };
    if (d.recordsLastError) {
      Object.defineProperty(master, 'lastError', { get: () => (client as { lastError?: Error }).lastError });
    }
    if (!d.instance) {
      // Outcomes and the start-up log carry the errors; this also avoids "Unhandled error event" noise.
      client.on('error', (error: Error) => (master.lastError = error));
      client.on('ready', () => (master.lastError = undefined));
    }
    return master;
  });
}

/**
 * The error to report for a command that failed on `master`: when the connection is down, ioredis
 * says only "Stream isn't writeable…"; the network error that brought it down (for example
 * `connect ECONNREFUSED 127.0.0.1:1`) says what to fix.
 */
export function explainFailure(master: Master, error: Error): Error {
  if (!master.cluster && /^MOVED \d+ /.test(error.message)) {
    return new RedlockConfigError(
      `nodes[${master.index}]`,
      `${master.label} is a Redis Cluster node (it answered ${error.message.split(' ').slice(0, 3).join(' ')}): give the cluster as one entry, \`{ cluster: [{ host, port }] }\` or an ioredis \`Cluster\`, not as a plain master.`,
    );
  }
  const last = master.lastError;
  if (
    last &&
    master.client.status !== 'ready' &&
    /Stream isn't writeable|Connection is closed|enableOfflineQueue|client is (?:closed|offline)/i.test(error.message)
  ) {
    return new Error(`${master.label} is unreachable: ${redactUrl(last.message)}`, { cause: error });
  }
  return error;
}

/** Connects the masters the library opened, waiting at most `timeoutMs`; masters still down keep reconnecting. */
export async function connectMasters(masters: readonly Master[], timeoutMs: number): Promise<void> {
  const pending = masters
    .filter((m) => (m.owned || m.connectsIfClosed) && m.client.status === 'wait')
    .map((m) => m.client.connect().catch(() => undefined));
  if (pending.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
    timer.unref();
  });
  await Promise.race([Promise.all(pending), timeout]);
  clearTimeout(timer);
  // A cluster's connect() resolves before it emits 'ready' (on the next tick), which starts the
  // probe of its shards that `connect()` then waits for.
  if (masters.some((m) => m.cluster)) await new Promise((resolve) => setImmediate(resolve));
}

/** Closes the connections the library opened; user-supplied instances are left open. */
export function closeMasters(masters: readonly Master[]): void {
  for (const m of masters) if (m.owned) m.client.disconnect();
}
