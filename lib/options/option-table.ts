import { isLogger, type RedlockLogger } from '../util/logger.js';
import { checkOwner } from './owner.js';
import type { RedlockNode } from './redlock-node.js';
import type { RetryDelay, RetryOptions } from './retry-options.js';
import { checkTtl, isBoolean, isPrefix, isWholeMs, refuse } from './validate.js';

/**
 * Options of a `Redlock` (and of `RedlockModule.forRoot()`). Each option's default, check and
 * README line are declared once, in `REDLOCK_OPTIONS`.
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
  /** Default lock time-to-live in ms, when a call gives none; at most 2^31−1 (Node's timer limit). @default 10000 */
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
  /**
   * Who holds this instance's locks, for operators: stored with each lock on the masters and shown
   * by `inspect()` and the CLI. At most 256 characters, no line break. It never proves ownership
   * (the random value does). Per call too. @default `<hostname>:<pid>`
   */
  owner?: string;
}

/** Options with every default filled in. */
export interface ResolvedRedlockOptions extends Required<
  Omit<RedlockOptions, 'acquireTimeout' | 'restartGuard' | 'fencingQuorum' | 'logger' | 'owner'>
> {
  /** The `owner` option as given (undefined: `<hostname>:<pid>`, see `ownerIn`). */
  owner: string | undefined;
  /** The `logger` option as given (undefined: the default). */
  logger: RedlockLogger | false | undefined;
  fencingQuorum: number;
  acquireTimeout: number | undefined;
  /** The restart guard's largest TTL, or `undefined` to track it, or `false` when the guard is off. */
  restartGuard: { largestTtl: number | undefined } | false;
}

/** One option: its default, the check of a value the user set, and its README line. */
export interface OptionSpec<T> {
  /** The default when the option is not set; `undefined` when it has none or is derived (see `derived`). */
  readonly default: T | undefined;
  /** How the README's option table shows the default. */
  readonly shown: string;
  /** The README's "meaning" cell, word for word. */
  readonly doc: string;
  /** Refuses a bad value set by the user (a `RedlockConfigError` naming `option`), or returns it resolved. */
  check(value: unknown, option: string): T;
}

/**
 * Every option, once: its default, its check and its README line. Adding an option is one entry
 * here, its field in `RedlockOptions` (with TSDoc) and its README row (a test compares them).
 * Rules between options (`retryJitter` <= `retryDelay`, `fencingPrefix` vs `keyPrefix`,
 * `fencingQuorum` vs `nodes`) run after merging, in `resolveOptions` and `resolveRetryOptions`.
 */
