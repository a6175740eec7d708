import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { resolve as resolvePath } from 'node:path';
import type { RedlockNode } from '../options/redlock-options.js';
import { redact, redactUrl, secretsOf } from '../util/redact.js';
import type { MasterConnection } from './master-connection.js';
import { looksLikeNodeRedis, nodeRedisRefusal, type NodeRedisCommands } from './node-redis/node-redis-client.js';
import { nodeRedisConnection } from './node-redis/node-redis-connection.js';
import { defineScripts, type ScriptedClient } from '../lua/scripts.js';
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
  readonly scripts: ScriptedClient;
  /** True when the library opened the connection and so must close it. */
  readonly owned: boolean;
  /** A user's node-redis client: the library connects it if it is not open (and still never closes it). */
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

/** Connection settings for the connections the library opens: fail fast when a master is down. */
const OWNED_CONNECTION_DEFAULTS: RedisOptions = {
  maxRetriesPerRequest: 0,
  // ioredis waits this long for a socket to close on disconnect(), on a timer that holds the process
  // open; with a master down the close never comes, so keep it short.
  disconnectTimeout: 100,
  retryStrategy: (times) => Math.min(times * 50, 1_000),
};

/** Connection settings for the clusters the library opens: find failovers quickly, fail fast per node. */
const OWNED_CLUSTER_DEFAULTS: ClusterOptions = {
  // A periodic slot refresh is how a failover with no command in flight is noticed (see docs/cluster.md).
  slotsRefreshInterval: 1_000,
  retryDelayOnFailover: 100,
  redisOptions: { maxRetriesPerRequest: 0, disconnectTimeout: 100 },
};

/** True for an ioredis `Cluster`. */
export function isClusterInstance(node: unknown): node is Cluster {
  return (
    node !== null &&
    typeof node === 'object' &&
    (node as { isCluster?: unknown }).isCluster === true &&
    typeof (node as Cluster).nodes === 'function'
  );
}

function startupLabels(option: string, startup: readonly ClusterNode[]): string[] {
  return startup.map((n, k) => {
    if (typeof n === 'number') return hostLabel(undefined, n);
    if (typeof n === 'string') {
      if (/^\d+$/.test(n)) return hostLabel(undefined, Number(n));
      try {
        const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(n) ? n : `redis://${n}`);
        return hostLabel(url.hostname, url.port ? Number(url.port) : undefined);
      } catch {
        throw new RedlockConfigError(
          option,
          `\`${option}.cluster[${k}]\` is not a host:port or redis:// URL: ${JSON.stringify(redactUrl(n))}.`,
        );
      }
    }
    if (n !== null && typeof n === 'object') {
      checkPort(`${option}.cluster[${k}]`, n.port, JSON.stringify({ host: n.host, port: n.port }));
      return hostLabel(n.host, n.port === undefined ? undefined : Number(n.port));
    }
    throw new RedlockConfigError(
      option,
      `\`${option}.cluster[${k}]\` must be { host, port }, "host:port" or a port; got ${n === null ? 'null' : typeof n}.`,
    );
  });
}

function clusterDescription(
  option: string,
  startup: readonly ClusterNode[],
  make?: () => Cluster,
  instance?: Cluster,
): Described {
  const servers = startupLabels(option, startup);
  return {
    label: `cluster:${servers[0] ?? '?'}`,
    servers,
    cluster: true,
    ...(make ? { create: make as unknown as () => Redis } : {}),
    ...(instance ? { instance: instance as unknown as Redis } : {}),
  };
}

interface Described {
  label: string;
  create?: () => Redis;
  instance?: MasterConnection;
  /** A node-redis client: connected if not open, never closed. */
  nodeRedis?: boolean;
  cluster?: boolean;
  servers?: string[];
}

function isRedisInstance(node: object): node is Redis {
  return typeof (node as Redis).defineCommand === 'function' && typeof (node as Redis).sendCommand === 'function';
}

/**
 * One spelling per address, so that a master listed twice is seen at start-up: `LOCALHOST`, `::1`
 * and `127.1` are all 127.0.0.1; IPv6 forms are compressed; IPv4-mapped IPv6 is IPv4. A host name
 * that resolves to another node's address is caught at connect time by the server's `run_id`.
 */
