import { EventEmitter } from 'node:events';
import type { NodeRedisCommands } from './node-redis-client.js';

/** The wait before opening the next connection after one was lost: 50 ms, doubling up to 1 s. */
const reconnectDelay = (failures: number): number => Math.min(50 * 2 ** failures, 1_000);

/**
 * The wake-up subscriber of a master given as a node-redis client, with the events and methods
 * the library uses of an ioredis subscriber (`ready`, `close`, `message`; `info`, `subscribe`).
 *
 * node-redis resubscribes a reconnected client before anything else it sends, so a message could
 * arrive from a server that no `INFO` identified yet. Instead, each connection here is a fresh
 * `duplicate()` that never reconnects: when it is lost, `close` is emitted and a new one is opened;
 * on its `ready` the library reads its `INFO` and only then subscribes (see `wakeups.ts`), so
 * every message it delivers comes from a server the restart guard vetted.
 *
 * @example
 * const sub = new NodeRedisSubscriber(client);
 * sub.on('ready', async () => (await sub.info('server'), await sub.subscribe('channel')));
 */
export class NodeRedisSubscriber extends EventEmitter {
  #connection: NodeRedisCommands | undefined;
  #closed = false;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #listener = (message: string, channel: string): void => void this.emit('message', channel, message);

  constructor(private readonly parent: NodeRedisCommands) {
    super();
    this.open();
  }

  private open(): void {
    this.#timer = undefined;
    if (this.#closed) return;
    const socket = this.parent.options?.socket ?? {};
    const connection = this.parent.duplicate({
      socket: { ...socket, reconnectStrategy: false },
      disableOfflineQueue: true,
    });
    this.#connection = connection;
    const lost = (): void => this.lost(connection);
    connection.on('error', (error: Error) => {
      this.emit('error', error);
      if (!connection.isOpen) lost();
    });
    connection.on('end', lost);
    connection.connect().then(() => {
      if (this.#connection !== connection || this.#closed) return;
      this.#failures = 0;
      this.emit('ready');
    }, lost);
  }

  private lost(connection: NodeRedisCommands): void {
    if (this.#connection !== connection) return;
    this.#connection = undefined;
    if (connection.isOpen) connection.destroy();
    this.emit('close');
    if (this.#closed) return;
    this.#timer = setTimeout(() => this.open(), reconnectDelay(this.#failures++));
    this.#timer.unref();
  }

  /** The current connection, ready; rejects when there is none (the caller then waits for `ready`). */
  private ready(): Promise<NodeRedisCommands> {
    const connection = this.#connection;
    return connection?.isReady ? Promise.resolve(connection) : Promise.reject(new Error('subscriber not connected'));
  }

  async info(section = 'server'): Promise<string> {
    return String(await (await this.ready()).sendCommand(['INFO', section]));
  }

  async subscribe(...channels: string[]): Promise<void> {
    await (await this.ready()).subscribe(channels, this.#listener);
  }

  async unsubscribe(...channels: string[]): Promise<void> {
    await (await this.ready()).unsubscribe(channels, this.#listener);
  }

  /** Sharded pub/sub follows a cluster's shards: never used on a single master. */
  ssubscribe(): Promise<never> {
    return Promise.reject(new Error('SSUBSCRIBE is for cluster nodes'));
  }

  sunsubscribe(): Promise<never> {
    return this.ssubscribe();
  }

  /** Closes the current connection and opens no other. */
  disconnect(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    const connection = this.#connection;
    this.#connection = undefined;
    if (connection?.isOpen) connection.destroy();
  }
}
