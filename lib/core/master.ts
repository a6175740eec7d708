import { Redis, type RedisOptions } from 'ioredis';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { RedlockNode } from './options.js';
import { defineScripts, type ScriptedClient } from './scripts.js';

/** One Redis master as the library sees it. */
export interface Master {
  /** `host:port` (or the socket path), for error messages and outcomes. */
  readonly label: string;
  readonly client: Redis;
  readonly scripts: ScriptedClient;
  /** True when the library opened the connection and so must close it. */
  readonly owned: boolean;
  /** True while this tick's writes to the master are being held back, to go out in one syscall. */
  corked: boolean;
}

/**
 * Coalesces the commands sent to `master` in the current tick into one socket write: the socket is
 * corked on the first command and uncorked on `process.nextTick`. This is what ioredis
 * auto-pipelining does for throughput, without its wait for the next event-loop turn, which costs a
 * sequential caller latency.
 */
export function coalesceWrites(master: Master): void {
  if (master.corked) return;
  const stream = (master.client as unknown as { stream?: { cork(): void; uncork(): void; writable?: boolean } } | undefined)?.stream;
  if (!stream?.writable) return;
  master.corked = true;
  stream.cork();
  process.nextTick(() => {
    master.corked = false;
    stream.uncork();
  });
}

/** Connection settings for the connections the library opens: fail fast when a master is down. */
const OWNED_CONNECTION_DEFAULTS: RedisOptions = {
  maxRetriesPerRequest: 0,
  // ioredis waits this long for a socket to close on disconnect(), on a timer that holds the process
  // open; with a master down the close never comes, so keep it short.
  disconnectTimeout: 100,
  retryStrategy: (times) => Math.min(times * 50, 1_000),
};

function isRedisInstance(node: object): node is Redis {
  return typeof (node as Redis).defineCommand === 'function' && typeof (node as Redis).sendCommand === 'function';
}

function hostLabel(host: string | undefined, port: number | undefined, path?: string): string {
  if (path) return `unix:${path}`;
  const h = !host || host === 'localhost' || host === '::1' || host === '[::1]' ? '127.0.0.1' : host.toLowerCase();
  return `${h}:${port ?? 6379}`;
}

/** Works out where a node points, refusing what cannot be a master. No connection is made. */
function describeNode(node: RedlockNode, index: number): { label: string; create?: () => Redis; instance?: Redis } {
  const option = `nodes[${index}]`;
  if (typeof node === 'string') {
    let url: URL;
    try {
      url = new URL(node);
    } catch {
      throw new RedlockConfigError(option, `\`${option}\` is not a valid URL: ${JSON.stringify(node)}. Use redis://host:port or rediss://host:port.`);
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw new RedlockConfigError(option, `\`${option}\` must be a redis:// or rediss:// URL; got ${JSON.stringify(node)}.`);
    }
    const label = hostLabel(url.hostname, url.port ? Number(url.port) : undefined);
    return { label, create: () => new Redis(node, { ...OWNED_CONNECTION_DEFAULTS, lazyConnect: true, enableOfflineQueue: false }) };
  }
  if (node !== null && typeof node === 'object') {
    if (isRedisInstance(node)) {
      const o = node.options ?? {};
      return { label: hostLabel(o.host, o.port, o.path), instance: node };
    }
    const o = node as RedisOptions;
    return {
      label: hostLabel(o.host, o.port, o.path),
      create: () => new Redis({ ...OWNED_CONNECTION_DEFAULTS, ...o, lazyConnect: true, enableOfflineQueue: false }),
    };
  }
  throw new RedlockConfigError(option, `\`${option}\` must be a redis:// URL, ioredis options or an ioredis instance; got ${node === null ? 'null' : typeof node}.`);
}

/**
 * Turns `nodes` into masters. Refuses a master listed twice (its vote would count twice) before any
 * connection is opened; the connections it opens are lazy until `connectMasters`.
 */
export function openMasters(nodes: readonly RedlockNode[]): Master[] {
  const described = nodes.map(describeNode);
  const seen = new Map<string, number>();
  described.forEach((d, i) => {
    const first = seen.get(d.label);
    if (first !== undefined) {
      throw new RedlockConfigError(
        `nodes[${i}]`,
        `\`nodes[${i}]\` is the same master as \`nodes[${first}]\` (${d.label}); its vote would count twice. List each independent master once.`,
      );
    }
    seen.set(d.label, i);
  });
  return described.map((d) => {
    const client = d.instance ?? d.create!();
    if (!d.instance) client.on('error', () => undefined); // outcomes carry the errors; avoid "Unhandled error event" noise
    return { label: d.label, client, scripts: defineScripts(client), owned: !d.instance, corked: false };
  });
}

/** Connects the masters the library opened, waiting at most `timeoutMs`; masters still down keep reconnecting. */
export async function connectMasters(masters: readonly Master[], timeoutMs: number): Promise<void> {
  const pending = masters
    .filter((m) => m.owned && m.client.status === 'wait')
    .map((m) => m.client.connect().catch(() => undefined));
  if (pending.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
    timer.unref();
  });
  await Promise.race([Promise.all(pending), timeout]);
  clearTimeout(timer);
}

/** Closes the connections the library opened; user-supplied instances are left open. */
export function closeMasters(masters: readonly Master[]): void {
  for (const m of masters) if (m.owned) m.client.disconnect();
}
