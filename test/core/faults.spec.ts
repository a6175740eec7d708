import { describe, expect, it } from '@jest/globals';
import {
  timed,
  rejectionOf,
  resourceName,
  useMasters,
  whilePaused,
  expectAbsentOnAll,
  expectEventuallyAbsent,
  expectHeldOnAll,
} from '../support/index.js';
import { LockAcquisitionError, type Lock } from '../../lib/index.js';

describe('hung masters (5 masters, SIGSTOP)', () => {
  const set = useMasters(5);

  it('with 2 of 5 paused, acquire and release decide on the 3 live masters without waiting for commandTimeout', async () => {
    const commandTimeout = 500;
    const redlock = await set.redlock({ commandTimeout });
    const resource = resourceName('two-hung');
    const key = `lock:${resource}`;
    const paused = set.masters.slice(3);
    const live = set.clients.slice(0, 3);
    let lock: Lock | undefined;

    const elapsed = await whilePaused(paused, async () => {
      const acquired = await timed(redlock.acquire(resource, 2_000, { retryCount: 0 }));
      expect(acquired.error).toBeUndefined();
      lock = acquired.value!;
      await expectHeldOnAll(live, key, lock.value);
      const released = await timed(lock.release());
      await expectAbsentOnAll(live, key);
      return acquired.ms + released.ms;
    });

    // Neither call waited for the hung masters (each would take >= commandTimeout if it had).
    expect(elapsed).toBeLessThan(commandTimeout);
    // The release queued on the paused masters' connections runs when they resume.
    await expectEventuallyAbsent(set.clients, key, 1_000);
  });

  it('with 3 of 5 paused, acquire rejects in bounded time with 3 timeouts, not busy, naming the resource', async () => {
    const options = { commandTimeout: 100, retryCount: 2, retryDelay: 50, retryJitter: 10 };
    const redlock = await set.redlock(options);
    const resource = resourceName('three-hung');
    const key = `lock:${resource}`;
    const ttl = 1_000;

    const { ms, error } = await whilePaused(set.masters.slice(0, 3), () => timed(redlock.acquire(resource, ttl)));

    const bound =
      (options.retryCount + 1) * (options.commandTimeout + options.retryDelay + options.retryJitter) +
      options.commandTimeout +
      1_000;
    expect(ms).toBeLessThan(bound);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    const failure = error as LockAcquisitionError;
    expect(failure.attempts).toBe(options.retryCount + 1);
    expect(failure.outcomes).toHaveLength(5);
    expect(failure.outcomes.filter((o) => o.status === 'timeout')).toHaveLength(3);
    expect(failure.outcomes.filter((o) => o.status === 'granted')).toHaveLength(2);
    expect(failure.busy).toBe(false);
    expect(failure.resources).toEqual([resource]);
    expect(failure.message).toContain(resource);
    // Every attempt's release was sent to all masters, the hung ones included.
    await expectEventuallyAbsent(set.clients, key, 1_000);
  });

  it('with 3 of 5 paused, release still resolves (never throws) within about commandTimeout', async () => {
    const commandTimeout = 200;
    const redlock = await set.redlock({ commandTimeout });
    const resource = resourceName('release-hung');
    const lock = await redlock.acquire(resource, 2_000);

    const released = await whilePaused(set.masters.slice(0, 3), () => timed(lock.release()));

    expect(released.error).toBeUndefined();
    expect(released.ms).toBeLessThan(commandTimeout + 500);
    await expectEventuallyAbsent(set.clients, `lock:${resource}`, 1_000);
  });
});

describe('busy versus down', () => {
  const set = useMasters(3);
  const doomed = useMasters(3); // killed during the tests

  it('held by another: LockAcquisitionError with busy true and every master "refused"', async () => {
    const holder = await set.redlock();
    const contender = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('busy');
    const held = await holder.acquire(resource, 2_000);
    try {
      const error = await rejectionOf(contender.acquire(resource, 1_000, { retryCount: 0 }));
      expect(error).toBeInstanceOf(LockAcquisitionError);
      const failure = error as LockAcquisitionError;
      expect(failure.busy).toBe(true);
      expect(failure.outcomes.map((o) => o.status)).toEqual(['refused', 'refused', 'refused']);
      expect(failure.outcomes.map((o) => o.master)).toEqual(contender.masters);
      await expectHeldOnAll(set.clients, `lock:${resource}`, held.value);
    } finally {
      await held.release();
    }
  });

  it('tryAcquire resolves to null when another holder has the lock', async () => {
    const holder = await set.redlock();
    const contender = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('try-busy');
    const held = await holder.acquire(resource, 2_000);
    try {
      await expect(contender.tryAcquire(resource, 1_000)).resolves.toBeNull();
      await expectHeldOnAll(set.clients, `lock:${resource}`, held.value);
    } finally {
      await held.release();
    }
  });

  it('tryAcquire resolves to a held lock when the resource is free', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('try-free');
    const lock = await redlock.tryAcquire(resource, 1_000);
    expect(lock).not.toBeNull();
    try {
      await expectHeldOnAll(set.clients, `lock:${resource}`, lock!.value);
    } finally {
      await lock!.release();
    }
  });

  describe('with every master killed', () => {
    it('acquire rejects with LockAcquisitionError, outcomes "error" or "timeout", busy false; tryAcquire rejects too', async () => {
      const redlock = await doomed.redlock({ commandTimeout: 100 });
      const before = await redlock.acquire(resourceName('before-kill'), 1_000); // proves it was connected
      await before.release();
      await Promise.all(doomed.masters.map((m) => m.kill()));

      const resource = resourceName('down');
      const error = await rejectionOf(
        redlock.acquire(resource, 1_000, { retryCount: 1, retryDelay: 20, retryJitter: 0 }),
      );
      expect(error).toBeInstanceOf(LockAcquisitionError);
      const failure = error as LockAcquisitionError;
      expect(failure.busy).toBe(false);
      expect(failure.outcomes).toHaveLength(3);
      for (const outcome of failure.outcomes) expect(['error', 'timeout']).toContain(outcome.status);

      const tried = await rejectionOf(redlock.tryAcquire(resource, 1_000));
      expect(tried).toBeInstanceOf(LockAcquisitionError);
      expect((tried as LockAcquisitionError).busy).toBe(false);
      expect((tried as LockAcquisitionError).attempts).toBe(1);
    });
  });
});
