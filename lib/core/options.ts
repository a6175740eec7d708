import type { Redis, RedisOptions } from 'ioredis';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { isLogger, type RedlockLogger } from './logger.js';

/**
 * One Redis master: a `redis://` / `rediss://` URL, ioredis connection options, or an ioredis
 * instance. URLs and option objects get a connection that the library opens and closes; an
 * instance is used as it is and never closed by the library.
 *
 * @example
 * const nodes: RedlockNode[] = ['redis://10.0.0.1:6379', { host: '10.0.0.2', port: 6379 }, myRedis];
 * @publicApi
 */
export type RedlockNode = string | RedisOptions | Redis;

/**
 * Retry settings that may be overridden per call (`acquire`, `using`, `@Locked`).
 *
 * @example
 * await redlock.acquire('report', 10_000, { retryCount: 0 }); // one attempt, no waiting
 * @publicApi
 */
export interface RetryOptions {
  /** Further attempts after the first; `0` means one try, `Infinity` retries until `acquireTimeout` or `signal`. @default 10 */
  retryCount?: number;
  /** Mean wait between attempts, in ms. @default 200 */
  retryDelay?: number;
  /** Random spread around `retryDelay`: each wait is `retryDelay ± retryJitter` ms. @default 100 */
  retryJitter?: number;
  /** Upper bound on the whole acquisition, in ms, retries included. @default undefined (bounded by `retryCount` only) */
  acquireTimeout?: number;
}

/**
 * Options of a `Redlock` (and of `RedlockModule.forRoot()`).
 *
 * @example
 * RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'], ttl: 5_000 });
 * @publicApi
 */
export interface RedlockOptions extends RetryOptions {
  /** The independent Redis masters. A lock is held when floor(N/2)+1 of them hold it. Not replicas of one another. */
  nodes: RedlockNode[];
  /** Prepended to every resource name to form the Redis key. @default 'lock:' */
  keyPrefix?: string;
  /** Default lock time-to-live in ms, when a call gives none. @default 10000 */
  ttl?: number;
  /** Clock drift allowance as a fraction of the TTL; validity = ttl - elapsed - (ttl × driftFactor + 2 ms). @default 0.01 */
  driftFactor?: number;
  /** Per-master bound on each command, in ms; a master that does not answer in time counts as a timeout. It is further capped at a third of the TTL in use. @default 500 */
  commandTimeout?: number;
  /** How long start-up waits for the masters to connect, in ms (masters still down are retried in the background). @default 2000 */
  connectTimeout?: number;
  /**
   * Wake waiters as soon as the lock they wait for is released, through Redis pub/sub (one extra
   * subscriber connection per master, opened when something first waits). Waiters in one process
   * are always served in arrival order; this adds prompt wake-ups for releases made elsewhere.
   * The retry delay stays as the fallback. @default true
   */
  wakeOnRelease?: boolean;
  /**
   * Redlock's "delayed restart" rule, enforced here: a master that (re)connects does not count
   * toward any quorum until it has been up longer than the largest TTL plus drift (read from
   * `INFO server`), since a master that restarted without persistence may have forgotten locks.
   * The guard uses the largest of `largestTtl`, `ttl` and any TTL this instance has used; set
   * `largestTtl` when other clients use longer TTLs. `false` turns the rule off (plain Redlock). @default true
   */
  restartGuard?: boolean | { largestTtl?: number };
  /**
   * Issue a fencing token with every lock (`lock.fencingToken`), strictly increasing across
   * successive holders of a resource. Costs one more round trip per acquisition (more when a
   * counter is stale) and one counter key per resource, kept without expiry. Per call too. @default false
   */
  fencing?: boolean;
  /** Prefix of the fencing counter keys (`fencingPrefix + resource`); must not overlap `keyPrefix`. @default 'fence:' */
  fencingPrefix?: string;
  /**
   * How many masters must take a fencing token before the lock is handed out. With W masters out of
   * N, tokens keep increasing even when f masters restart without their data, for 2W > N + f: a
   * majority (the default) tolerates none, 4 of 5 tolerates two. A larger W costs availability:
   * fenced locks then need W masters up. @default floor(N/2)+1
   */
  fencingQuorum?: number;
  /**
   * Where the library logs (context `Redlock`): masters unreachable, distrusted or trusted again,
   * an even number of masters, risky server settings. `false` silences it. Outside Nest the default
   * prints warnings and errors on `console`; `RedlockService` defaults to Nest's `new Logger('Redlock')`.
   * No line contains a password or a lock value. @default console warnings (Nest: `Logger('Redlock')`)
   */
  logger?: RedlockLogger | false;
  /**
   * Let masters whose `maxmemory-policy` can evict keys (anything but `noeviction`) vote. Off, such a
   * master is refused: `connect()` rejects with `RedlockConfigError` naming it, and its votes do not
   * count; an evicted lock key lets a second client win a lock that is still held. On, each such
   * master is warned about once. @default false
   */
  allowEvictingMasters?: boolean;
}

