/**
 * `onBusy`, `minHold` and `maxHold` on `using()` and `acquire()`, on real masters (3 independent
 * redis-server processes started by the test).
 */
import { describe, expect, it } from '@jest/globals';
import {
  now,
  resourceName,
  sleep,
  useMasters,
  valuesOn,
  expectAbsentOnAll,
  expectHeldOnAll,
} from '../support/index.js';
import { LockAcquisitionError, LockLostError, RedlockConfigError } from '../../lib/index.js';

/** Resolves to 'pending' if `p` has not settled within `ms`. */
const settledWithin = <T>(p: Promise<T>, ms: number): Promise<T | 'pending'> =>
  Promise.race([p, new Promise<'pending'>((resolve) => setTimeout(resolve, ms, 'pending').unref())]);

describe("onBusy: 'skip' (3 masters)", () => {
  const set = useMasters(3);

  it("using(…, { onBusy: 'skip' }) resolves to undefined without running fn while another holder has the lock, and without retrying", async () => {
    // A long retryDelay: if 'skip' retried (the module's retryCount is 10), the call would take minutes.
    const redlock = await set.redlock({ commandTimeout: 200, retryDelay: 30_000, retryJitter: 0 });
    const resource = resourceName('skip');
    const holder = await redlock.acquire(resource, 5_000, { retryCount: 0 });
    let ran = false;
    const skipped = redlock.using(
      resource,
      2_000,
      async () => {
        ran = true;
        return 'ran';
      },
      { onBusy: 'skip' },
    );
    expect(await settledWithin(skipped, 5_000)).toBeUndefined();
    expect(ran).toBe(false);
    await expectHeldOnAll(set.clients, `lock:${resource}`, holder.value); // the holder's lock untouched
    await holder.release();

    // Free: 'skip' runs fn and returns its result.
    await expect(redlock.using(resource, 2_000, async () => 'ran', { onBusy: 'skip' })).resolves.toBe('ran');
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it("acquire(…, { onBusy: 'skip' }) resolves to undefined when busy, to a Lock when free", async () => {
    const redlock = await set.redlock({ commandTimeout: 200, retryDelay: 30_000, retryJitter: 0 });
    const resource = resourceName('skip-acquire');
    const holder = await redlock.acquire(resource, 5_000);
    expect(
      await settledWithin(redlock.acquire(resource, 2_000, { onBusy: 'skip', autoExtend: true }), 5_000),
    ).toBeUndefined();
    await holder.release();
    const lock = await redlock.acquire(resource, 2_000, { onBusy: 'skip' });
    expect(lock?.isHeld).toBe(true);
    await lock?.release();
  });

  it("'skip' still honours an explicit retryCount: it waits for a holder that releases meanwhile", async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('skip-retry');
    const holder = await redlock.acquire(resource, 5_000);
    setTimeout(() => void holder.release(), 300);
    await expect(
      redlock.using(resource, 2_000, async () => 'ran', {
        onBusy: 'skip',
        retryCount: 100,
        retryDelay: 50,
        retryJitter: 10,
      }),
    ).resolves.toBe('ran');
  });

  it("'skip' rejects with LockAcquisitionError (busy false) when Redis, not another holder, stood in the way", async () => {
    // One real master and two that refuse connections: no quorum whoever holds the lock.
    const redlock = await set.redlock({
      nodes: [set.urls[0], 'redis://127.0.0.1:1', 'redis://127.0.0.1:2'],
      commandTimeout: 200,
      connectTimeout: 300,
    });
    const resource = resourceName('skip-down');
    await set.clients[0].set(`lock:${resource}`, 'someone-else', 'PX', 5_000); // and the one up says "held"
    const error = await redlock.using(resource, 2_000, async () => 'ran', { onBusy: 'skip' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).busy).toBe(false);
    await expect(redlock.acquire(resource, 2_000, { onBusy: 'skip' })).rejects.toBeInstanceOf(LockAcquisitionError);
  });
});

describe('minHold (3 masters)', () => {
  const set = useMasters(3);

  it('keeps the lock until minHold after acquisition when fn ends sooner, then lets it lapse on every master', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const other = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('min-hold');
    const key = `lock:${resource}`;
    const minHold = 1_500;
    let value = '';
    const start = now();
    await expect(
      redlock.using(resource, 5_000, async (lock) => ((value = lock.value), 'done'), { minHold }),
    ).resolves.toBe('done');
    if (now() - start < minHold - 300) {
      // Still well inside minHold: the keys are there, with no more than what is left of minHold to live.
      await expectHeldOnAll(set.clients, key, value);
      const ttls = await Promise.all(set.clients.map((c) => c.pttl(key)));
      for (const ttl of ttls) expect(ttl).toBeLessThanOrEqual(minHold);
      await expect(other.acquire(resource, 1_000, { retryCount: 0 })).rejects.toBeInstanceOf(LockAcquisitionError);
    }
    await sleep(Math.max(0, minHold - (now() - start)) + 100);
    await expectAbsentOnAll(set.clients, key); // lapsed at minHold, not at the 5 s TTL
    const next = await other.acquire(resource, 1_000, { retryCount: 0 });
    await next.release();
  });

  it('acquire() then release() honours minHold too', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('min-hold-acquire');
    const lock = await redlock.acquire(resource, 5_000, { minHold: 1_500 });
    await lock.release();
    expect(
      (await valuesOn(set.clients, `lock:${resource}`)).filter((v) => v === lock.value).length,
    ).toBeGreaterThanOrEqual(2);
    expect(lock.isHeld).toBe(false);
  });

  it('a reader and a permit released before minHold keep their place until minHold, then lapse (not at the TTL)', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const other = await set.redlock({ commandTimeout: 200 });
    const minHold = 1_500;
    const catalog = resourceName('min-hold-read');
    const exports = resourceName('min-hold-permit');
    const start = now();
    const reader = await redlock.acquire(catalog, 10_000, { mode: 'read', minHold });
    const permit = await redlock.acquire(exports, 10_000, { limit: 1, minHold });
    await Promise.all([reader.release(), permit.release()]);
    if (now() - start < minHold - 300) {
      // still inside minHold: the reader keeps a writer out, the permit fills the limit of 1
      await expect(other.acquire(catalog, 1_000, { retryCount: 0 })).rejects.toBeInstanceOf(LockAcquisitionError);
      await expect(other.acquire(exports, 1_000, { retryCount: 0, limit: 1 })).rejects.toBeInstanceOf(
        LockAcquisitionError,
      );
    }
    await sleep(Math.max(0, minHold - (now() - start)) + 300);
    // shortened to minHold on the masters: free long before the 10 s TTL
    const writer = await other.acquire(catalog, 1_000, { retryCount: 2, retryDelay: 100 });
    const next = await other.acquire(exports, 1_000, { retryCount: 2, retryDelay: 100, limit: 1 });
    await Promise.all([writer.release(), next.release()]);
  });

  it('a minHold already over when fn ends: the lock is deleted at once', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('min-hold-over');
    await redlock.using(resource, 2_000, async () => sleep(150), { minHold: 50 });
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });
});

