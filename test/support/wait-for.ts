/**
 * The one polling helper of the suites: `waitFor` polls a condition, `sleep` waits a fixed time.
 * Assertions poll for what settles a moment after a call returns (the last master's SET or DEL
 * lands after a quorum answered) instead of sleeping a guessed time.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export { sleep };

/** Milliseconds on the monotonic clock the library uses. */
export const now = (): number => performance.now();

/** Polls `check` until it returns true or `timeoutMs` passes; returns the last result. */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 2_000,
  intervalMs = 20,
): Promise<boolean> {
  const deadline = now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (now() >= deadline) return false;
    await sleep(intervalMs);
  }
}
