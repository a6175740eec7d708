import type { NodeRedisClient } from '../../options/node-redis-client.js';

export type { NodeRedisClient };

/** The parts of a node-redis client the adapter calls (typed loosely: any v5 minor fits); not exported by the package. */
export interface NodeRedisCommands extends NodeRedisClient {
  readonly options?: {
    readonly socket?: { readonly host?: string; readonly port?: number; readonly path?: string };
    readonly RESP?: number;
  };
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(overrides?: object): NodeRedisCommands;
  multi(): { addCommand(args: string[]): unknown; exec(): Promise<unknown[]> };
  subscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  destroy(): void;
}

function has(node: object, name: string, type: 'function' | 'boolean'): boolean {
  return typeof (node as Record<string, unknown>)[name] === type;
}

/**
 * True for anything from the `redis` package that looks like a client (a single client, a cluster,
 * a pool or a sentinel client): told from ioredis, which has `defineCommand` and no `isOpen`.
 */
export function looksLikeNodeRedis(node: unknown): boolean {
  return (
    node !== null &&
    typeof node === 'object' &&
    has(node, 'isOpen', 'boolean') &&
    has(node, 'connect', 'function') &&
    !has(node, 'defineCommand', 'function')
  );
}

/**
 * Why a node-redis object cannot be a `nodes` entry, or undefined for a single client (the one
 * kind with `isPubSubActive` and `duplicate`).
 */
export function nodeRedisRefusal(node: object, option: string): string | undefined {
  const kind =
    'masters' in node && 'slots' in node
      ? 'a node-redis cluster client (`createCluster()`)'
      : 'totalClients' in node
        ? 'a node-redis client pool (`createClientPool()`)'
        : !('isPubSubActive' in node) || !has(node, 'duplicate', 'function') || !has(node, 'multi', 'function')
          ? 'a node-redis sentinel client or another object that is not a single node-redis client'
          : undefined;
  if (kind === undefined) return undefined;
  return `\`${option}\` is ${kind}, which is not supported: give a single client (\`createClient()\`) per independent master, or a Redis Cluster as \`{ cluster: [{ host, port }] }\` (ioredis).`;
}