/** Options with every default filled in. */
export interface ResolvedRedlockOptions extends Required<Omit<RedlockOptions, 'acquireTimeout' | 'restartGuard' | 'fencingQuorum' | 'logger'>> {
  /** The `logger` option as given (undefined: the default). */
  logger: RedlockLogger | false | undefined;
  fencingQuorum: number;
  acquireTimeout: number | undefined;
  /** The restart guard's largest TTL, or `undefined` to track it, or `false` when the guard is off. */
  restartGuard: { largestTtl: number | undefined } | false;
}

/** The defaults, frozen. */
export const REDLOCK_DEFAULTS = Object.freeze({
  keyPrefix: 'lock:',
  ttl: 10_000,
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  acquireTimeout: undefined,
  commandTimeout: 500,
  connectTimeout: 2_000,
  wakeOnRelease: true,
  restartGuard: true,
  fencing: false,
  fencingPrefix: 'fence:',
  allowEvictingMasters: false,
});

function refuse(option: string, rule: string, value: unknown): never {
  throw new RedlockConfigError(option, `\`${option}\` ${rule}; got ${describe(value)}.`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return String(value);
  return Array.isArray(value) ? `an array of ${value.length}` : typeof value;
}

/** Refuses anything but a positive safe integer (a TTL or a timeout, in ms). */
export function checkTtl(value: unknown, option = 'ttl'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    refuse(option, 'must be a positive whole number of milliseconds', value);
  }
  return value;
}

/** Refuses a `fencingPrefix` that overlaps `keyPrefix` (counters and locks could then share keys). */
export function checkFencingPrefix(keyPrefix: string, fencingPrefix: string): void {
  if (fencingPrefix.startsWith(keyPrefix) || keyPrefix.startsWith(fencingPrefix)) {
    refuse(
      'fencingPrefix',
      `must neither start with \`keyPrefix\` (${JSON.stringify(keyPrefix)}) nor be a start of it when fencing is on, or counters and locks could share keys`,
      fencingPrefix,
    );
  }
}

/** Refuses malformed per-call options (`signal`, `autoExtend`, `fencing`) before anything is sent. */
export function checkCallOptions(options: { signal?: unknown; autoExtend?: unknown; fencing?: unknown } | undefined): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') refuse('options', 'must be an object', options);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) refuse('signal', 'must be an AbortSignal', options.signal);
  for (const key of ['autoExtend', 'fencing'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean') refuse(key, 'must be true or false', options[key]);
  }
}

/** Validates per-call retry settings, merging them over `base`. */
export function resolveRetryOptions(
  base: Required<Omit<RetryOptions, 'acquireTimeout'>> & { acquireTimeout: number | undefined },
  overrides: RetryOptions | undefined,
): Required<Omit<RetryOptions, 'acquireTimeout'>> & { acquireTimeout: number | undefined } {
  const merged = { ...base };
  if (overrides) {
    for (const key of ['retryCount', 'retryDelay', 'retryJitter', 'acquireTimeout'] as const) {
      if (overrides[key] !== undefined) (merged as Record<string, unknown>)[key] = overrides[key];
    }
  }
  const { retryCount, retryDelay, retryJitter, acquireTimeout } = merged;
  if (!(retryCount === Infinity || (Number.isSafeInteger(retryCount) && retryCount >= 0))) {
    refuse('retryCount', 'must be a whole number >= 0, or Infinity to retry until `acquireTimeout` or the signal ends it', retryCount);
  }
  if (!Number.isSafeInteger(retryDelay) || retryDelay < 0) refuse('retryDelay', 'must be a whole number of milliseconds >= 0', retryDelay);
  if (!Number.isSafeInteger(retryJitter) || retryJitter < 0) refuse('retryJitter', 'must be a whole number of milliseconds >= 0', retryJitter);
  if (retryJitter > retryDelay) refuse('retryJitter', `must not exceed \`retryDelay\` (${retryDelay}), or some waits would be negative`, retryJitter);
  if (acquireTimeout !== undefined) checkTtl(acquireTimeout, 'acquireTimeout');
  return merged;
}

