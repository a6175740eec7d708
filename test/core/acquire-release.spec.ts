import { describe, expect, it } from '@jest/globals';
import {
  rejectionOf,
  resourceName,
  sleep,
  useMasters,
  valuesOn,
  expectAbsentOnAll,
  expectEventuallyAbsent,
  expectHeldOnAll,
} from '../support/index.js';
import { LockAcquisitionError } from '../../lib/index.js';

describe.each([3, 5])('acquire and release on %i masters', (count) => {
  const set = useMasters(count);

  it('holds `lock:<resource>` with the lock value and a live TTL on every master, and removes it from all on release', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('order');
    const lock = await redlock.acquire(resource, 2_000);
    try {
      expect(lock.resources).toEqual([resource]);
      expect(lock.value.length).toBeGreaterThanOrEqual(22); // >= 128 bits in base64url
      await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
    } finally {
      await lock.release();
    }
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('uses a fresh random value for every lock', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('fresh');
    const first = await redlock.acquire(resource, 1_000);
    await first.release();
    const second = await redlock.acquire(resource, 1_000);
    await second.release();
    expect(second.value).not.toBe(first.value);
  });

  it('releasing twice is idempotent and does not throw', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('twice');
    const lock = await redlock.acquire(resource, 2_000);
    await expect(lock.release()).resolves.toBeUndefined();
    await expect(lock.release()).resolves.toBeUndefined();
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
    expect(lock.isHeld).toBe(false);
  });

  it('releasing after the key expired resolves without throwing', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('expired');
    const lock = await redlock.acquire(resource, 300);
    await sleep(400);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
    await expect(lock.release()).resolves.toBeUndefined();
  });

  it('releasing a lapsed lock does not delete the key of the holder who took over (compare-and-delete)', async () => {
    const a = await set.redlock({ commandTimeout: 100 });
    const b = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('takeover');
    const stale = await a.acquire(resource, 300);
    await sleep(400);
    const fresh = await b.acquire(resource, 2_000, { retryCount: 0 });
    try {
      await stale.release();
      await expectHeldOnAll(set.clients, `lock:${resource}`, fresh.value);
    } finally {
      await fresh.release();
    }
  });

  it('`await using` releases the lock on every master at the end of the block', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('dispose');
    {
      await using lock = await redlock.acquire(resource, 2_000);
      await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
    }
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('a multi-resource lock sets every key with the same value on every master and releases them all', async () => {
    const redlock = await set.redlock();
    const a = resourceName('multi-a');
    const b = resourceName('multi-b');
    const lock = await redlock.acquire([a, b], 2_000);
    try {
      expect(lock.resources).toEqual([a, b]);
      await expectHeldOnAll(set.clients, `lock:${a}`, lock.value);
      await expectHeldOnAll(set.clients, `lock:${b}`, lock.value);
    } finally {
      await lock.release();
    }
    await expectAbsentOnAll(set.clients, `lock:${a}`);
    await expectAbsentOnAll(set.clients, `lock:${b}`);
  });

  it('multi-resource is all-or-nothing: with `b` held, acquiring [a, b] fails and leaves no `lock:a` on any master', async () => {
    const holder = await set.redlock();
    const contender = await set.redlock({ commandTimeout: 100 });
    const a = resourceName('aon-a');
    const b = resourceName('aon-b');
    // Long enough that the holder's key (never renewed) outlives the test on a loaded machine.
    const held = await holder.acquire(b, 10_000);
    try {
      const error = await rejectionOf(
        contender.acquire([a, b], 2_000, { retryCount: 1, retryDelay: 20, retryJitter: 0 }),
      );
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect((error as LockAcquisitionError).busy).toBe(true);
      await expectAbsentOnAll(set.clients, `lock:${a}`);
      await expectHeldOnAll(set.clients, `lock:${b}`, held.value); // the holder's key is untouched
    } finally {
      await held.release();
    }
  });

  it('using() returns the callback result and releases on every master', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('using-result');
    const result = await redlock.using(resource, 2_000, async (lock) => {
      await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
      return { paid: true };
    });
    expect(result).toEqual({ paid: true });
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it("using() passes the callback's own error through unchanged and still releases", async () => {
    const redlock = await set.redlock();
    const resource = resourceName('using-error');
    const own = new TypeError('not a number');
    const error = await rejectionOf(
      redlock.using(resource, 2_000, () => {
        throw own;
      }),
    );
    expect(error).toBe(own);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('a quorum won with no validity left is a failure: a TTL shorter than the drift can never be held', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('too-short');
    const error = await rejectionOf(redlock.acquire(resource, 1, { retryCount: 2, retryDelay: 5, retryJitter: 0 }));
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).attempts).toBe(3);
  });

  it('keeps working after SCRIPT FLUSH on every master (EVALSHA falls back to EVAL)', async () => {
    const redlock = await set.redlock();
    const first = await redlock.acquire(resourceName('flush'), 2_000);
    await first.release();
    await Promise.all(set.clients.map((c) => c.script('FLUSH')));
    const resource = resourceName('after-flush');
    const lock = await redlock.acquire(resource, 2_000);
    try {
      await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
      await lock.extend();
    } finally {
      await lock.release();
    }
    await expectEventuallyAbsent(set.clients, `lock:${resource}`);
  });

  it('resource names travel as KEYS: quotes and Lua syntax in a name are just bytes of the key', async () => {
    const redlock = await set.redlock();
    const canary = resourceName('canary');
    await Promise.all(set.clients.map((c) => c.set(canary, 'alive')));
    const resource = `x') redis.call('flushall') --"]]\n${resourceName('lua')}`;
    const lock = await redlock.acquire([resource, `${resource}'`], 2_000);
    await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
    await expectHeldOnAll(set.clients, `lock:${resource}'`, lock.value);
    await lock.release();
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
    await expectAbsentOnAll(set.clients, `lock:${resource}'`);
    expect(await valuesOn(set.clients, canary)).toEqual(set.clients.map(() => 'alive')); // no FLUSHALL ran
    await Promise.all(set.clients.map((c) => c.del(canary)));
  });

  it('honours a custom keyPrefix', async () => {
    const redlock = await set.redlock({ keyPrefix: 'custom-prefix/' });
    const resource = resourceName('prefixed');
    const lock = await redlock.acquire(resource, 2_000);
    try {
      await expectHeldOnAll(set.clients, `custom-prefix/${resource}`, lock.value);
      expect(await valuesOn(set.clients, `lock:${resource}`)).toEqual(set.clients.map(() => null));
    } finally {
      await lock.release();
    }
    await expectAbsentOnAll(set.clients, `custom-prefix/${resource}`);
  });
});
