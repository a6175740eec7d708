/**
 * The wait before retry number `attempt` (1 for the first retry), in ms: a whole number >= 0.
 *
 * @example
 * const backoff: RetryDelay = (attempt) => Math.min(50 * 2 ** attempt, 2_000) + Math.floor(Math.random() * 50);
 * @publicApi
 */
export type RetryDelay = (attempt: number) => number;

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
  /**
   * Mean wait between attempts, in ms, or a function `(attempt) => ms` of the retry number (1 for
   * the first retry) for a policy of your own, such as exponential backoff. @default 200
   */
  retryDelay?: number | RetryDelay;
  /**
   * Random spread around `retryDelay`: each wait is `retryDelay ± retryJitter` ms, never more than
   * `retryDelay`. @default half the `retryDelay` in force (module or call); 0 when `retryDelay` is a function
   */
  retryJitter?: number;
  /** Upper bound on the whole acquisition, in ms, retries included. @default undefined (bounded by `retryCount` only) */
  acquireTimeout?: number;
}

/** Retry settings with every default filled in. */
export type ResolvedRetryOptions = Required<Omit<RetryOptions, 'acquireTimeout'>> & {
  acquireTimeout: number | undefined;
};
