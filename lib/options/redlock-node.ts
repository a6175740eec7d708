import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import type { NodeRedisClient } from './node-redis-client.js';

/**
 * A Redis Cluster the library opens and closes, as one vote: its startup nodes and ioredis
 * `ClusterOptions`. See docs/cluster.md.
 *
 * @example
 * const node: RedlockClusterNode = { cluster: [{ host: '10.0.1.1', port: 7000 }], options: { redisOptions: { password } } };
 * @publicApi
 */
export interface RedlockClusterNode {
  /** Startup nodes of one cluster (any of its nodes; the rest are discovered). */
  cluster: ClusterNode[];
  /** ioredis cluster options. */
  options?: ClusterOptions;
}

/**
 * One Redis master (one vote): a `redis://` / `rediss://` URL, ioredis connection options, an ioredis
 * instance, a Redis Cluster (an ioredis `Cluster` instance, or `{ cluster: startupNodes, options? }`),
 * or a Sentinel-managed group (ioredis options with `sentinels`), or a node-redis v5 client
 * (`createClient()` from the optional peer `redis`). URLs and option objects get a connection that the
 * library opens and closes; an instance is used as it is and never closed by the library (a node-redis
 * client that is not open yet is connected).
 *
 * @example
 * const nodes: RedlockNode[] = ['redis://10.0.0.1:6379', { host: '10.0.0.2', port: 6379 }, myRedis, { cluster: [{ host: '10.0.1.1', port: 7000 }] }];
 * @publicApi
 */
export type RedlockNode = string | RedisOptions | Redis | Cluster | RedlockClusterNode | NodeRedisClient;
