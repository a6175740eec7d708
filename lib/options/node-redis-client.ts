/**
 * A node-redis v5 client (`createClient()` from the `redis` package), connected or not, as a
 * `nodes` entry: the library connects it if it is not open, uses it as it is, and never closes it.
 * Only what the library checks is declared here, so this package never loads `redis` itself.
 *
 * @example
 * import { createClient } from 'redis';
 * const node: NodeRedisClient = createClient({ url: 'redis://10.0.0.1:6379' });
 * const redlock = new Redlock({ nodes: [node, 'redis://10.0.0.2:6379', 'redis://10.0.0.3:6379'] });
 * @publicApi
 */
export interface NodeRedisClient {
  /** The socket is open (connected, or reconnecting). */
  readonly isOpen: boolean;
  /** The connection is ready for commands. */
  readonly isReady: boolean;
  /** Opens the connection; called by the library only when the client is not open. */
  connect(): Promise<unknown>;
  /** Sends one command (every command of the library goes through it, in call order). */
  sendCommand(...args: never[]): Promise<unknown>;
  /** A new client with the same options: the library's wake-up subscriber. */
  duplicate(...args: never[]): unknown;
}
