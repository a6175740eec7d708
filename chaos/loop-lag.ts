/**
 * A client's event-loop stalls, measured: a timer due every `intervalMs` records each gap between two
 * of its runs longer than `thresholdMs`, on the shared clock. No timer, socket read or abort listener
 * of that process ran inside such a gap, so it is the proof the checker needs to excuse a late
 * lock-loss delivery, a lapsed renewal or a release that came too late by the client's own stall
 * (CPU starvation, GC, a synchronous block), and only for the time the gap covers.
 */
import { sharedNow } from './clock.js';

/** A gap in the client's event loop: nothing of that process ran between `start` and `end`. */
export interface LoopStall {
  client: string;
  start: number;
  end: number;
}

/** Starts the monitor; returns its stop function. */
export function monitorLoopLag(
  client: string,
  report: (stall: LoopStall) => void,
  intervalMs = 2,
  thresholdMs = 8,
): () => void {
  let last = sharedNow();
  const timer = setInterval(() => {
    const now = sharedNow();
    // The loop ran at `last`; from the moment this timer was due it could not run it: that much is proven.
    if (now - last > thresholdMs) report({ client, start: last + intervalMs, end: now });
    last = now;
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Milliseconds within [from, to] that no stall of `client` covers (the time its loop could run). */
export function unstalledMs(stalls: readonly LoopStall[], client: string, from: number, to: number): number {
  if (to <= from) return 0;
  const parts = stalls
    .filter((s) => s.client === client && s.end > from && s.start < to)
    .map((s) => [Math.max(from, s.start), Math.min(to, s.end)] as const)
    .sort((a, b) => a[0] - b[0]);
  let covered = 0;
  let reach = from;
  for (const [a, b] of parts) {
    if (b <= reach) continue;
    covered += b - Math.max(a, reach);
    reach = b;
  }
  return to - from - covered;
}

/** The longest stretch within [from, to] that no stall of `client` touches (its loop could run throughout). */
export function longestUnstalledMs(stalls: readonly LoopStall[], client: string, from: number, to: number): number {
  const parts = stalls
    .filter((s) => s.client === client && s.end > from && s.start < to)
    .sort((a, b) => a.start - b.start);
  let longest = 0;
  let reach = from;
  for (const s of parts) {
    longest = Math.max(longest, s.start - reach);
    reach = Math.max(reach, s.end);
  }
  return Math.max(longest, to - reach);
}
