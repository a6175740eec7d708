// The CLI's connections: one per node given on the command line (a master, or a whole cluster).
import { Cluster, Redis } from 'ioredis';
import { redact } from '../util/redact.js';
import { type ClusterEntry, type MasterEntry } from './node-list.js';

/** A node given on the command line (a master, or a whole cluster: one vote): its printable label and a client. */
export interface CliNode {
  readonly label: string;
  /** The connection; for a cluster the ioredis `Cluster` (same command API), also in `cluster`. */
  readonly client: Redis;
  readonly cluster?: Cluster;
  /** Secrets to scrub from anything printed. */
  readonly secrets: readonly string[];
  /** The last connection error (ioredis reports a refused connection as "Connection is closed"). */
  lastError: Error | undefined;
}

/** A connection to one master of `--nodes`, not opened yet, that gives up at once (no retry). */
export function openNode(entry: MasterEntry, timeout: number): CliNode {
  const client = new Redis(entry.url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: timeout,
    commandTimeout: timeout,
    retryStrategy: () => null,
  });
  const node = { label: entry.label, client, secrets: entry.secrets, lastError: undefined as Error | undefined };
  client.on('error', (e: Error) => (node.lastError = e));
  return node;
}

/** A whole Redis Cluster, one vote. */
export function openCluster(entry: ClusterEntry, timeout: number): CliNode {
  const cluster = new Cluster([...entry.startup], {
    lazyConnect: true,
    enableOfflineQueue: false,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: timeout,
    redisOptions: {
      connectTimeout: timeout,
      commandTimeout: timeout,
      maxRetriesPerRequest: 0,
      ...(entry.username ? { username: entry.username } : {}),
      ...(entry.password ? { password: entry.password } : {}),
      ...(entry.tls ? { tls: {} } : {}),
    },
  });
  const node: CliNode = {
    label: entry.label,
    client: cluster as unknown as Redis,
    cluster,
    secrets: entry.secrets,
    lastError: undefined,
  };
  cluster.on('error', (e: Error) => (node.lastError = e));
  return node;
}

/** `text` with every node's secrets (passwords) replaced, for anything the CLI prints. */
export function scrub(text: string, nodes: readonly CliNode[]): string {
  return redact(
    text,
    nodes.flatMap((n) => n.secrets),
  );
}

/** Connects every node at once; per node, undefined or why it could not connect (never rejects). */
export async function connectAll(nodes: readonly CliNode[]): Promise<(Error | undefined)[]> {
  return Promise.all(
    nodes.map((n) =>
      n.client.connect().then(
        () => undefined,
        (e: unknown) => n.lastError ?? (e instanceof Error ? e : new Error(String(e))),
      ),
    ),
  );
}

/**
 * Every lock key matching `match` on one master, by SCAN (never KEYS), up to `limit`: strings
 * (exclusive locks, permit slots, limit records) and sorted sets (readers of read-write locks).
 */
export async function scanKeys(client: Redis, match: string, limit: number): Promise<string[]> {
  const found: string[] = [];
  for (const type of ['string', 'zset']) {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', match, 'COUNT', 1000, 'TYPE', type);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0' && found.length < limit);
  }
  return found.slice(0, limit);
}
