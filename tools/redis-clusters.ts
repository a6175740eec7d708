/**
 * Starts independent Redis Clusters on free 127.0.0.1 ports for tests, benchmarks and fault
 * injection: each cluster is `shards` primaries (the 16384 slots split evenly) with `replicas`
 * replicas per primary, every node a `redis-server --cluster-enabled yes` process of its own,
 * controlled like the masters of `redis-masters.ts` (pause, kill, restart, stop by pid).
 * Framework-free: Node built-ins and ioredis only.
 */
import { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort, startRedisMasters, type RedisMaster } from './redis-masters.js';
/** The hash slot of a key, as Redis Cluster computes it (the library's own function). */
export { clusterSlotOf } from '../lib/backend/cluster/cluster-slot.js';

const HOST = '127.0.0.1';
const SLOTS = 16_384;
const READY_TIMEOUT_MS = 15_000;

/** One shard of a cluster: its primary and its replicas, as started (a failover swaps the roles). */
export interface RedisClusterShard {
  readonly primary: RedisMaster;
  readonly replicas: readonly RedisMaster[];
  /** The first and last slot the shard was given. */
  readonly slots: readonly [number, number];
}

/**
 * One running cluster.
 * @example
 * const cluster = new Cluster(redisCluster.startupNodes);
 */
