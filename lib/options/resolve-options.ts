import { REDLOCK_OPTIONS, type OptionSpec, type RedlockOptions, type ResolvedRedlockOptions } from './option-table.js';
import { defaultJitterFor, resolveRetryOptions } from './resolve-retry.js';
import type { ResolvedRetryOptions } from './retry-options.js';
import { refuse, refuseUnknown } from './validate.js';

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

/**
 * Validates options and fills in defaults from `REDLOCK_OPTIONS`, then applies the rules between
 * options. Throws `RedlockConfigError` naming the option at fault; it opens no connection and
 * writes nothing.
 */
export function resolveOptions(options: RedlockOptions): ResolvedRedlockOptions {
  if (options === null || typeof options !== 'object')
    refuse('options', 'must be an object with at least `nodes`', options);
  for (const key of Object.keys(options))
    if (!(key in REDLOCK_OPTIONS) && key !== 'isGlobal') refuseUnknown(key, Object.keys(REDLOCK_OPTIONS), 'an option');
  const resolved: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(REDLOCK_OPTIONS) as [keyof ResolvedRedlockOptions, OptionSpec<unknown>][]) {
    const value = options[key];
    resolved[key] =
      value === undefined ? (key === 'nodes' ? spec.check(value, key) : spec.default) : spec.check(value, key);
  }
  const result = resolved as unknown as ResolvedRedlockOptions;
  if (result.fencing) checkFencingPrefix(result.keyPrefix, result.fencingPrefix);
  const majority = Math.floor(result.nodes.length / 2) + 1;
  if (options.fencingQuorum === undefined) result.fencingQuorum = majority;
  else if (result.fencingQuorum < majority || result.fencingQuorum > result.nodes.length) {
    refuse(
      'fencingQuorum',
      `must be a whole number from the majority (${majority}) to the number of \`nodes\` (${result.nodes.length})`,
      result.fencingQuorum,
    );
  }
  const base: ResolvedRetryOptions = {
    retryCount: result.retryCount,
    retryDelay: result.retryDelay,
    retryJitter: defaultJitterFor(result.retryDelay),
    acquireTimeout: result.acquireTimeout,
  };
  const retry = resolveRetryOptions(
    base,
    options.retryJitter === undefined ? undefined : { retryJitter: options.retryJitter },
  );
  result.retryJitter = retry.retryJitter;
  return result;
}
