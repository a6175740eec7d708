/**
 * Workload 3: contention. `callers` callers want one key, over and over; each holds it `holdMs`, releases
 * it and asks again at once. A caller whose acquire gives up (its retry budget ran out) asks again at
 * once too, still waiting. Rates count what happened inside the window; afterwards nobody asks again and
 * the acquires still under way finish (their waits are kept).
 *
 * - handoff: an acquisition by a different caller than the previous holder;
 * - handoff wait: for a handoff, how long its caller had been waiting (since its previous release, or
 *   the start), failed acquire calls included; a caller that never got the lock again before the end
 *   contributes its wait so far (counted as `unserved`);
 * - idle gap: how long the lock stood free between a release and the next acquisition (its maximum
 *   shows stalls: everybody waiting, nobody holding);
 * - overlaps: acquisitions that resolved while this process already counted another holder (must be 0).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LockAdapter } from '../adapters/types.js';
import { jain, quantiles } from '../stats.js';

export interface ContentionOptions {
  callers: number;
  holdMs: number;
  windowMs: number;
  ttl: number;
  key: string;
}

export interface ContentionResult {
  acquisitionsPerSec: number;
  handoffsPerSec: number;
  /** Milliseconds. */
  waitP50: number;
  waitP99: number;
  waitMax: number;
  waitSamples: number;
  unserved: number;
  idleGapP50: number;
  /** The longest time the lock stood free while somebody wanted it (a stall), ms. */
  idleGapMax: number;
  jain: number;
  perCaller: number[];
  overlaps: number;
  failedCallsPerSec: number;
  releaseErrors: number;
  /** How long the run took past the window (acquires under way finishing), ms. */
  drainMs: number;
}

export async function runContention(
  adapter: LockAdapter,
  { callers, holdMs, windowMs, ttl, key }: ContentionOptions,
): Promise<ContentionResult> {
  const begin = performance.now();
  const end = begin + windowMs;
  const perCaller = new Array<number>(callers).fill(0);
  const waits: number[] = [];
  const gaps: number[] = [];
  let holders = 0;
  let overlaps = 0;
  let acquisitions = 0;
  let handoffs = 0;
  let failedCalls = 0;
  let releaseErrors = 0;
  let unserved = 0;
  let lastHolder = -1;
  let lastReleaseAt = NaN;

  const caller = async (id: number) => {
    let waitingSince = performance.now();
    let asked = false;
    while (performance.now() < end) {
      let handle: unknown;
      asked = true;
      try {
        handle = await adapter.acquire(key, ttl);
      } catch {
        if (performance.now() < end) failedCalls++;
        continue;
      }
      const got = performance.now();
      asked = false;
      if (++holders > 1) overlaps++;
      const inWindow = got < end;
      if (lastHolder !== -1 && lastHolder !== id) {
        waits.push(got - waitingSince);
        if (inWindow) handoffs++;
      }
      if (Number.isFinite(lastReleaseAt)) gaps.push(got - lastReleaseAt);
      if (inWindow) {
        acquisitions++;
        perCaller[id]++;
      }
      lastHolder = id;
      await sleep(holdMs);
      holders--;
      lastReleaseAt = performance.now();
      try {
        await adapter.release(handle);
      } catch {
        releaseErrors++;
      }
      waitingSince = performance.now();
      if (!inWindow) return;
    }
    // Still waiting when the run ended: a lower bound of this caller's wait.
    if (asked) {
      waits.push(performance.now() - waitingSince);
      unserved++;
    }
  };
  await Promise.all(Array.from({ length: callers }, (_, id) => caller(id)));
  const w = quantiles(waits);
  const seconds = windowMs / 1000;
  return {
    acquisitionsPerSec: acquisitions / seconds,
    handoffsPerSec: handoffs / seconds,
    waitP50: w.p50,
    waitP99: w.p99,
    waitMax: w.max,
    waitSamples: w.count,
    unserved,
    idleGapP50: quantiles(gaps).p50,
    idleGapMax: quantiles(gaps).max,
    jain: jain(perCaller),
    perCaller,
    overlaps,
    failedCallsPerSec: failedCalls / seconds,
    releaseErrors,
    drainMs: performance.now() - end,
  };
}
