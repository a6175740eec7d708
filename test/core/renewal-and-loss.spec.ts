import { describe, expect, it } from '@jest/globals';
import {
  abortOf,
  driftOf,
  pttlsOn,
  now,
  quorumOf,
  rejectionOf,
  resourceName,
  sleep,
  useMasters,
  valuesOn,
  whilePaused,
  expectAbsentOnAll,
  expectEventuallyAbsent,
} from '../support/index.js';
import { LockLostError, type Lock } from '../../lib/index.js';

describe('auto-renewal and lock loss (5 masters)', () => {
  const set = useMasters(5);
  const majority = quorumOf(5);

  /** How many masters hold `key` with `value` and a live TTL. */
  async function holdersOf(key: string, value: string): Promise<number> {
    const [values, pttls] = await Promise.all([valuesOn(set.clients, key), pttlsOn(set.clients, key)]);
    return values.filter((v, i) => v === value && pttls[i] > 0).length;
  }

  it('using() keeps a 400 ms lock through a 2 s callback, then releases it on every master', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('long-job');
    const key = `lock:${resource}`;
    const samples: { holders: number; aborted: boolean }[] = [];

    const result = await redlock.using(resource, 400, async (lock) => {
      const end = now() + 2_000;
      while (now() < end) {
        samples.push({ holders: await holdersOf(key, lock.value), aborted: lock.signal.aborted });
        await sleep(100);
      }
      return 'done';
    });

    expect(result).toBe('done');
    expect(samples.length).toBeGreaterThanOrEqual(10);
    for (const sample of samples) {
      expect(sample.aborted).toBe(false);
      expect(sample.holders).toBeGreaterThanOrEqual(majority);
    }
    await expectAbsentOnAll(set.clients, key);
  });

  it('acquire({ autoExtend: true }) keeps a 400 ms lock for 3 TTLs until released', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('auto-extend');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 400, { autoExtend: true });
    try {
      await sleep(1_200);
      expect(lock.signal.aborted).toBe(false);
      expect(lock.isHeld).toBe(true);
      expect(await holdersOf(key, lock.value)).toBeGreaterThanOrEqual(majority);
    } finally {
      await lock.release();
    }
    expect(lock.signal.aborted).toBe(false); // a normal release does not abort the signal
    await expectAbsentOnAll(set.clients, key);
  });

  it('renewal retries a failed extension: a 300 ms partition of 3 of 5 masters does not lose a 1 s lock', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('brief-partition');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 1_000, { autoExtend: true });
    try {
      await sleep(250); // the first renewal falls due at ~330 ms, inside the partition
      await whilePaused(set.masters.slice(0, 3), () => sleep(300));
      await sleep(1_000); // past the deadline of the acquisition and of any extension before the partition
      expect(lock.signal.aborted).toBe(false);
      expect(lock.isHeld).toBe(true);
      expect(await holdersOf(key, lock.value)).toBeGreaterThanOrEqual(majority);
    } finally {
      await lock.release();
    }
    await expectEventuallyAbsent(set.clients, key);
  });

  it('a lock without autoExtend: its signal aborts with LockLostError before its validity ends', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('no-renewal');
    // The signal aborts 5 % of the TTL before validity ends: with 2 s that is 100 ms, more than a
    // loaded machine delays a timer (400 ms left 20 ms, which a busy event loop sometimes overran).
    const ttl = 2_000;
    const t0 = now();
    const lock = await redlock.acquire(resource, ttl);
    try {
      const aborted = await abortOf(lock.signal);
      expect(aborted.reason).toBeInstanceOf(LockLostError);
      expect((aborted.reason as LockLostError).resources).toEqual([resource]);
      expect(aborted.at).toBeLessThan(t0 + ttl - driftOf(ttl));
      expect(lock.lostReason).toBe(aborted.reason);
    } finally {
      await lock.release();
    }
  });

  it('pausing 3 of 5 masters under an auto-extended lock aborts its signal with LockLostError before the validity deadline', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('partition');
    const ttl = 600;
    const t0 = now();
    const lock = await redlock.acquire(resource, ttl, { autoExtend: true });
    const abort = abortOf(lock.signal);
    try {
      const aborted = await whilePaused(set.masters.slice(0, 3), () => abort);
      expect(aborted.reason).toBeInstanceOf(LockLostError);
      expect(aborted.at).toBeLessThan(t0 + ttl - driftOf(ttl));
      expect(lock.isHeld).toBe(false);
    } finally {
      await lock.release();
    }
    await expectEventuallyAbsent(set.clients, `lock:${resource}`);
  });

  it('using() whose lock was lost rejects with the LockLostError after the callback settles', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('lost-using');
    const ttl = 600;
    let callbackSettled = false;
    let seen: Lock | undefined;

    const error = await rejectionOf(
      redlock.using(resource, ttl, async (lock) => {
        seen = lock;
        await whilePaused(set.masters.slice(0, 3), () => abortOf(lock.signal));
        await sleep(50); // the callback goes on a little after the loss
        callbackSettled = true;
        return 'finished anyway';
      }),
    );

    expect(callbackSettled).toBe(true);
    expect(error).toBeInstanceOf(LockLostError);
    expect(error).toBe(seen!.signal.reason);
    await expectEventuallyAbsent(set.clients, `lock:${resource}`);
  });

  it("using() whose lock was lost passes the callback's own error through unchanged", async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('lost-own-error');
    class PaymentDeclined extends Error {}
    const own = new PaymentDeclined('card declined');

    const error = await rejectionOf(
      redlock.using(resource, 600, async (lock) => {
        await whilePaused(set.masters.slice(0, 3), () => abortOf(lock.signal));
        expect(lock.signal.reason).toBeInstanceOf(LockLostError);
        throw own;
      }),
    );

    expect(error).toBe(own);
    await expectEventuallyAbsent(set.clients, `lock:${resource}`);
  });

  it('a majority deleting the key during using() makes the next renewal abort the signal with LockLostError', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('deleted');
    const key = `lock:${resource}`;
    const ttl = 1_200;
    let deletedAt = 0;
    let aborted: { at: number; reason: unknown } | undefined;

    const error = await rejectionOf(
      redlock.using(resource, ttl, async (lock) => {
        await Promise.all(set.clients.slice(0, 3).map((c) => c.del(key)));
        deletedAt = now();
        aborted = await abortOf(lock.signal);
      }),
    );

    expect(aborted!.reason).toBeInstanceOf(LockLostError);
    expect((aborted!.reason as Error).message).toMatch(/no longer hold/);
    // Found by the next renewal (every ~ttl/3), well before the loss timer (~ttl after the last extension).
    expect(aborted!.at - deletedAt).toBeLessThan(ttl * 0.65);
    expect(error).toBe(aborted!.reason);
    await expectAbsentOnAll(set.clients, key);
  });
});
