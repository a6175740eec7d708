/**
 * Every option of the library, from one import: the `nodes` types (redlock-node.ts), the retry
 * settings (retry-options.ts, merged per call by resolve-retry.ts), `RedlockOptions` and the table
 * of each option's default, check and README line (option-table.ts), the whole options' resolution
 * (resolve-options.ts) and the per-call options' check (call-options.ts).
 */
export { checkTtl, MAX_TTL } from './validate.js';
export type { RedlockClusterNode, RedlockNode } from './redlock-node.js';
export type { ResolvedRetryOptions, RetryDelay, RetryOptions } from './retry-options.js';
export { REDLOCK_DEFAULTS, REDLOCK_OPTIONS, type RedlockOptions, type ResolvedRedlockOptions } from './option-table.js';
export { pickRetry, resolveRetryOptions, sameRetry } from './resolve-retry.js';
export { checkFencingPrefix, resolveOptions } from './resolve-options.js';
export { checkCallOptions } from './call-options.js';
