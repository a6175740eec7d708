import { describe, expect, it } from '@jest/globals';
import { abortOf, rejectionOf, resourceName, sleep, useMasters, whilePaused } from '../support/index.js';
import {
  LockAcquisitionError,
  LockLostError,
  Redlock,
  RedlockClosedError,
  RedlockConfigError,
  RedlockError,
  REDLOCK_DEFAULTS,
} from '../../lib/index.js';

describe('retry policy, derived defaults and error reasons (3 masters)', () => {
  const set = useMasters(3);

  it('retryDelay may be a function of the retry number: it is called with 1, 2, 3 between four attempts', async () => {
    const holder = await set.redlock();
    const redlock = await set.redlock({ wakeOnRelease: false });
    const resource = resourceName('delay-fn');
    const held = await holder.acquire(resource, 5_000);
    const asked: number[] = [];
    try {
      const error = await rejectionOf(
        redlock.acquire(resource, 1_000, {
          retryCount: 3,
          retryDelay: (attempt) => (asked.push(attempt), 5 * attempt),
        }),
      );
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect((error as LockAcquisitionError).attempts).toBe(4);
      expect((error as LockAcquisitionError).reason).toBe('votes');
      expect(asked).toEqual([1, 2, 3]);
    } finally {
      await held.release();
    }
  });

  it('a retryDelay function that returns a bad wait is refused naming retryDelay', async () => {
    const holder = await set.redlock();
    const redlock = await set.redlock();
    const resource = resourceName('delay-fn-bad');
    const held = await holder.acquire(resource, 5_000);
    try {
      const error = await rejectionOf(redlock.acquire(resource, 1_000, { retryCount: 2, retryDelay: () => -1 }));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('retryDelay');
    } finally {
      await held.release();
    }
  });

  it('setting only retryDelay works, module-wide and per call: the default jitter follows it', async () => {
    const fast = new Redlock({ nodes: set.urls, retryDelay: 50 });
    expect(fast.options.retryJitter).toBe(25);
    await fast.close();
    const redlock = await set.redlock();
    const lock = await redlock.acquire(resourceName('delay-only'), 1_000, { retryDelay: 50 });
    await lock.release();
    // A jitter the user did set (other than half the module's delay) is still checked against the delay in force.
    const strict = await set.redlock({ retryJitter: 150 });
    const error = await rejectionOf(strict.acquire(resourceName('delay-only'), 1_000, { retryDelay: 50 }));
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe('retryJitter');
  });

  it('a per-call retryDelay below the module jitter is accepted when that jitter is the default, however the options were built', async () => {
    const holder = await set.redlock();
    const resource = resourceName('defaults-spread');
    const held = await holder.acquire(resource, 5_000);
    try {
      const fromDefaults = await set.redlock({ ...REDLOCK_DEFAULTS, restartGuard: false });
      const fromOptions = await set.redlock({ ...fromDefaults.options });
      for (const redlock of [fromDefaults, fromOptions]) {
        expect(redlock.options.retryJitter).toBe(100);
        // Busy: it retried with the per-call delay (jitter 5) and gave up; no RedlockConfigError.
        const error = await rejectionOf(redlock.acquire(resource, 1_000, { retryDelay: 10, retryCount: 2 }));
        expect(error).toBeInstanceOf(LockAcquisitionError);
        expect((error as LockAcquisitionError).attempts).toBe(3);
        const ran = await redlock.using(resourceName('free'), 1_000, async (lock) => lock.resources, {
          retryDelay: 10,
        });
        expect(ran).toHaveLength(1);
      }
    } finally {
      await held.release();
    }
  });

  it('LockLostError carries its reason: majority-lost, released, lapsed, not-renewed, shutdown', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('reasons');

    const gone = await redlock.acquire(resource, 2_000);
    await Promise.all(set.clients.map((c) => c.del(`lock:${resource}`)));
    expect(((await rejectionOf(gone.extend())) as LockLostError).reason).toBe('majority-lost');

    const released = await redlock.acquire(resource, 2_000);
    await released.release();
    expect(((await rejectionOf(released.extend())) as LockLostError).reason).toBe('released');

    const lapsed = await redlock.acquire(resource, 60);
    await sleep(80);
    expect(((await rejectionOf(lapsed.extend())) as LockLostError).reason).toBe('lapsed');

    const renewed = await redlock.acquire(resourceName('not-renewed'), 400, { autoExtend: true });
    const lost = await whilePaused(set.masters, () => abortOf(renewed.signal));
    expect((lost.reason as LockLostError).reason).toBe('not-renewed');
    await renewed.release();

    const closing = await set.redlock();
    const atShutdown = await closing.acquire(resourceName('shutdown'), 5_000);
    await closing.close();
    expect((atShutdown.signal.reason as LockLostError).reason).toBe('shutdown');
  });

  it('a closed instance refuses with RedlockClosedError', async () => {
    const redlock = await set.redlock();
    await redlock.close();
    const error = await rejectionOf(redlock.acquire(resourceName('closed'), 1_000));
    expect(error).toBeInstanceOf(RedlockClosedError);
    expect(error).toBeInstanceOf(RedlockError);
  });
});
