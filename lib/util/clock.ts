/**
 * Validity arithmetic on a monotonic clock (`performance.now()`), never the wall clock, so that an
 * NTP step on this host cannot stretch a lock.
 */

/** Milliseconds on a monotonic clock. */
export const now: () => number = performance.now.bind(performance);

/** The drift allowance for a TTL: `ttl × driftFactor + 2 ms` (the 2 ms cover Redis's own expiry granularity). */
export function driftOf(ttl: number, driftFactor: number): number {
  return ttl * driftFactor + 2;
}

/** The monotonic instant until which a lock won (or extended) by an attempt that began at `start` is valid. */
export function validUntilOf(start: number, ttl: number, driftFactor: number): number {
  return start + ttl - driftOf(ttl, driftFactor);
}

/** How long before the end of validity a lock's signal aborts when it was not renewed: 5 % of the TTL, at least 2 ms. */
export function lossMarginOf(ttl: number): number {
  return Math.max(2, Math.ceil(ttl * 0.05));
}

/** The per-master command bound for a TTL: `commandTimeout`, but never more than a third of the TTL. */
export function commandTimeoutFor(ttl: number, commandTimeout: number): number {
  return Math.max(1, Math.min(commandTimeout, Math.floor(ttl / 3)));
}
