import { createHash } from 'node:crypto';
import type { MasterConnection } from '../master-connection.js';
import type { NodeRedisCommands } from './node-redis-client.js';
import { NodeRedisSubscriber } from './node-redis-subscriber.js';

/** A reply as ioredis gives it for one command of a MULTI: its error, or null and its value. */
type BatchReply = [Error | null, unknown];

/**
 * A reply in the shape ioredis gives over RESP2: a RESP3 client answers `… WITHSCORES` with
 * `[member, score]` pairs and number scores, RESP2 with a flat list of strings.
 */
function asResp2(command: readonly string[], reply: unknown): unknown {
  if (!command.includes('WITHSCORES') || !Array.isArray(reply) || !reply.every(Array.isArray)) return reply;
  return (reply as unknown[][]).flatMap(([member, score]) => [member, String(score)]);
}

/**
 * A node-redis v5 client presented as a `MasterConnection`. Every command goes through the
 * client's `sendCommand` (or `multi()`), which queues it in call order on the client's one
 * connection, so the order contract holds; node-redis writes the queue once per event-loop turn.
 * The client is the user's: the library may connect it, never closes it.
 *
 * @example
 * const connection = nodeRedisConnection(createClient({ url: 'redis://10.0.0.1:6379' }));
 * await connection.set('lock:a', value, 'PX', '10000', 'NX');
 */
class NodeRedisConnection {
  /** No key prefix: node-redis has none, so every key is sent as the library names it. */
  readonly options = {};
  /** The scripts sent on the current connection (cleared on each `ready`: a new connection may reach an empty cache). */
  readonly #loaded = new Set<string>();

  /** The client's last connection error, cleared when it is ready (for `masterStates()` and outcomes). */
  lastError: Error | undefined;

  constructor(private readonly client: NodeRedisCommands) {
    // One listener each per client, ever (one adapter per client). A reconnect may reach a restarted
    // server with an empty script cache. The error listener also keeps a master that is down from
    // crashing a process whose client has none (node-redis throws an 'error' nobody listens to).
    client.on('ready', () => {
      this.#loaded.clear();
      this.lastError = undefined;
    });
    client.on('error', (error: Error) => (this.lastError = error));
  }

  get status(): string {
    return this.client.isReady ? 'ready' : this.client.isOpen ? 'reconnecting' : 'wait';
  }

  connect(): Promise<unknown> {
    return this.client.connect();
  }

  /** Never closes the user's client: `closeMasters` only disconnects the connections the library opened. */
  disconnect(): void {}

  on(event: string, listener: (...args: never[]) => void): this {
    this.client.on(event, listener);
    return this;
  }

  off(event: string, listener: (...args: never[]) => void): this {
    this.client.off(event, listener);
    return this;
  }

  set(...args: (string | number)[]): Promise<unknown> {
    return this.send(['SET', ...args]);
  }

  get(key: string): Promise<unknown> {
    return this.send(['GET', key]);
  }

  async info(section?: string): Promise<string> {
    return String(await this.send(section === undefined ? ['INFO'] : ['INFO', section]));
  }

  /** Any command; a RESP3 map reply is flattened to `[key, value, …]` as ioredis gives it over RESP2. */
  async call(...args: (string | number)[]): Promise<unknown> {
    const reply = await this.send(args);
    if (reply instanceof Map) return [...reply.entries()].flat();
    if (reply !== null && typeof reply === 'object' && !Array.isArray(reply)) return Object.entries(reply).flat();
    return reply;
  }

  /**
   * A MULTI/EXEC with ioredis's chain API (`multi().get(k).pttl(k).exec()`): each chained call adds
   * that command; `exec()` resolves to `[error, value]` per command.
   */
  multi(): unknown {
    const commands: string[][] = [];
    const exec = async (): Promise<BatchReply[]> => {
      const batch = this.client.multi();
      for (const command of commands) batch.addCommand(command);
      try {
        return (await batch.exec()).map((value, i): BatchReply => [null, asResp2(commands[i], value)]);
      } catch (error) {
        // node-redis rejects a MULTI with a failed command; the others' replies are on the error.
        const { replies, errorIndexes } = error as { replies?: unknown[]; errorIndexes?: number[] };
        if (!Array.isArray(replies) || !Array.isArray(errorIndexes)) throw error;
        return replies.map((value, i): BatchReply =>
          errorIndexes.includes(i) ? [value as Error, null] : [null, asResp2(commands[i], value)],
        );
      }
    };
    const chain: unknown = new Proxy(
      {},
      {
        get: (_, name) =>
          name === 'exec'
            ? exec
            : typeof name === 'string' && name !== 'then'
              ? (...args: (string | number)[]) => (commands.push([name.toUpperCase(), ...args.map(String)]), chain)
              : undefined,
      },
    );
    return chain;
  }

  /**
   * Registers a Lua script as method `name`, as ioredis `defineCommand` does: EVAL on the
   * connection's first use (which also caches it on the server), EVALSHA after, EVAL again on
   * NOSCRIPT. Choosing at call time keeps the call order: no SCRIPT LOAD goes ahead of it.
   */
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void {
    const { lua, numberOfKeys } = definition;
    const sha = createHash('sha1').update(lua).digest('hex');
    const run = (args: string[]): Promise<unknown> => {
      if (!this.#loaded.has(sha)) {
        this.#loaded.add(sha);
        return this.send(['EVAL', lua, ...args]);
      }
      return this.send(['EVALSHA', sha, ...args]).catch((error: unknown) => {
        if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
        return this.send(['EVAL', lua, ...args]);
      });
    };
    Object.defineProperty(this, name, {
      configurable: true,
      value: (...args: (string | number | readonly (string | number)[])[]) => {
        const flat = args.flat().map(String);
        return run(numberOfKeys === undefined ? flat : [String(numberOfKeys), ...flat]);
      },
    });
  }

  /** Opens a subscriber: a fresh connection each time, so nothing is resubscribed before its `INFO`. */
  duplicate(): NodeRedisSubscriber {
    return new NodeRedisSubscriber(this.client);
  }

  private send(args: readonly (string | number)[]): Promise<unknown> {
    return this.client.sendCommand(args.map(String));
  }
}

/** One adapter per client, however many `Redlock` instances share it (one `ready` listener, one script cache). */
const adapters = new WeakMap<NodeRedisCommands, MasterConnection>();

/**
 * The `MasterConnection` of a node-redis client (the same one on every call).
 *
 * @example
 * const master = { client: nodeRedisConnection(createClient()), owned: false };
 */
export function nodeRedisConnection(client: NodeRedisCommands): MasterConnection {
  let adapter = adapters.get(client);
  if (!adapter) {
    adapter = new NodeRedisConnection(client) as unknown as MasterConnection;
    adapters.set(client, adapter);
  }
  return adapter;
}
