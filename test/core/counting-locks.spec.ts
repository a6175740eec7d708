import { describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  abortOf,
  dbsizesOn,
  timed,
  rejectionOf,
  resourceName,
  sleep,
  useMasters,
  waitFor,
  whilePaused,
} from '../support/index.js';
import {
  LockAcquisitionError,
  LockLostError,
  RedlockConfigError,
  lockModeOf,
  type Lock,
  type Redlock,
} from '../../lib/index.js';

/** The permit slot key of `lock` (a counting lock) on the masters: the one holding its value on a quorum. */
async function slotKeyOf(clients: readonly Redis[], resource: string, limit: number, lock: Lock): Promise<string> {
  for (let i = 0; i < limit; i++) {
    const key = `lock:${resource}:permit:${i}`;
    const values = await Promise.all(clients.map((c) => c.get(key)));
    if (values.filter((v) => v === lock.value).length >= 3) return key;
  }
  throw new Error('no slot holds this lock on a quorum');
}

describe('counting locks: `limit: n` (5 masters)', () => {
  const set = useMasters(5);
  const patient = { retryCount: Infinity, retryDelay: 20, retryJitter: 10, acquireTimeout: 30_000 };

  it('n+1 callers across two instances never exceed n holders (in-process and Redis-side counters), and all complete', async () => {
    const [a, b] = [await set.redlock({ commandTimeout: 200 }), await set.redlock({ commandTimeout: 200 })];
    const resource = resourceName('sem');
    const limit = 3;
    const counterKey = `count:${resource}`; // on master 0, outside the lock's keys
    let holders = 0;
    let most = 0;
    let mostRedis = 0;
    const tokens: string[] = [];
    const run = (r: Redlock, i: number) =>
      r.using(
        resource,
        2_000,
        async (lock) => {
          holders++;
          most = Math.max(most, holders);
          mostRedis = Math.max(mostRedis, await set.clients[0].incr(counterKey));
          tokens.push(lock.value);
          expect(lockModeOf(lock)).toEqual({ mode: 'write', limit });
          await sleep(30 + (i % 4) * 10);
          await set.clients[0].decr(counterKey);
          holders--;
          return i;
        },
        { ...patient, limit },
      );
    const rounds = 3;
    const callers = Array.from({ length: (limit + 1) * rounds }, (_, i) => run(i % 2 ? a : b, i));
    expect(await Promise.all(callers)).toEqual(callers.map((_, i) => i));
    expect(most).toBeLessThanOrEqual(limit);
    expect(mostRedis).toBeLessThanOrEqual(limit);
    expect(most).toBeGreaterThan(1); // the permits were shared, not a mutex
    expect(new Set(tokens).size).toBe(tokens.length);
    await set.clients[0].del(counterKey);
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('tryAcquire: n holders get their own Lock, the n+1st gets null; a released permit is free again', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('try');
    const locks = await Promise.all([1, 2].map(() => redlock.tryAcquire(resource, 5_000, { limit: 2, fencing: true })));
    expect(locks.every((l) => l !== null)).toBe(true);
    const [x, y] = locks as Lock[];
    expect(x.value).not.toBe(y.value);
    expect(x.fencingToken).not.toBe(y.fencingToken);
    expect(await redlock.tryAcquire(resource, 5_000, { limit: 2 })).toBeNull();
    await x.release();
    const z = await redlock.tryAcquire(resource, 5_000, { limit: 2, fencing: true });
    expect(z).not.toBeNull();
    expect(z!.fencingToken!).toBeGreaterThan(Math.max(x.fencingToken!, y.fencingToken!));
    await Promise.all([y.release(), z!.release()]);
    await Promise.all(set.clients.map((c) => c.del(`fence:${resource}`)));
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('a different `limit` for a held resource is refused with an error naming both values; agreed again once free', async () => {
    const [a, b] = [await set.redlock(), await set.redlock()];
    const resource = resourceName('mismatch');
    const held = await a.acquire(resource, 5_000, { limit: 2 });
    for (const call of [
      () => b.acquire(resource, 5_000, { limit: 3, retryCount: 3, retryDelay: 10, retryJitter: 0 }),
      () => b.tryAcquire(resource, 5_000, { limit: 3 }),
      () => b.using(resource, 5_000, () => 'never', { limit: 1 }),
    ]) {
      const error = await rejectionOf(call());
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('limit');
      expect((error as Error).message).toMatch(/`limit` [31] differs from the limit 2/);
    }
    await held.release();
    const other = await b.acquire(resource, 5_000, { limit: 3 });
    await other.release();
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('refuses bad `limit` / `mode` naming the option, before anything is written', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('bad');
    const cases: [unknown, string][] = [
      [{ limit: 0 }, 'limit'],
      [{ limit: -2 }, 'limit'],
      [{ limit: 1.5 }, 'limit'],
      [{ limit: '2' }, 'limit'],
      [{ limit: Infinity }, 'limit'],
      [{ mode: 'exclusive' }, 'mode'],
      [{ mode: 'read', limit: 2 }, 'mode'],
    ];
    for (const [options, option] of cases) {
      for (const call of [
        () => redlock.acquire(resource, 1_000, options as never),
        () => redlock.tryAcquire(resource, 1_000, options as never),
        () => redlock.using(resource, 1_000, () => 1, options as never),
      ]) {
        const error = await rejectionOf(call());
        expect(error).toBeInstanceOf(RedlockConfigError);
        expect((error as RedlockConfigError).option).toBe(option);
      }
    }
    const several = await rejectionOf(redlock.acquire([resource, `${resource}-2`], 1_000, { limit: 2 }));
    expect((several as RedlockConfigError).option).toBe('limit');
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('auto-renewal keeps a permit past its TTL; losing the slot on a majority is reported by extend and the signal', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('renew');
    const renewed = await redlock.acquire(resource, 300, { limit: 2, autoExtend: true });
    await sleep(900);
    expect(renewed.isHeld).toBe(true);
    expect(renewed.signal.aborted).toBe(false);

    const doomed = await redlock.acquire(resource, 5_000, { limit: 2 });
    const key = await slotKeyOf(set.clients, resource, 2, doomed);
    const aborted = abortOf(doomed.signal);
    await Promise.all(set.clients.slice(0, 3).map((c) => c.del(key)));
    expect(await rejectionOf(doomed.extend())).toBeInstanceOf(LockLostError);
    expect((await aborted).reason).toBeInstanceOf(LockLostError);
    await Promise.all([renewed.release(), doomed.release()]);
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('an unrenewed permit signals its loss before its validity ends', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('expire');
    const lock = await redlock.acquire(resource, 400, { limit: 2 });
    const deadline = performance.now() + lock.validity;
    const { at, reason } = await abortOf(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(at).toBeLessThan(deadline);
    await lock.release();
  });

  it('2 of 5 masters hung: permits are granted and released; 3 of 5 hung: LockAcquisitionError in bounded time, not busy', async () => {
    const redlock = await set.redlock({ commandTimeout: 150 });
    const resource = resourceName('hung');
    await whilePaused(set.masters.slice(3), async () => {
      const locks = await Promise.all(
        [1, 2].map(() => redlock.acquire(resource, 3_000, { limit: 2, retryCount: 5, retryDelay: 20, retryJitter: 5 })),
      );
      expect(await redlock.tryAcquire(resource, 3_000, { limit: 2 })).toBeNull();
      await Promise.all(locks.map((l) => l.release()));
    });
    const { ms, error } = await whilePaused(set.masters.slice(0, 3), () =>
      timed(redlock.acquire(resource, 3_000, { limit: 2, retryCount: 2, retryDelay: 30, retryJitter: 5 })),
    );
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).busy).toBe(false);
    expect((error as LockAcquisitionError).outcomes.filter((o) => o.status === 'timeout').length).toBe(3);
    expect(ms).toBeLessThan(3 * 150 + 3 * 35 + 2_000); // three attempts of one round each, generous margin
    expect(await dbsizesOn(set.clients, 2_000)).toEqual([0, 0, 0, 0, 0]);
  });

  it('a released permit wakes the waiters of this process in arrival order (FIFO)', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('fifo');
    const held = await redlock.acquire(resource, 10_000, { limit: 1 });
    const order: number[] = [];
    const slow = { limit: 1, retryCount: Infinity, retryDelay: 5_000, retryJitter: 0, acquireTimeout: 20_000 };
    const waiters = [0, 1, 2].map(async (i) => {
      await sleep(i * 30);
      const lock = await redlock.acquire(resource, 10_000, slow);
      order.push(i);
      await lock.release();
    });
    await sleep(200);
    const start = performance.now();
    await held.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2]);
    expect(performance.now() - start).toBeLessThan(4_000); // woken, not the 5 s retry delay
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('reentrancy: a nested using() with the same limit runs on the outer permit; another limit is refused', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('reenter');
    const result = await redlock.using(
      resource,
      2_000,
      async (outer) =>
        redlock.using(
          resource,
          2_000,
          async (inner) => {
            expect(inner).toBe(outer);
            const error = await rejectionOf(redlock.using(resource, 2_000, () => 1, { limit: 2 }));
            expect((error as RedlockConfigError).option).toBe('limit');
            return 'nested';
          },
          { limit: 1, retryCount: 0 },
        ),
      { limit: 1 },
    );
    expect(result).toBe('nested');
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('close() releases held permits on every master', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('close');
    const lock = await redlock.acquire(resource, 10_000, { limit: 3 });
    await redlock.close();
    expect(lock.lostReason).toBeInstanceOf(LockLostError);
    expect(await waitFor(async () => (await dbsizesOn(set.clients)).every((n) => n === 0), 1_000)).toBe(true);
  });
});
