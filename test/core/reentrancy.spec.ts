import { describe, expect, it } from '@jest/globals';
import {
  timed,
  now,
  resourceName,
  useMasters,
  valuesOn,
  expectAbsentOnAll,
  expectHeldOnAll,
} from '../support/index.js';
import { currentLock, type Lock } from '../../lib/index.js';

describe('reentrancy of using() in one call chain (3 masters)', () => {
  const set = useMasters(3);
  // A nested call that tried to acquire again would find the resource busy: fail at once instead of
  // waiting, so that a missing reentrancy shows as a rejection rather than a hang.
  const noWaiting = { retryCount: 0 };

  it('a nested using() on the same resource runs at once with the same Lock, without re-acquiring', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('same');
    let outer: Lock | undefined;
    let inner: Lock | undefined;

    const result = await redlock.using(
      resource,
      2_000,
      async (lock) => {
        outer = lock;
        const nested = await timed(
          redlock.using(
            resource,
            2_000,
            async (again) => {
              inner = again;
              await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value); // still the outer value
              return 'inner';
            },
            noWaiting,
          ),
        );
        expect(nested.error).toBeUndefined();
        expect(nested.value).toBe('inner');
        expect(nested.ms).toBeLessThan(500);
        expect(lock.isHeld).toBe(true); // the inner call did not release the outer lock
        await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
        return 'outer';
      },
      noWaiting,
    );

    expect(result).toBe('outer');
    expect(inner).toBe(outer);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('a nested using() on [same, other] acquires only `other`', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const same = resourceName('same');
    const other = resourceName('other');

    await redlock.using(
      same,
      2_000,
      async (outer) => {
        await redlock.using(
          [same, other],
          2_000,
          async (inner) => {
            expect(inner).not.toBe(outer);
            expect(inner.resources).toEqual([other]);
            await expectHeldOnAll(set.clients, `lock:${other}`, inner.value);
            await expectHeldOnAll(set.clients, `lock:${same}`, outer.value);
            expect(currentLock(same)).toBe(outer);
            expect(currentLock(other)).toBe(inner);
          },
          noWaiting,
        );
        await expectAbsentOnAll(set.clients, `lock:${other}`);
        await expectHeldOnAll(set.clients, `lock:${same}`, outer.value); // the inner release left it alone
      },
      noWaiting,
    );

    await expectAbsentOnAll(set.clients, `lock:${same}`);
  });

  it('currentLock() gives the lock inside the callback, and nothing outside it', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('current');
    expect(currentLock()).toBeUndefined();
    await redlock.using(resource, 2_000, async (lock) => {
      await Promise.resolve();
      expect(currentLock()).toBe(lock);
      expect(currentLock(resource)).toBe(lock);
      expect(currentLock('some-other-resource')).toBeUndefined();
    });
    expect(currentLock()).toBeUndefined();
  });

  it('a using() outside the call chain is not reentrant: it waits for the holder', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('outside');
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));

    const first = redlock.using(resource, 2_000, async () => {
      entered();
      await holding;
    });
    await inside;
    // Started from the test's own chain, not from inside the callback.
    const start = now();
    const second = redlock.using(resource, 2_000, () => now(), { retryCount: 100, retryDelay: 20, retryJitter: 5 });
    setTimeout(release, 200);
    await first;
    const enteredSecondAt = await second;
    expect(enteredSecondAt - start).toBeGreaterThanOrEqual(150);
  });

  it('a nested using() on another Redlock (different keyPrefix) takes its own key: reentrancy is per Redis key, not per name', async () => {
    const orders = await set.redlock({ commandTimeout: 100, keyPrefix: 'orders:' });
    const billing = await set.redlock({ commandTimeout: 100, keyPrefix: 'billing:' });
    const resource = resourceName('shared-name');

    await orders.using(
      resource,
      2_000,
      async (outer) => {
        await billing.using(
          resource,
          2_000,
          async (inner) => {
            // `billing:<resource>` is a different Redis key from `orders:<resource>`: holding the latter
            // must not let billing skip taking the former, or another billing caller could hold it too.
            expect(await valuesOn(set.clients, `billing:${resource}`)).toEqual(set.clients.map(() => inner.value));
            expect(inner).not.toBe(outer);
            expect(inner.keys).toEqual([`billing:${resource}`]);
          },
          noWaiting,
        );
      },
      noWaiting,
    );
  });
});