export interface RedisCluster {
  readonly shards: readonly RedisClusterShard[];
  /** Every node, primaries first. */
  readonly nodes: readonly RedisMaster[];
  /** `{ host, port }` of each primary, for `new Cluster(startupNodes)`. */
  readonly startupNodes: { host: string; port: number }[];
  /** Waits until every live node reports `cluster_state:ok`. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** Stops every node. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Several independent clusters (each one vote in a Redlock `nodes` list).
 * @example
 * await using clusters = await startRedisClusters(3, { shards: 3 });
 * const redlock = new Redlock({ nodes: clusters.clusters.map((c) => ({ cluster: c.startupNodes })) });
 */
export interface RedisClusters extends AsyncDisposable {
  readonly clusters: readonly RedisCluster[];
  stop(): Promise<void>;
}

/** Options of {@link startRedisClusters}. */
export interface RedisClusterOptions {
  /** Primaries per cluster. @default 3 */
  shards?: number;
  /** Replicas per primary. @default 0 */
  replicas?: number;
  /** `redis-server` binary. @default `$REDIS_SERVER` or `redis-server` from PATH */
  redisServer?: string;
  /** Extra server arguments for every node. */
  args?: readonly string[];
}

/**
 * Sends one command to one cluster node over a short-lived connection of its own (no cluster
 * redirection, no retries, no offline queue: a paused or dead node fails at once).
 * @example
 * const myId = String(await nodeCommand(cluster.shards[0].primary, 'CLUSTER', 'MYID'));
 */
export async function nodeCommand(node: RedisMaster, ...args: (string | number)[]): Promise<unknown> {
  const client = new Redis({
    host: HOST,
    port: node.port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(String(args[0]), ...args.slice(1).map(String));
  } finally {
    client.disconnect();
  }
}

async function startCluster(
  options: Required<Omit<RedisClusterOptions, 'redisServer'>> & { redisServer?: string },
): Promise<RedisCluster> {
  const { shards, replicas } = options;
  // The cluster bus listens on a port of its own; pick it free too, rather than port + 10000, which
  // can fall outside the port range for high ephemeral ports.
  const busPorts = new Map<number, number>();
  const args = (port: number): string[] => {
    const bus = busPorts.get(port);
    if (bus === undefined) throw new Error(`no cluster bus port reserved for ${port}`);
    return [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      `nodes-${port}.conf`,
      '--cluster-port',
      String(bus),
      '--cluster-node-timeout',
      '1000',
      '--cluster-require-full-coverage',
      'yes',
      // A replica that never finished its first sync cannot be promoted; sync at once, not after 5 s.
      '--repl-diskless-sync-delay',
      '0',
      ...options.args,
    ];
  };
  // Reserve bus ports lazily: `startRedisMasters` picks each node's port, then asks for its arguments.
  const withBus = (port: number): string[] => {
    if (!busPorts.has(port)) busPorts.set(port, reserve.shift() ?? port + 1);
    return args(port);
  };
  const total = shards * (1 + replicas);
  const reserve = await Promise.all(Array.from({ length: total * 2 }, () => freePort()));
  const started = await startRedisMasters(total, { redisServer: options.redisServer, args: withBus });
  const nodes = [...started.masters];
  try {
    const primaries = nodes.slice(0, shards);
    const shardList: RedisClusterShard[] = primaries.map((primary, i) => {
      const first = Math.floor((SLOTS * i) / shards);
      const last = Math.floor((SLOTS * (i + 1)) / shards) - 1;
      return {
        primary,
        replicas: nodes.slice(shards + i * replicas, shards + (i + 1) * replicas),
        slots: [first, last],
      };
    });
    for (const shard of shardList)
      await nodeCommand(shard.primary, 'CLUSTER', 'ADDSLOTSRANGE', shard.slots[0], shard.slots[1]);
    for (const node of nodes.slice(1))
      await nodeCommand(node, 'CLUSTER', 'MEET', HOST, nodes[0].port, busPorts.get(nodes[0].port)!);
    await waitFor(nodes, async (node) => {
      const known = String(await nodeCommand(node, 'CLUSTER', 'NODES'))
        .trim()
        .split('\n').length;
      return known === nodes.length;
    });
    for (const shard of shardList) {
      const id = String(await nodeCommand(shard.primary, 'CLUSTER', 'MYID'));
      for (const replica of shard.replicas) await nodeCommand(replica, 'CLUSTER', 'REPLICATE', id);
    }
    await waitFor(
      shardList.flatMap((s) => s.replicas),
      async (replica) => /master_link_status:up/.test(String(await nodeCommand(replica, 'INFO', 'replication'))),
    );
    const cluster: RedisCluster = {
      shards: shardList,
      nodes,
      startupNodes: primaries.map((p) => ({ host: HOST, port: p.port })),
      waitUntilOk: (timeoutMs = READY_TIMEOUT_MS) =>
        waitFor(
          nodes.filter((n) => n.pid !== undefined),
          async (node) => /cluster_state:ok/.test(String(await nodeCommand(node, 'CLUSTER', 'INFO'))),
          timeoutMs,
        ),
      stop: () => started.stop(),
    };
    await cluster.waitUntilOk();
    return cluster;
  } catch (error) {
    await started.stop();
    throw error;
  }
}

async function waitFor(
  nodes: readonly RedisMaster[],
  ok: (node: RedisMaster) => Promise<boolean>,
  timeoutMs = READY_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const results = await Promise.all(nodes.map((n) => ok(n).catch(() => false)));
    if (results.every(Boolean)) return;
    if (Date.now() > deadline)
      throw new Error(`Redis Cluster on ${nodes.map((n) => n.port).join(', ')} not ready within ${timeoutMs} ms`);
    await delay(100);
  }
}

/**
 * Starts `count` independent Redis Clusters in parallel, each ready (`cluster_state:ok`).
 * @example
 * const clusters = await startRedisClusters(3, { shards: 3, replicas: 1 });
 * try { await run(clusters.clusters.map((c) => ({ cluster: c.startupNodes }))); } finally { await clusters.stop(); }
 */
export async function startRedisClusters(count: number, options: RedisClusterOptions = {}): Promise<RedisClusters> {
  const shards = options.shards ?? 3;
  const replicas = options.replicas ?? 0;
  if (!Number.isInteger(shards) || shards < 1) throw new RangeError(`shards must be an integer >= 1, got ${shards}`);
  if (!Number.isInteger(replicas) || replicas < 0)
    throw new RangeError(`replicas must be an integer >= 0, got ${replicas}`);
  const results = await Promise.allSettled(
    Array.from({ length: count }, () =>
      startCluster({ shards, replicas, redisServer: options.redisServer, args: options.args ?? [] }),
    ),
  );
  const clusters = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const stop = async (): Promise<void> => void (await Promise.all(clusters.map((c) => c.stop())));
  const failure = results.find((r) => r.status === 'rejected');
  if (failure) {
    await stop();
    throw failure.reason;
  }
  return { clusters, stop, [Symbol.asyncDispose]: stop };
}
