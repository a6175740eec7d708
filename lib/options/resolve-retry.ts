import { REDLOCK_OPTIONS } from './option-table.js';
import type { ResolvedRetryOptions, RetryDelay, RetryOptions } from './retry-options.js';
import { refuse } from './validate.js';

/** The retry settings a call may override. */
export const RETRY_KEYS = ['retryCount', 'retryDelay', 'retryJitter', 'acquireTimeout'] as const;

/** The jitter used when none was set: half a numeric `retryDelay`, none around a function. */
export function defaultJitterFor(retryDelay: number | RetryDelay): number {
  return typeof retryDelay === 'function' ? 0 : Math.floor(retryDelay / 2);
}

/**
 * Merges per-call retry settings over `base` and checks the result. A `retryJitter` that is the
 * default for `base`'s delay (half of it; 0 around a function), and so also one nobody set, follows
 * the `retryDelay` in force; any other must not exceed a numeric `retryDelay`. Reading it from the
 * values, not from who built the object, keeps options spread from `REDLOCK_DEFAULTS` or from
 * another `Redlock`'s `options` working the same.
 */
export function resolveRetryOptions(
  base: ResolvedRetryOptions,
  overrides: RetryOptions | undefined,
): ResolvedRetryOptions {
  if (!overridesRetry(overrides)) {
    // Most calls override nothing: the base's resolution is reused while its values stay the same.
    const known = baseResolutions.get(base);
    if (known && sameRetry(known.of, base)) return known.resolved;
    const resolved = Object.freeze(mergeRetryOptions(base, undefined));
    baseResolutions.set(base, { of: pickRetry(base), resolved });
    return resolved;
  }
  return mergeRetryOptions(base, overrides);
}

/** Per base options object: the retry values it was resolved with, and the (frozen) resolution. */
const baseResolutions = new WeakMap<
  ResolvedRetryOptions,
  { of: ResolvedRetryOptions; resolved: ResolvedRetryOptions }
>();

const NO_RETRY: RetryOptions = {};

function overridesRetry(overrides: RetryOptions | undefined): boolean {
  return overrides !== undefined && !sameRetry(overrides, NO_RETRY);
}

/**
 * The retry values of `o` alone, for a cache to compare later with `sameRetry`. Typed over
 * `RETRY_KEYS`: a retry option added there does not compile until it is copied here, and it must be
 * compared in `sameRetry` too, or a cached policy would miss its change.
 *
 * @example
 * const seen = pickRetry(options); // later: sameRetry(seen, options) while nothing changed
 */
export function pickRetry<T extends RetryOptions>(o: T): { [K in (typeof RETRY_KEYS)[number]]: T[K] } {
  return {
    retryCount: o.retryCount,
    retryDelay: o.retryDelay,
    retryJitter: o.retryJitter,
    acquireTimeout: o.acquireTimeout,
  };
}

/**
 * True when `a` and `b` hold the same retry values (a `retryDelay` function by identity).
 *
 * @example
 * sameRetry({ retryCount: 3 }, { retryCount: 3 }); // true
 */
export function sameRetry(a: RetryOptions, b: RetryOptions): boolean {
  return (
    a.retryCount === b.retryCount &&
    a.retryDelay === b.retryDelay &&
    a.retryJitter === b.retryJitter &&
    a.acquireTimeout === b.acquireTimeout
  );
}

function mergeRetryOptions(base: ResolvedRetryOptions, overrides: RetryOptions | undefined): ResolvedRetryOptions {
  const merged: ResolvedRetryOptions = pickRetry(base);
  let jitterSet = base.retryJitter !== defaultJitterFor(base.retryDelay);
  if (overrides) {
    for (const key of RETRY_KEYS) {
      const value = overrides[key];
      if (value !== undefined) (merged as Record<string, unknown>)[key] = REDLOCK_OPTIONS[key].check(value, key);
    }
    if (overrides.retryJitter !== undefined) jitterSet = true;
  }
  for (const key of RETRY_KEYS) if (merged[key] !== undefined) REDLOCK_OPTIONS[key].check(merged[key], key);
  if (!jitterSet) {
    merged.retryJitter = defaultJitterFor(merged.retryDelay);
  } else if (typeof merged.retryDelay === 'number' && merged.retryJitter > merged.retryDelay) {
    refuse(
      'retryJitter',
      `must not exceed \`retryDelay\` (${merged.retryDelay}), or some waits would be negative`,
      merged.retryJitter,
    );
  }
  return merged;
}