export const REDLOCK_OPTIONS: {
  readonly [K in keyof ResolvedRedlockOptions]-?: OptionSpec<ResolvedRedlockOptions[K]>;
} = {
  nodes: {
    default: undefined,
    shown: '(required)',
    doc: 'the independent masters: URLs, ioredis options, ioredis instances or node-redis clients, or Redis Clusters (one vote each)',
    check: (value, option) =>
      Array.isArray(value) && value.length > 0
        ? (value as RedlockNode[])
        : refuse(option, 'must list at least one Redis master (an odd number such as 3 or 5 is best)', value),
  },
  keyPrefix: {
    default: 'lock:',
    shown: "`'lock:'`",
    doc: 'prepended to each resource name to form its key',
    check: isPrefix,
  },
  ttl: {
    default: 10_000,
    shown: '`10000`',
    doc: 'default TTL in ms (at most 2^31−1). Locks under `using`/`@Locked` are renewed, so the TTL bounds how long a *crashed* holder blocks others, not how long work may take',
    check: checkTtl,
  },
  driftFactor: {
    default: 0.01,
    shown: '`0.01`',
    doc: 'validity = `ttl − elapsed − (ttl × driftFactor + 2 ms)`',
    check: (value, option) =>
      typeof value === 'number' && Number.isFinite(value) && value >= 0 && value < 0.5
        ? value
        : refuse(option, 'must be a number from 0 up to (not including) 0.5', value),
  },
  retryCount: {
    default: 10,
    shown: '`10`',
    doc: 'further attempts after the first; `0` = one try, `Infinity` = until `acquireTimeout` or the signal',
    check: (value, option) =>
      value === Infinity || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0)
        ? value
        : refuse(
            option,
            'must be a whole number >= 0, or Infinity to retry until `acquireTimeout` or the signal ends it',
            value,
          ),
  },
  retryDelay: {
    default: 200,
    shown: '`200`',
    doc: 'mean wait between attempts (ms), or a function `(attempt) => ms` of the retry number (1 for the first retry)',
    check: (value, option) => (typeof value === 'function' ? (value as RetryDelay) : isWholeMs(value, option)),
  },
  retryJitter: {
    default: undefined,
    shown: 'half of `retryDelay`',
    doc: 'each wait is `retryDelay ± retryJitter` ms; must not exceed a numeric `retryDelay`. Its default (half of `retryDelay`, 0 around a function), also when given as a value, follows the `retryDelay` in force per call',
    check: isWholeMs,
  },
  acquireTimeout: {
    default: undefined,
    shown: 'none',
    doc: 'upper bound on a whole acquisition, retries included (ms)',
    check: (value, option) => checkTtl(value, option),
  },
  commandTimeout: {
    default: 500,
    shown: '`500`',
    doc: 'per-master bound on each command (ms), further capped at a third of the TTL',
    check: checkTtl,
  },
  connectTimeout: {
    default: 2_000,
    shown: '`2000`',
    doc: 'how long start-up waits for the masters to connect (ms)',
    check: checkTtl,
  },
  wakeOnRelease: {
    default: true,
    shown: '`true`',
    doc: 'wake waiters in other processes through Redis pub/sub when the lock is released. This opens one subscriber connection per master, the first time something waits. Waiters in one process are always served in arrival order',
    check: isBoolean,
  },
  restartGuard: {
    default: Object.freeze({ largestTtl: undefined }),
    shown: '`true`',
    doc: 'a master that (re)connects does not vote until it has been up longer than the largest TTL plus drift. `{ largestTtl }` sets that TTL when other clients use longer ones than this one; `false` gives plain Redlock. See [Restarts](docs/restarts-and-failover.md#restarts-the-restart-guard)',
    check: (value, option) => {
      if (value === true) return { largestTtl: undefined };
      if (value === false) return false;
      if (value !== null && typeof value === 'object') {
        const { largestTtl } = value as { largestTtl?: unknown };
        return { largestTtl: largestTtl === undefined ? undefined : checkTtl(largestTtl, `${option}.largestTtl`) };
      }
      return refuse(option, 'must be true, false or { largestTtl }', value);
    },
  },
  fencing: {
    default: false,
    shown: '`false`',
    doc: 'issue `lock.fencingToken` with every lock (also per call and per `@Locked`). This costs one more round trip per acquisition. See [docs/fencing.md](docs/fencing.md)',
    check: isBoolean,
  },
  fencingPrefix: {
    default: 'fence:',
    shown: "`'fence:'`",
    doc: 'prefix of the fencing counter keys; must not overlap `keyPrefix`',
    check: isPrefix,
  },
  fencingQuorum: {
    default: undefined,
    shown: 'majority',
    doc: 'how many masters must take a token before the lock is handed out. With W of N, tokens survive 2W − N − 1 masters restarting without their data (4 of 5: two), at the cost of needing W masters up',
    check: (value, option) =>
      typeof value === 'number' && Number.isSafeInteger(value)
        ? value
        : refuse(option, 'must be a whole number', value),
  },
  logger: {
    default: undefined,
    shown: "console warnings (Nest: `new Logger('Redlock')`)",
    doc: 'where the library logs: masters unreachable, distrusted or trusted again, an even number of masters, risky server settings. Any object with `log`, `warn`, `error` (and optionally `debug`); `false` silences it. No line contains a password or a lock value',
    check: (value, option) =>
      value === false || isLogger(value)
        ? value
        : refuse(
            option,
            "must be false or an object with log, warn and error methods (Nest's Logger, console…)",
            value,
          ),
  },
  allowEvictingMasters: {
    default: false,
    shown: '`false`',
    doc: 'let masters whose `maxmemory-policy` can evict keys vote (each is warned about once). Off, such a master is refused: see [Redis settings](docs/restarts-and-failover.md#which-redis-settings-a-master-needs-and-why)',
    check: isBoolean,
  },
  owner: {
    default: undefined, // `<hostname>:<pid>`, filled in by `ownerIn`
    shown: '`<hostname>:<pid>`',
    doc: 'who holds the locks, for operators: stored with each lock and shown by `inspect()`, the CLI and `revoke()` (also per call and per `@Locked`). At most 256 characters, no line break; it never proves ownership. See [Owner and revoke](docs/owner-and-revoke.md)',
    check: (value, option) => checkOwner(value, option),
  },
};

/**
 * The defaults, frozen (`retryJitter` shown for the default `retryDelay`; `fencingQuorum` is the majority).
 *
 * @example
 * const ttl = options.ttl ?? REDLOCK_DEFAULTS.ttl; // 10000
 */
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