function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase().replace(/\.$/, '');
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h === '' || h === 'localhost' || h.endsWith('.localhost')) return '127.0.0.1';
  if (h.includes(':')) {
    try {
      h = new URL(`http://[${h}]`).hostname.slice(1, -1);
    } catch {
      return h;
    }
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
    if (mapped) {
      const hi = parseInt(mapped[1], 16);
      const lo = parseInt(mapped[2], 16);
      return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
    }
    return h === '::1' ? '127.0.0.1' : h;
  }
  if (/^[0-9a-fx.]+$/.test(h)) {
    try {
      return new URL(`http://${h}`).hostname; // WHATWG parsing: 127.1, 0x7f.1, 2130706433 → 127.0.0.1
    } catch {
      return h;
    }
  }
  return h;
}

function hostLabel(host: string | undefined, port: number | undefined, path?: string): string {
  if (path) return `unix:${resolvePath(path)}`;
  const h = normalizeHost(host ?? 'localhost');
  return `${h.includes(':') ? `[${h}]` : h}:${port ?? 6379}`;
}

/** A Sentinel-managed group is named by its master name and first sentinel. */
function sentinelLabel(o: RedisOptions): string {
  const first = o.sentinels![0] as { host?: string; port?: number };
  return `sentinel:${o.name ?? 'mymaster'}@${hostLabel(first.host, first.port ?? 26379)}`;
}

function checkPort(option: string, port: unknown, shown: string): void {
  if (port === undefined) return;
  const n = typeof port === 'string' && /^\d+$/.test(port) ? Number(port) : port;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65_535) {
    throw new RedlockConfigError(
      option,
      `\`${option}\` has a bad port (${typeof port === 'string' ? JSON.stringify(port) : typeof port === 'number' ? String(port) : typeof port}) in ${shown}: a port is a whole number from 1 to 65535.`,
    );
  }
}