describe('maxHold (3 masters)', () => {
  const set = useMasters(3);

  it('a method that never returns loses its lock at maxHold: the signal aborts with LockLostError first, then the keys lapse', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const contender = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('max-hold');
    const key = `lock:${resource}`;
    const ttl = 600;
    const maxHold = 1_500; // longer than the TTL: renewal keeps it until then
    let abortedAt = 0;
    let heldWhenAborted = -1;
    let value = '';
    const start = now();
    let finish!: () => void;
    const hung = new Promise<void>((resolve) => (finish = resolve));
    const call = redlock.using(
      resource,
      ttl,
      async (lock) => {
        value = lock.value;
        lock.signal.addEventListener('abort', () => {
          abortedAt = now();
          void valuesOn(set.clients, key).then(
            (values) => (heldWhenAborted = values.filter((v) => v === value).length),
          );
        });
        await hung; // hangs until the test lets it go
        return 'finished';
      },
      { maxHold },
    );
    const outcome = call.then(
      () => 'resolved',
      (e: unknown) => e,
    );
    while (!value) await sleep(5); // the method runs: the lock is held

    // Someone else gets the lock once renewal stopped and the keys lapsed, while the method still hangs.
    const next = await contender.acquire(resource, 1_000, {
      retryCount: Infinity,
      retryDelay: 50,
      retryJitter: 10,
      acquireTimeout: 20_000,
    });
    const takenAt = now();
    expect(abortedAt).toBeGreaterThan(0);
    expect(abortedAt).toBeLessThan(takenAt); // the holder was told before anyone else could take it
    expect(abortedAt - start).toBeGreaterThanOrEqual(maxHold - 50); // renewal carried it past the TTL up to maxHold
    await sleep(50);
    expect(heldWhenAborted).toBeGreaterThanOrEqual(2); // still on a quorum when the signal aborted
    expect(await settledWithin(outcome, 0)).toBe('pending'); // the call waits for the method

    finish();
    const error = await outcome;
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as Error).message).toMatch(/maxHold/);
    await expectHeldOnAll(set.clients, key, next.value); // the late release did not touch the new holder's keys
    await next.release();
  });

  it('acquire() with autoExtend and maxHold aborts the signal at maxHold', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('max-hold-acquire');
    const lock = await redlock.acquire(resource, 400, { autoExtend: true, maxHold: 1_000 });
    const reason = await new Promise<unknown>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)),
    );
    expect(reason).toBeInstanceOf(LockLostError);
    await lock.release();
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });
});

describe('hold options refused with RedlockConfigError naming the option (3 masters)', () => {
  const set = useMasters(3);

  it.each([
    ['onBusy', { onBusy: 'sometimes' }],
    ['minHold', { minHold: -1 }],
    ['minHold', { minHold: 1.5 }],
    ['minHold', { minHold: 5_000 }], // above the 2 s TTL
    ['maxHold', { maxHold: 0 }],
    ['maxHold', { maxHold: 500, minHold: 1_000 }],
  ])('%s %j', async (option, bad) => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('refused');
    let ran = false;
    const error = await redlock.using(resource, 2_000, async () => (ran = true), bad as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe(option);
    expect((error as Error).message).toContain(`\`${option}\``);
    expect(ran).toBe(false);
    await expect(redlock.acquire(resource, 2_000, { autoExtend: true, ...(bad as object) })).rejects.toBeInstanceOf(
      RedlockConfigError,
    );
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('acquire() refuses maxHold without autoExtend', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const error = await redlock.acquire(resourceName('no-renew'), 2_000, { maxHold: 5_000 }).catch((e: unknown) => e);
    expect((error as RedlockConfigError).option).toBe('maxHold');
  });
});
