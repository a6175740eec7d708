import { describe, expect, it } from '@jest/globals';
import {
  driftOf,
  pttlsOn,
  rejectionOf,
  resourceName,
  sleep,
  useMasters,
  valuesOn,
  waitFor,
  whilePaused,
  expectAbsentOnAll,
} from '../support/index.js';
import { LockExtensionError, LockLostError } from '../../lib/index.js';

describe('extend (5 masters)', () => {
  const set = useMasters(5);

  it('extends the validity and the TTL on every master while the lock is held', async () => {
    // commandTimeout 300: healthy masters must answer in time even on a loaded machine.
    const redlock = await set.redlock({ commandTimeout: 300 });
    const resource = resourceName('extend');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 1_000);
    try {
      await sleep(400);
      const validityBefore = lock.validity;
      for (const pttl of await pttlsOn(set.clients, key)) expect(pttl).toBeLessThan(700);

      await lock.extend();

      expect(lock.validity).toBeGreaterThan(validityBefore + 250);
      expect(lock.validity).toBeLessThanOrEqual(1_000 - driftOf(1_000));
      await waitFor(async () => (await pttlsOn(set.clients, key)).every((p) => p > 900), 300, 10);
      for (const pttl of await pttlsOn(set.clients, key)) expect(pttl).toBeGreaterThan(900);
      expect(await valuesOn(set.clients, key)).toEqual(set.clients.map(() => lock.value));
    } finally {
      await lock.release();
    }
  });

  it('extend(ttl) sets the new TTL on every master and on the lock', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('extend-ttl');
    const lock = await redlock.acquire(resource, 500);
    try {
      await lock.extend(3_000);
      expect(lock.ttl).toBe(3_000);
      expect(lock.validity).toBeGreaterThan(2_500);
      // extend() resolves on a quorum; the other masters' PEXPIREs are sent and land a moment later.
      await waitFor(async () => (await pttlsOn(set.clients, `lock:${resource}`)).every((p) => p > 2_500), 300, 10);
      for (const pttl of await pttlsOn(set.clients, `lock:${resource}`)) expect(pttl).toBeGreaterThan(2_500);
    } finally {
      await lock.release();
    }
  });

  it('extend after the validity lapsed rejects with LockLostError and does not recreate the key on any master', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('lapsed');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 300);
    await sleep(400);
    expect(lock.isHeld).toBe(false);

    const error = await rejectionOf(lock.extend());

    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).resources).toEqual([resource]);
    await sleep(50);
    await expectAbsentOnAll(set.clients, key);
    await lock.release();
  });

  it('never revives a lock that lapsed locally while its keys still live on the masters (drift window)', async () => {
    // driftFactor 0.4: validity ends ~402 ms before the keys expire on Redis.
    const redlock = await set.redlock({ commandTimeout: 100, driftFactor: 0.4 });
    const resource = resourceName('drift-window');
    const key = `lock:${resource}`;
    const ttl = 1_000;
    const lock = await redlock.acquire(resource, ttl);
    await sleep(ttl - driftOf(ttl, 0.4) + 100);
    expect(lock.isHeld).toBe(false);
    const before = await pttlsOn(set.clients, key);
    for (const pttl of before) expect(pttl).toBeGreaterThan(0); // still there on Redis

    const error = await rejectionOf(lock.extend());

    expect(error).toBeInstanceOf(LockLostError);
    for (const pttl of await pttlsOn(set.clients, key)) expect(pttl).toBeLessThan(Math.max(...before) + 1);
    await lock.release();
  });

  it('extend after release rejects with LockLostError and does not recreate the key', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('released');
    const lock = await redlock.acquire(resource, 2_000);
    await lock.release();

    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('extend when a majority no longer holds the key rejects with LockLostError and aborts the signal', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('stolen');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 2_000);
    const signal = lock.signal;
    try {
      await Promise.all(set.clients.slice(0, 3).map((c) => c.del(key)));

      const error = await rejectionOf(lock.extend());

      expect(error).toBeInstanceOf(LockLostError);
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toBe(error);
      expect(await valuesOn(set.clients.slice(0, 3), key)).toEqual([null, null, null]);
    } finally {
      await lock.release();
    }
  });

  it('extend without a quorum of answers (3 of 5 hung) rejects with LockExtensionError and the lock stays valid', async () => {
    // commandTimeout 300: only the hung masters may time out, also on a loaded machine (100 ms was
    // sometimes overrun by a healthy one: "4 of 5 timed out").
    const redlock = await set.redlock({ commandTimeout: 300 });
    const resource = resourceName('hung-extend');
    const lock = await redlock.acquire(resource, 2_000);
    const signal = lock.signal;
    try {
      const error = await whilePaused(set.masters.slice(0, 3), () => rejectionOf(lock.extend()));
      expect(error).toBeInstanceOf(LockExtensionError);
      expect((error as LockExtensionError).outcomes.filter((o) => o.status === 'timeout')).toHaveLength(3);
      expect(lock.isHeld).toBe(true);
      expect(signal.aborted).toBe(false);
    } finally {
      await lock.release();
    }
  });
});
