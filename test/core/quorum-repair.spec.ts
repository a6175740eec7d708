/**
 * Quorum repair (docs/quorum-repair.md): an extension that won a quorum re-takes the key, with the
 * same value, on the masters that lost it or never granted it, and never touches another holder's key.
 */
import { describe, expect, it } from '@jest/globals';
import { pttlsOn, resourceName, useMasters, valuesOn, waitFor, whilePaused } from '../support/index.js';

describe('quorum repair on extend (5 masters)', () => {
  const set = useMasters(5);

  it('a master that lost the key (deleted there) has it back, same value and a fresh TTL, after the next extension', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('repair-lost');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 2_000);
    try {
      await set.clients[0].del(key); // the master's amnesia: a restart, an eviction, a clock jump
      expect(await valuesOn(set.clients, key)).toEqual([null, lock.value, lock.value, lock.value, lock.value]);

      await lock.extend();

      expect(await waitFor(async () => (await set.clients[0].get(key)) === lock.value, 1_000, 10)).toBe(true);
      expect(await valuesOn(set.clients, key)).toEqual(set.clients.map(() => lock.value));
      expect((await pttlsOn(set.clients.slice(0, 1), key))[0]).toBeGreaterThan(1_500);
    } finally {
      await lock.release();
    }
    expect(await valuesOn(set.clients, key)).toEqual(set.clients.map(() => null));
  });

  it('a master that never granted the key (it was stopped during the acquire) gets it at the next extension', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('repair-never');
    const key = `lock:${resource}`;
    const lock = await whilePaused(set.masters.slice(4), () => redlock.acquire(resource, 2_000));
    try {
      // The stopped master runs the SET NX it was sent once it resumes; wait for that, then lose it there.
      await waitFor(async () => (await set.clients[4].get(key)) === lock.value, 1_000, 10);
      await set.clients[4].del(key);

      await lock.extend();

      expect(await waitFor(async () => (await set.clients[4].get(key)) === lock.value, 1_000, 10)).toBe(true);
    } finally {
      await lock.release();
    }
  });

  it("never overwrites another holder's value, and the extension still succeeds on the remaining quorum", async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('repair-foreign');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 2_000);
    try {
      await set.clients[1].set(key, 'someone-else', 'PX', 5_000);
      await set.clients[2].del(key);

      await lock.extend();

      expect(await waitFor(async () => (await set.clients[2].get(key)) === lock.value, 1_000, 10)).toBe(true);
      expect(await valuesOn(set.clients, key)).toEqual([
        lock.value,
        'someone-else',
        lock.value,
        lock.value,
        lock.value,
      ]);
    } finally {
      await lock.release();
      await set.clients[1].del(key);
    }
  });

  it('no repair without a quorum: a majority that lost the key stays without it and the lock is lost', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('repair-majority');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 2_000);
    await Promise.all(set.clients.slice(0, 3).map((c) => c.del(key)));

    await expect(lock.extend()).rejects.toThrow(/no longer hold/);

    await new Promise((r) => setTimeout(r, 200));
    expect(await valuesOn(set.clients.slice(0, 3), key)).toEqual([null, null, null]);
    await lock.release();
  });
});
