/** A wait of `delay ± jitter` ms, uniformly spread, never negative. */
export function jitteredDelay(delay: number, jitter: number): number {
  return Math.max(0, delay + (Math.random() * 2 - 1) * jitter);
}

/** Sleeps `ms`, or rejects at once with the reason of whichever signal aborts first. */
export function abortableSleep(ms: number, ...signals: (AbortSignal | undefined)[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    const aborted = live.find((s) => s.aborted);
    if (aborted) return reject(aborted.reason);
    const onAbort = (event: Event): void => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener('abort', onAbort);
      reject((event.target as AbortSignal).reason);
    };
    const timer = setTimeout(() => {
      for (const s of live) s.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    for (const s of live) s.addEventListener('abort', onAbort, { once: true });
  });
}