/**
 * Validates options and fills in defaults. Throws `RedlockConfigError` naming the option at fault;
 * it opens no connection and writes nothing.
 */
export function resolveOptions(options: RedlockOptions): ResolvedRedlockOptions {
  if (options === null || typeof options !== 'object') refuse('options', 'must be an object with at least `nodes`', options);
  const { nodes } = options;
  if (!Array.isArray(nodes) || nodes.length === 0) {
    refuse('nodes', 'must list at least one Redis master (an odd number such as 3 or 5 is best)', nodes);
  }
  const keyPrefix = options.keyPrefix ?? REDLOCK_DEFAULTS.keyPrefix;
  if (typeof keyPrefix !== 'string') refuse('keyPrefix', 'must be a string', keyPrefix);
  const ttl = checkTtl(options.ttl ?? REDLOCK_DEFAULTS.ttl);
  const driftFactor = options.driftFactor ?? REDLOCK_DEFAULTS.driftFactor;
  if (typeof driftFactor !== 'number' || !Number.isFinite(driftFactor) || driftFactor < 0 || driftFactor >= 0.5) {
    refuse('driftFactor', 'must be a number from 0 up to (not including) 0.5', driftFactor);
  }
  const commandTimeout = checkTtl(options.commandTimeout ?? REDLOCK_DEFAULTS.commandTimeout, 'commandTimeout');
  const connectTimeout = checkTtl(options.connectTimeout ?? REDLOCK_DEFAULTS.connectTimeout, 'connectTimeout');
  const wakeOnRelease = options.wakeOnRelease ?? REDLOCK_DEFAULTS.wakeOnRelease;
  if (typeof wakeOnRelease !== 'boolean') refuse('wakeOnRelease', 'must be true or false', wakeOnRelease);
  const guard = options.restartGuard ?? REDLOCK_DEFAULTS.restartGuard;
  let restartGuard: ResolvedRedlockOptions['restartGuard'] = false;
  if (guard === true) restartGuard = { largestTtl: undefined };
  else if (guard !== null && typeof guard === 'object') {
    restartGuard = { largestTtl: guard.largestTtl === undefined ? undefined : checkTtl(guard.largestTtl, 'restartGuard.largestTtl') };
  } else if (guard !== false) refuse('restartGuard', 'must be true, false or { largestTtl }', guard);
  const fencing = options.fencing ?? REDLOCK_DEFAULTS.fencing;
  if (typeof fencing !== 'boolean') refuse('fencing', 'must be true or false', fencing);
  const fencingPrefix = options.fencingPrefix ?? REDLOCK_DEFAULTS.fencingPrefix;
  if (typeof fencingPrefix !== 'string') refuse('fencingPrefix', 'must be a string', fencingPrefix);
  if (fencing) checkFencingPrefix(keyPrefix, fencingPrefix);
  const majority = Math.floor(nodes.length / 2) + 1;
  const fencingQuorum = options.fencingQuorum ?? majority;
  if (!Number.isSafeInteger(fencingQuorum) || fencingQuorum < majority || fencingQuorum > nodes.length) {
    refuse('fencingQuorum', `must be a whole number from the majority (${majority}) to the number of \`nodes\` (${nodes.length})`, fencingQuorum);
  }
  const logger = options.logger;
  if (logger !== undefined && logger !== false && !isLogger(logger)) refuse('logger', 'must be false or an object with log, warn and error methods (Nest\'s Logger, console…)', logger);
  const allowEvictingMasters = options.allowEvictingMasters ?? REDLOCK_DEFAULTS.allowEvictingMasters;
  if (typeof allowEvictingMasters !== 'boolean') refuse('allowEvictingMasters', 'must be true or false', allowEvictingMasters);
  const retry = resolveRetryOptions(
    {
      retryCount: REDLOCK_DEFAULTS.retryCount,
      retryDelay: REDLOCK_DEFAULTS.retryDelay,
      retryJitter: REDLOCK_DEFAULTS.retryJitter,
      acquireTimeout: REDLOCK_DEFAULTS.acquireTimeout,
    },
    options,
  );
  return { nodes, keyPrefix, ttl, driftFactor, commandTimeout, connectTimeout, wakeOnRelease, restartGuard, fencing, fencingPrefix, fencingQuorum, logger, allowEvictingMasters, ...retry };
}
