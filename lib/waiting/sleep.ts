// The one timer that several signals can cut short: waits between attempts, queued turns and
// leadership campaigns all sleep through it.

/**
 * Sleeps `ms`, or rejects at once with the reason of whichever signal aborts first. `onSleep`, if
 * given, receives a function that ends the sleep early while it lasts, and `undefined` once it is over.
 */
export function abortableSleep(
  ms: number,
  signals: readonly (AbortSignal | undefined)[] = [],
  onSleep?: (wake: (() => void) | undefined) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    const aborted = live.find((s) => s.aborted);
    if (aborted) return reject(aborted.reason);
    const end = (): void => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener('abort', onAbort);
      onSleep?.(undefined);
    };
    const onAbort = (event: Event): void => {
      end();
      reject((event.target as AbortSignal).reason);
    };
    const wake = (): void => {
      end();
      resolve();
    };
    const timer = setTimeout(wake, ms);
    for (const s of live) s.addEventListener('abort', onAbort, { once: true });
    onSleep?.(wake);
  });
}
