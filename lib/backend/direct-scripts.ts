import { createHash } from 'node:crypto';
import { Command, Redis } from 'ioredis';
import { SCRIPTS } from '../lua/scripts.generated.js';
import { defineScripts, type LockScripts } from '../lua/scripts.js';
import type { MasterConnection } from './master-connection.js';

/** One script as sent directly: its Lua, its SHA1, its key count where fixed, the sockets that loaded it. */
interface DirectScript {
  readonly lua: string;
  readonly sha: string;
  readonly numberOfKeys: number | undefined;
  /** The sockets this script was sent on as EVAL (so the server has it cached), as ioredis's `Script` tracks. */
  readonly loaded: WeakSet<object>;
}

/** The ioredis internals the direct path reads: the socket of a ready connection, and `sendCommand`. */
interface DirectConnection {
  readonly status: string;
  readonly stream?: object;
  readonly options: { keyPrefix?: string; enableAutoPipelining?: boolean; showFriendlyErrorStack?: boolean };
  /** The commands written and not answered yet, in order. */
  readonly commandQueue?: { readonly length: number };
  sendCommand(command: Command): Promise<unknown>;
}

let table: Map<string, DirectScript> | undefined;

/** Every script of the library by command name, hashed once per process. */
function directTable(): Map<string, DirectScript> {
  table ??= new Map(
    Object.values(SCRIPTS).map((s) => [
      s.command,
      {
        lua: s.lua,
        sha: createHash('sha1').update(s.lua).digest('hex'),
        numberOfKeys: 'numberOfKeys' in s ? (s.numberOfKeys as number) : undefined,
        loaded: new WeakSet<object>(),
      },
    ]),
  );
  return table;
}

/** A reply that says the server does not have the script cached (restarted, or `SCRIPT FLUSH`). */
const isNoScript = (error: unknown): boolean => error instanceof Error && error.message.includes('NOSCRIPT');

/**
 * Sends `script` on `client` now as EVALSHA (EVAL on the socket's first use), without ioredis's
 * per-call `Script` wrapper (a subclass, a closure per write and a promise per call). Only for a
 * ready connection whose writes leave in call order (see {@link sendsDirect}).
 *
 * On NOSCRIPT (the server lost its script cache under this connection) every script counts as not
 * loaded on the socket, and the call did not run. It is sent again as EVAL only when nothing was
 * written after it: a command written after it runs before anything sent now, so the call sent again
 * would run after that command (a failed attempt's undo before the attempt's own write, whose key
 * would then live out its TTL). Otherwise it fails with the NOSCRIPT error, like a master that erred.
 */
function sendDirect(client: DirectConnection, script: DirectScript, args: (string | number)[]): Promise<unknown> {
  const stream = client.stream!;
  const options = {
    replyEncoding: 'utf8' as const,
    errorStack: client.options.showFriendlyErrorStack ? new Error() : undefined,
  };
  const head = script.numberOfKeys === undefined ? [] : [script.numberOfKeys];
  if (!script.loaded.has(stream)) {
    script.loaded.add(stream);
    return client.sendCommand(new Command('eval', [script.lua, ...head, ...args], options));
  }
  const command = new Command('evalsha', [script.sha, ...head, ...args], options);
  const reject = command.reject;
  command.reject = (error: Error) => {
    if (!isNoScript(error)) return reject(error);
    for (const s of directTable().values()) s.loaded.delete(stream);
    // This call's reply has left the queue: what remains was written after it.
    if ((client.commandQueue?.length ?? 0) > 0) return reject(error);
    const again = new Command('eval', [script.lua, ...head, ...args], options);
    client.sendCommand(again).then(command.resolve, reject);
  };
  return client.sendCommand(command);
}

/**
 * True when a script call on `client` can be written directly now, in call order with its other
 * commands: an ioredis `Redis` of this package's copy, ready (its socket is the one written to),
 * without a `keyPrefix` (the script's keys are sent as given) and without auto-pipelining (which
 * would hold its other commands back past this one).
 */
function sendsDirect(client: unknown): client is DirectConnection {
  const c = client as DirectConnection;
  return c.status === 'ready' && c.stream !== undefined && !c.options.keyPrefix && !c.options.enableAutoPipelining;
}

/**
 * The library's scripts on a plain master's connection. For an ioredis `Redis` each call is sent as
 * EVALSHA directly while the connection is ready (ioredis's `defineCommand` path otherwise, which
 * queues it while offline); any other connection (node-redis) answers through `defineCommand`.
 *
 * @example
 * const scripts = plainScripts(new Redis('redis://127.0.0.1:6379'));
 * await scripts.quorumLockPlainRelease('lock:orders', value, '0'); // 1: deleted
 */
export function plainScripts(client: MasterConnection): LockScripts {
  const defined = defineScripts(client);
  if (!(client instanceof Redis)) return defined;
  const scripts: Record<string, (...args: (string | number)[]) => Promise<unknown>> = {};
  const viaDefined = defined as unknown as Record<string, (...args: (string | number)[]) => Promise<unknown>>;
  for (const [command, script] of directTable()) {
    scripts[command] = (...args) =>
      sendsDirect(client) ? sendDirect(client, script, args) : viaDefined[command].apply(defined, args);
  }
  return scripts as unknown as LockScripts;
}
