import { LockExtensionError } from '../errors/lock-extension.error.js';
import { lossMarginOf } from '../util/clock.js';
import type { Lock } from './lock.js';

/**
 * Keeps a lock alive while work runs: extends it each time a third of its TTL has passed, retries a
 * failed extension while validity remains, and arms the lock's loss timer so that its signal aborts
 * before validity ends if no extension gets through. Returns a function that stops renewing.
 */
export function startRenewal(lock: Lock): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const plan = (delay: number): void => {
    timer = setTimeout(renew, Math.max(0, delay));
    timer.unref();
  };

  const planNext = (): void => plan(lock.validity - ((lock.ttl - lossMarginOf(lock.ttl)) * 2) / 3);

  const renew = async (): Promise<void> => {
    timer = undefined;
    if (stopped || !lock.isHeld) return;
    try {
      await lock.extend();
      if (!stopped) planNext();
    } catch (error) {
      if (stopped || !(error instanceof LockExtensionError)) return; // lost: the signal has aborted
      const retryIn = Math.max(5, Math.floor(lock.ttl / 10));
      if (lock.validity - lossMarginOf(lock.ttl) > retryIn) plan(retryIn);
    }
  };

  lock.armLossTimer();
  planNext();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
