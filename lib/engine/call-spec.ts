import { checkLockMode, type LockModeOptions } from '../kinds/lock-mode.js';
import { checkResources } from '../lock/resources.js';
import { resolveHoldOptions, type HoldOptions } from '../options/hold-options.js';
import {
  checkCallOptions,
  checkTtl,
  pickRetry,
  resolveRetryOptions,
  sameRetry,
  type ResolvedRedlockOptions,
  type ResolvedRetryOptions,
  type RetryOptions,
} from '../options/redlock-options.js';
import type { AttemptOptions } from './attempt-loop.js';

/**
 * Per-call options of `acquire()` and `using()`.
 *
 * @example
 * await redlock.acquire('report', 30_000, { acquireTimeout: 2_000, signal: AbortSignal.timeout(5_000) });
 * @publicApi
 */
export interface AcquireOptions extends RetryOptions, LockModeOptions, HoldOptions {
  /** Gives up waiting when this signal aborts; the acquisition rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** `acquire()` only: renew the lock automatically until it is released (as `using()` does). @default false */
  autoExtend?: boolean;
  /** Issue a fencing token with this lock (`lock.fencingToken`). @default the `fencing` option */
  fencing?: boolean;
  /** Who holds this lock, for operators (`inspect()`, the CLI); at most 256 characters, no line break. @default the `owner` option */
  owner?: string;
}

/**
 * Per-call options of `tryAcquire()`.
 *
 * @example
 * const permit = await redlock.tryAcquire(`export:${tenant}`, 60_000, { limit: 3 });
 * @publicApi
 */
export type TryAcquireOptions = Pick<AcquireOptions, 'mode' | 'limit' | 'fencing' | 'owner'>;

/** Per-call options of `using()`: those of `acquire()` but `autoExtend` (a `using()` lock is always renewed). */
export type UsingOptions = Omit<AcquireOptions, 'autoExtend'>;

/** `tryAcquire()`'s policy: one attempt, no waiting. */
const ONE_TRY: ResolvedRetryOptions = Object.freeze({
  retryCount: 0,
  retryDelay: 0,
  retryJitter: 0,
  acquireTimeout: undefined,
});

/** One call, checked: its resource names, TTL, hold limits, and how to acquire. */
export interface CallSpec {
  readonly names: string[];
  readonly ttl: number;
  readonly hold: ReturnType<typeof resolveHoldOptions>;
  readonly attempt: AttemptOptions;
}

/**
 * Checks a call of `acquire()`, `tryAcquire()` or `using()` before anything is sent, in one order
 * (resources, TTL, `check`, the call's options, its lock mode, its hold) and resolves its policy:
 * `tryAcquire()` makes one attempt; with `onBusy: 'skip'`, `retryCount` defaults to 0 (a busy lock is
 * skipped at once; a split vote is still retried, see split-votes.ts).
 *
 * @throws LockKeyError for a bad resource; RedlockConfigError naming a bad option.
 */
export function callSpec(
  defaults: ResolvedRedlockOptions,
  call: 'acquire' | 'tryAcquire' | 'using',
  resources: string | readonly string[],
  ttl: number | undefined,
  options: AcquireOptions | undefined,
  check?: () => void,
): CallSpec {
  const names = checkResources(resources);
  const lockTtl = checkTtl(ttl ?? defaults.ttl);
  check?.();
  checkCallOptions(options);
  const kind = checkLockMode(options, names.length);
  // A `using()` lock is always renewed; an `acquire()` lock only with `autoExtend`.
  const hold =
    call === 'tryAcquire'
      ? resolveHoldOptions(undefined, lockTtl, false)
      : resolveHoldOptions(options, lockTtl, call === 'using' || options?.autoExtend === true);
  const overrides = hold.skip && options?.retryCount === undefined ? { ...options, retryCount: 0 } : options;
  const retry = call === 'tryAcquire' ? ONE_TRY : retryPolicyOf(defaults, overrides);
  const fencing = options?.fencing ?? defaults.fencing;
  const attempt: AttemptOptions = {
    retry,
    fencing,
    kind,
    owner: options?.owner,
    signal: call === 'tryAcquire' ? undefined : options?.signal,
  };
  return { names, ttl: lockTtl, hold, attempt };
}

/** Per options object given to calls (one per `@Locked` method): the retry policy resolved from it, and from what. */
const policies = new WeakMap<
  RetryOptions,
  { base: ResolvedRetryOptions; baseOf: RetryOptions; of: RetryOptions; policy: ResolvedRetryOptions }
>();

/**
 * `resolveRetryOptions`, once per options object rather than per call: a `@Locked` method passes
 * the same object on every call. Resolved again when it or the defaults changed since.
 */
function retryPolicyOf(defaults: ResolvedRetryOptions, overrides: RetryOptions | undefined): ResolvedRetryOptions {
  if (overrides === undefined || sameRetry(overrides, NO_RETRY_OVERRIDES))
    return resolveRetryOptions(defaults, overrides);
  const known = policies.get(overrides);
  if (known && known.base === defaults && sameRetry(known.baseOf, defaults) && sameRetry(known.of, overrides))
    return known.policy;
  const policy = Object.freeze(resolveRetryOptions(defaults, overrides));
  policies.set(overrides, { base: defaults, baseOf: pickRetry(defaults), of: pickRetry(overrides), policy });
  return policy;
}

const NO_RETRY_OVERRIDES: RetryOptions = {};
