import { describe, expect, it } from '@jest/globals';
import {
  driftOf,
  timed,
  rejectionOf,
  resourceName,
  sleep,
  useMasters,
  waitFor,
  expectAbsentOnAll,
  expectHeldOnAll,
} from '../support/index.js';
import { LockAcquisitionError, type Lock } from '../../lib/index.js';

describe('retries, acquireTimeout and AbortSignal (3 masters)', () => {
  const set = useMasters(3);

  /** Holds `resource` from another Redlock for the duration of `fn`. */
  async function whileHeldByAnother<T>(resource: string, fn: () => Promise<T>): Promise<T> {
    const holder = await set.redlock();
    const held = await holder.acquire(resource, 5_000);
    try {
      return await fn();
    } finally {
      await held.release();
    }
  }

  it('retryCount 0 makes exactly one attempt, without waiting retryDelay', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('once');
    const { ms, error } = await whileHeldByAnother(resource, () =>
      timed(redlock.acquire(resource, 1_000, { retryCount: 0, retryDelay: 2_000, retryJitter: 0 })),
    );
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).attempts).toBe(1);
    expect((error as LockAcquisitionError).message).toContain('1 attempt');
    expect(ms).toBeLessThan(1_000);
  });

  it('retryCount 3 makes exactly four attempts', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('four');
    const error = await whileHeldByAnother(resource, () =>
      rejectionOf(redlock.acquire(resource, 1_000, { retryCount: 3, retryDelay: 10, retryJitter: 5 })),
    );
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).attempts).toBe(4);
  });

  it('a waiting acquire succeeds once the holder releases', async () => {
    const holder = await set.redlock();
    const waiter = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('handover');
    const held = await holder.acquire(resource, 5_000);
    const waiting = waiter.acquire(resource, 1_000, { retryCount: 50, retryDelay: 20, retryJitter: 5 });
    await sleep(150);
    await held.release();
    const lock = await waiting;
    try {
      await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
    } finally {
      await lock.release();
    }
  });

  it('validity counts from the attempt that succeeded, not from the first retry', async () => {
    const holder = await set.redlock();
    const waiter = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('validity-start');
    const ttl = 1_000;
    const held = await holder.acquire(resource, 5_000);
    const waiting = waiter.acquire(resource, ttl, { retryCount: 100, retryDelay: 20, retryJitter: 5 });
    await sleep(500);
    await held.release();
    const lock: Lock = await waiting;
    try {
      expect(lock.validity).toBeLessThanOrEqual(ttl - driftOf(ttl));
      expect(lock.validity).toBeGreaterThan(ttl - driftOf(ttl) - 150); // not ~500 ms less
    } finally {
      await lock.release();
    }
  });

  it('acquireTimeout bounds the wait: LockAcquisitionError mentioning acquireTimeout, close to the bound', async () => {
    const options = { commandTimeout: 100, retryDelay: 50, retryJitter: 10 };
    const redlock = await set.redlock(options);
    const resource = resourceName('bounded');
    const acquireTimeout = 500;
    const { ms, error } = await whileHeldByAnother(resource, () =>
      timed(redlock.acquire(resource, 1_000, { retryCount: Infinity, acquireTimeout })),
    );
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).message).toContain('acquireTimeout');
    expect((error as LockAcquisitionError).attempts).toBeGreaterThan(1);
    expect(ms).toBeGreaterThanOrEqual(acquireTimeout - options.retryDelay - options.retryJitter - 10);
    expect(ms).toBeLessThan(acquireTimeout + 2 * options.commandTimeout + 500);
  });

  it('a deadline that cuts a round short still says busy when another holder held it all along', async () => {
    // A long commandTimeout (and a TTL long enough not to cap it): paused masters do not time out
    // before the deadline, which cuts the round short with two masters unheard. The last whole round
    // said "held": busy.
    const redlock = await set.redlock({ commandTimeout: 5_000, retryDelay: 50, retryJitter: 0 });
    const resource = resourceName('cut-short');
    const key = `lock:${resource}`;
    const error = await whileHeldByAnother(resource, async () => {
      const acquiring = rejectionOf(redlock.acquire(resource, 30_000, { retryCount: Infinity, acquireTimeout: 1_500 }));
      // Refused once and queued with its ticket on every master: then two masters stop answering.
      expect(
        await waitFor(async () =>
          (await Promise.all(set.clients.map((c) => c.zcard(`${key}:handoff:queue`)))).every((n) => n >= 1),
        ),
      ).toBe(true);
      await Promise.all(set.clients.slice(1).map((c) => c.call('CLIENT', 'PAUSE', '2500')));
      return acquiring;
    });
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).reason).toBe('timeout');
    expect((error as LockAcquisitionError).busy).toBe(true);
  });

  it('an AbortSignal aborts a waiting acquire promptly, rejecting with the signal reason', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('aborted');
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const { ms, error } = await whileHeldByAnother(resource, async () => {
      const waiting = timed(
        redlock.acquire(resource, 1_000, {
          retryCount: 100,
          retryDelay: 2_000,
          retryJitter: 0,
          signal: controller.signal,
        }),
      );
      await sleep(100);
      controller.abort(reason);
      return waiting;
    });
    expect(error).toBe(reason);
    expect(ms).toBeLessThan(100 + 400); // not the 2 s retry delay
  });

  it('an already aborted signal rejects with its reason and writes nothing', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('pre-aborted');
    const reason = new Error('already cancelled');
    const error = await rejectionOf(redlock.acquire(resource, 1_000, { signal: AbortSignal.abort(reason) }));
    expect(error).toBe(reason);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('using() does not call the callback when acquisition fails', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('no-callback');
    let called = false;
    const error = await whileHeldByAnother(resource, () =>
      rejectionOf(
        redlock.using(
          resource,
          1_000,
          () => {
            called = true;
          },
          { retryCount: 0 },
        ),
      ),
    );
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(called).toBe(false);
  });
});
