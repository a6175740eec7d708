/** How a promise or a signal settled, for assertions on errors, durations and lock loss. */
import { now } from './wait-for.js';

/** Awaits a promise that must reject and returns what it rejected with (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

/** The time a promise takes to settle, and how it settled. */
export async function timed<T>(promise: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const start = now();
  try {
    const value = await promise;
    return { ms: now() - start, value };
  } catch (error) {
    return { ms: now() - start, error };
  }
}

/** Resolves with the signal's reason and the monotonic time at which it aborted. */
export function abortOf(signal: AbortSignal): Promise<{ at: number; reason: unknown }> {
  if (signal.aborted) return Promise.resolve({ at: now(), reason: signal.reason });
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve({ at: now(), reason: signal.reason }), { once: true }),
  );
}