/** Works out where a node points, refusing what cannot be a master. No connection is made. */
function describeNode(node: RedlockNode, index: number): Described {
  const option = `nodes[${index}]`;
  if (looksLikeNodeRedis(node)) {
    const refusal = nodeRedisRefusal(node as object, option);
    if (refusal !== undefined) throw new RedlockConfigError(option, refusal);
    const client = node as unknown as NodeRedisCommands;
    const socket = client.options?.socket ?? {};
    return {
      label: hostLabel(socket.host, socket.port, socket.path),
      instance: nodeRedisConnection(client),
      nodeRedis: true,
    };
  }
  if (isClusterInstance(node)) {
    const startup = (node as unknown as { startupNodes?: ClusterNode[] }).startupNodes ?? [];
    return clusterDescription(option, startup, undefined, node);
  }
  if (node !== null && typeof node === 'object' && !isRedisInstance(node) && 'cluster' in node) {
    const { cluster: startup, options } = node as { cluster: unknown; options?: ClusterOptions };
    if (!Array.isArray(startup) || startup.length === 0) {
      throw new RedlockConfigError(
        option,
        `\`${option}.cluster\` must list the cluster's startup nodes ([{ host, port }, …]); got ${Array.isArray(startup) ? 'an empty list' : typeof startup}.`,
      );
    }
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new RedlockConfigError(
        option,
        `\`${option}.options\` must be ioredis ClusterOptions (an object); got ${options === null ? 'null' : typeof options}.`,
      );
    }
    const merged: ClusterOptions = {
      ...OWNED_CLUSTER_DEFAULTS,
      ...options,
      redisOptions: { ...OWNED_CLUSTER_DEFAULTS.redisOptions, ...options?.redisOptions },
      lazyConnect: true,
    };
    return clusterDescription(option, startup as ClusterNode[], () => new Cluster(startup as ClusterNode[], merged));
  }
  if (typeof node === 'string') {
    const text = node.trim();
    const secrets = secretsOf([text]);
    const shown = JSON.stringify(redact(text, secrets));
    if (text === '') {
      throw new RedlockConfigError(
        option,
        `\`${option}\` is empty${node === '' ? '' : ' (only spaces)'}: a stray comma in a node list? Give a redis://host:port URL.`,
      );
    }
    if (/\s/.test(text)) {
      throw new RedlockConfigError(
        option,
        `\`${option}\` contains a space: ${shown}. Give one redis://host:port URL per entry.`,
      );
    }
    // User info ends at the last `@` (a mistyped password may hold `/`), so its text is never read as the port.
    const authority = /^[a-z][a-z0-9+.-]*:\/\/(.*)$/is.exec(text)?.[1];
    const hostPort = authority?.slice(authority.lastIndexOf('@') + 1).split(/[/?#]/, 1)[0];
    const port = hostPort === undefined ? undefined : /^(?:\[[^\]]*\]|[^:]*):(.*)$/s.exec(hostPort)?.[1];
    if (port !== undefined && port !== '') checkPort(option, redact(port, secrets), shown);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new RedlockConfigError(
        option,
        `\`${option}\` is not a valid URL: ${shown}. Use redis://host:port or rediss://host:port.`,
      );
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw new RedlockConfigError(option, `\`${option}\` must be a redis:// or rediss:// URL; got ${shown}.`);
    }
    if (!url.hostname)
      throw new RedlockConfigError(option, `\`${option}\` names no host: ${shown}. Use redis://host:port.`);
    const label = hostLabel(url.hostname, url.port ? Number(url.port) : undefined);
    return {
      label,
      create: () => new Redis(text, { ...OWNED_CONNECTION_DEFAULTS, lazyConnect: true, enableOfflineQueue: false }),
    };
  }
  if (node !== null && typeof node === 'object') {
    if (isRedisInstance(node)) {
      const o = node.options ?? {};
      return {
        label: o.sentinels?.length ? sentinelLabel(o) : hostLabel(o.host, o.port, o.path),
        instance: node,
      };
    }
    const o = node as RedisOptions; // node-redis clients were described above
    if (o.sentinels?.length) {
      return {
        label: sentinelLabel(o),
        create: () => new Redis({ ...OWNED_CONNECTION_DEFAULTS, ...o, lazyConnect: true, enableOfflineQueue: false }),
      };
    }
    const shown = `{ host: ${JSON.stringify(o.host ?? 'localhost')}, port: ${String(o.port ?? 6379)} }`;
    if (o.host !== undefined && (typeof o.host !== 'string' || o.host.trim() === '')) {
      throw new RedlockConfigError(
        option,
        `\`${option}.host\` must be a non-empty host name or address; got ${typeof o.host === 'string' ? '""' : typeof o.host}.`,
      );
    }
    if (typeof o.host === 'string' && /[/@]/.test(o.host)) {
      // Never quoted: a URL put here may carry a password, and the host would become the master's label.
      throw new RedlockConfigError(
        option,
        `\`${option}.host\` must be a host name or address, not a URL; give a redis:// URL as the entry itself, or \`{ host, port, password }\`.`,
      );
    }
    checkPort(option, o.port, shown);
    return {
      label: hostLabel(o.host?.trim(), o.port === undefined ? undefined : Number(o.port), o.path),
      create: () =>
        new Redis({
          ...OWNED_CONNECTION_DEFAULTS,
          ...o,
          ...(o.host ? { host: o.host.trim() } : {}),
          lazyConnect: true,
          enableOfflineQueue: false,
        }),
    };
  }
  throw new RedlockConfigError(
    option,
    `\`${option}\` must be a redis:// URL, ioredis options, an ioredis instance or a node-redis client; got ${node === null ? 'null' : typeof node}.`,
  );
}

/**
 * Turns `nodes` into masters. Refuses a master listed twice (its vote would count twice) before any
 * connection is opened; the connections it opens are lazy until `connectMasters`.
 */
export function openMasters(nodes: readonly RedlockNode[]): Master[] {
  const described = nodes.map(describeNode);
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
      scripts: cluster ? clusterScripts(cluster) : defineScripts(client),
      owned: !d.instance,
      ...(d.nodeRedis ? { connectsIfClosed: true } : {}),
    };
    if (d.nodeRedis) {
      // The adapter (one per client, shared by every Redlock) records it: no listener per instance.
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
