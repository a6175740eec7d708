/**
 * The clock every process of the chaos run records with.
 *
 * `process.hrtime.bigint()` is libuv's `uv_hrtime()`, which on Linux reads `CLOCK_MONOTONIC`: one
 * clock for the whole machine, the same in every process, never stepped by NTP or `date -s`.
 * `performance.now()`, which the library uses for validity, is `uv_hrtime()` minus the process's
 * own start instant, so inside one process the two differ by a constant (`perfOffset()`).
 * `performance.timeOrigin + performance.now()` is NOT used: `timeOrigin` is a wall-clock reading
 * taken once at process start, so it carries each process's wall-clock error at that moment.
 * `verifySharedClock` in main.ts checks the shared-clock claim with IPC ping-pongs.
 */

/** Milliseconds on CLOCK_MONOTONIC (system-wide on Linux), with sub-microsecond resolution. */
export function sharedNow(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** sharedNow() − performance.now() for this process: converts the library's clock to the shared one. */
export function perfOffset(): number {
  // Sample several times and keep the pair taken closest together.
  let best = Infinity;
  let offset = 0;
  for (let i = 0; i < 5; i++) {
    const a = sharedNow();
    const p = performance.now();
    const b = sharedNow();
    if (b - a < best) {
      best = b - a;
      offset = (a + b) / 2 - p;
    }
  }
  return offset;
}

/** What a process reports in a clock ping-pong. */
export interface ClockReading {
  /** sharedNow() */
  shared: number;
  /** performance.timeOrigin + performance.now() (wall-clock anchored, per process) */
  origin: number;
  /** sharedNow() − performance.now() now: constant over a process's life if performance.now() runs on the same clock. */
  perfOffset: number;
}

export function clockReading(): ClockReading {
  return { shared: sharedNow(), origin: performance.timeOrigin + performance.now(), perfOffset: perfOffset() };
}
