import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import { resolve as resolvePath } from 'node:path';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { RedlockNode } from '../options/redlock-options.js';
import { redact, redactUrl, secretsOf } from '../util/redact.js';
import type { MasterConnection } from './master-connection.js';
import { looksLikeNodeRedis, nodeRedisRefusal, type NodeRedisCommands } from './node-redis/node-redis-client.js';
import { nodeRedisConnection } from './node-redis/node-redis-connection.js';

// The one parser of node entries: `nodes` of the library, and each `--nodes` entry of the CLI.
// It checks an entry and says where it points; it opens nothing (the connection is made lazily by
// `create`, or is the instance given).

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
): NodeSpec {
  const servers = startupLabels(option, startup);
  return {
    label: `cluster:${servers[0] ?? '?'}`,
    servers,
    cluster: true,
    ...(make ? { create: make as unknown as () => Redis } : {}),
    ...(instance ? { instance: instance as unknown as Redis } : {}),
  };
}

/**
 * Where one node entry points, checked: its label (`host:port`, never a password), and how to get
 * its connection (`create` opens one lazily; `instance` is the user's, never closed by the library).
 *
 * @example
 * describeNode('redis://10.0.0.1:6379', 'nodes[0]').label; // '10.0.0.1:6379'
 */
export interface NodeSpec {
  readonly label: string;
  readonly create?: () => Redis;
  readonly instance?: MasterConnection;
  /** A user's connection the library connects when it is not open (and still never closes). */
  readonly connectsIfClosed?: boolean;
  /**
   * The connection records its own `lastError` (once per client, however many Redlocks share it),
   * so no listener is added per instance.
   */
  readonly recordsLastError?: boolean;
  /** A Redis Cluster: one vote, commands routed by slot. */
  readonly cluster?: boolean;
  /** For a cluster, its startup nodes' labels (one server, one vote is checked on them). */
  readonly servers?: string[];
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

/**
 * The label of a server, one spelling per address (`normalizeHost`): `host:port`, `[v6]:port`, or
 * `unix:/abs/path`.
 *
 * @example
 * hostLabel('LOCALHOST', undefined); // '127.0.0.1:6379'
 */
export function hostLabel(host: string | undefined, port: number | undefined, path?: string): string {
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

/**
 * A `redis://` or `rediss://` URL, checked, and its label; a `RedlockConfigError` naming `option`
 * otherwise, never quoting the password.
 *
 * @example
 * parseNodeUrl('redis://:pw@db.example:6380', '--nodes').label; // 'db.example:6380'
 */
export function parseNodeUrl(node: string, option: string): { readonly url: string; readonly label: string } {
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
  return { url: text, label: hostLabel(url.hostname, url.port ? Number(url.port) : undefined) };
}

/** A node-redis client: refused when it is a cluster, pool or sentinel client (no one connection). */
function describeNodeRedis(node: object, option: string): NodeSpec {
  const refusal = nodeRedisRefusal(node, option);
  if (refusal !== undefined) throw new RedlockConfigError(option, refusal);
  const client = node as unknown as NodeRedisCommands;
  const socket = client.options?.socket ?? {};
  return {
    label: hostLabel(socket.host, socket.port, socket.path),
    instance: nodeRedisConnection(client),
    connectsIfClosed: true,
    recordsLastError: true,
  };
}

/** `{ cluster: [startup nodes], options? }`: a Redis Cluster the library opens (and closes). */
function describeClusterEntry(node: object, option: string): NodeSpec {
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

/** ioredis options: a Sentinel group, or one master by host and port (or socket path). */
function describeOptions(o: RedisOptions, option: string): NodeSpec {
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
  const host = o.host?.trim();
  return {
    label: hostLabel(host, o.port === undefined ? undefined : Number(o.port), o.path),
    create: () =>
      new Redis({
        ...OWNED_CONNECTION_DEFAULTS,
        ...o,
        ...(host ? { host } : {}),
        lazyConnect: true,
        enableOfflineQueue: false,
      }),
  };
}

/**
 * Works out where a node entry points, refusing what cannot be a master with a `RedlockConfigError`
 * naming `option`. No connection is made.
 *
 * @example
 * describeNode({ cluster: [{ host: '10.0.0.1', port: 7000 }] }, 'nodes[1]').label; // 'cluster:10.0.0.1:7000'
 */
export function describeNode(node: RedlockNode, option: string): NodeSpec {
  if (looksLikeNodeRedis(node)) return describeNodeRedis(node as object, option);
  if (isClusterInstance(node)) {
    const startup = (node as unknown as { startupNodes?: ClusterNode[] }).startupNodes ?? [];
    return clusterDescription(option, startup, undefined, node);
  }
  if (node !== null && typeof node === 'object' && !isRedisInstance(node) && 'cluster' in node)
    return describeClusterEntry(node, option);
  if (typeof node === 'string') {
    const { url, label } = parseNodeUrl(node, option);
    return {
      label,
      create: () => new Redis(url, { ...OWNED_CONNECTION_DEFAULTS, lazyConnect: true, enableOfflineQueue: false }),
    };
  }
  if (node !== null && typeof node === 'object') {
    if (!isRedisInstance(node)) return describeOptions(node as RedisOptions, option); // node-redis: above
    const o = node.options ?? {};
    return { label: o.sentinels?.length ? sentinelLabel(o) : hostLabel(o.host, o.port, o.path), instance: node };
  }
  throw new RedlockConfigError(
    option,
    `\`${option}\` must be a redis:// URL, ioredis options, an ioredis instance or a node-redis client; got ${node === null ? 'null' : typeof node}.`,
  );
}
