import type { Redis, RedisOptions } from 'ioredis';

/**
 * What the library uses of a plain master's connection: the backend seam. An ioredis `Redis` is
 * one as it is; `NodeRedisConnection` presents a node-redis client as one. Everything sent through
 * it to one master goes out in call order on one connection: the undo path (a release sent behind
 * the acquire it undoes) and write coalescing rely on that.
 *
 * - commands: `set` (the plain acquire), `get`, `call` (`CONFIG GET`), `multi` (inspect's reads);
 * - scripts: `defineCommand` registers a Lua script as a method (EVAL on a connection's first use,
 *   EVALSHA after, EVAL again on NOSCRIPT);
 * - the restart guard: `info`, `status` and the `ready` event;
 * - pub/sub: `duplicate` opens the subscriber connection;
 * - lifecycle: `connect`, and `disconnect` for the connections the library opened.
 *
 * @example
 * const connection: MasterConnection = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
 */
export interface MasterConnection extends Pick<
  Redis,
  'status' | 'set' | 'get' | 'call' | 'multi' | 'info' | 'defineCommand' | 'on' | 'off' | 'connect' | 'disconnect'
> {
  /** The settings that change what the library sends: `keyPrefix` (an ioredis option) names keys. */
  readonly options: Pick<RedisOptions, 'keyPrefix'>;
  /** Opens a subscriber connection to the same server (never resubscribing on its own: see `release-subscribers.ts`). */
  duplicate(options?: RedisOptions): SubscriberConnection;
}

/**
 * What the library uses of a subscriber connection: it reads the server's `INFO` before it
 * subscribes anything (the restart guard vets that server), then follows channels; `ready` and
 * `close` mark each connection, `message` (and `smessage` on a cluster) carry `(channel, message)`.
 *
 * @example
 * const sub: SubscriberConnection = master.client.duplicate({ autoResubscribe: false });
 */
export type SubscriberConnection = Pick<
  Redis,
  'subscribe' | 'unsubscribe' | 'ssubscribe' | 'sunsubscribe' | 'info' | 'on' | 'disconnect'
>;
