import { describe, expect, it } from '@jest/globals';
import { LockKeyError } from '../../lib/index.js';
import { resourceName, useMasters } from '../support/index.js';

describe('Redlock.inspect()', () => {
  const set = useMasters(3);

  /** Every key on every master, with its value: to show that inspect() writes nothing. */
  const snapshot = (): Promise<string[][]> => Promise.all(set.clients.map(async (c) => (await c.keys('*')).sort()));

  it('during a hold: each master holds the value, the quorum agrees, validity is conservative; nothing is written', async () => {
    const redlock = await set.redlock({ fencing: true });
    const resource = resourceName('order');
    const lock = await redlock.acquire(resource, 5_000);
    const before = await snapshot();
    const view = await redlock.inspect(resource);
    const local = lock.validity;
    expect(view).toMatchObject({
      resource,
      key: `lock:${resource}`,
      quorum: 2,
      held: true,
      holder: lock.value,
      agreeing: 3,
    });
    expect(view.masters.map((m) => m.master)).toEqual(redlock.masters);
    for (const m of view.masters) {
      expect(m.holder).toBe(lock.value);
      expect(m.pttl).toBeGreaterThan(0);
      expect(m.pttl).toBeLessThanOrEqual(5_000);
      expect(m.error).toBeUndefined();
      expect(m.fencingCounter).toBe(lock.fencingToken);
    }
    expect(view.validity).toBeGreaterThan(0);
    // conservative: never more than the TTL minus drift, and never far above what the holder itself knows
    expect(view.validity).toBeLessThanOrEqual(5_000 - (5_000 * 0.01 + 2));
    expect(view.validity).toBeLessThanOrEqual(local + 100);
    expect(view.fencingCounter).toBe(lock.fencingToken);
    expect(await snapshot()).toEqual(before);
    await lock.release();
  });

  it('after release: no holder anywhere, not held, validity 0', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('gone');
    const lock = await redlock.acquire(resource, 5_000);
    await lock.release();
    const view = await redlock.inspect(resource);
    expect(view).toMatchObject({ held: false, holder: null, agreeing: 0, validity: 0 });
    expect(view.fencingCounter).toBeUndefined();
    for (const m of view.masters) expect(m).toMatchObject({ holder: null, pttl: null });
  });

  it('with a split holder: no value has a quorum, so it is not held, and each master shows its own holder', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('split');
    const key = `lock:${resource}`;
    await set.clients[0].set(key, 'holder-a', 'PX', 5_000);
    await set.clients[1].set(key, 'holder-b', 'PX', 5_000);
    const view = await redlock.inspect(resource);
    expect(view.held).toBe(false);
    expect(view.validity).toBe(0);
    expect(view.agreeing).toBe(1);
    expect(view.masters.map((m) => m.holder)).toEqual(['holder-a', 'holder-b', null]);
    await Promise.all(set.clients.map((c) => c.del(key)));
  });

  it('a master that is down is reported with its error; the others still answer', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('down');
    const lock = await redlock.acquire(resource, 5_000);
    set.masters[2].pause();
    try {
      const view = await redlock.inspect(resource);
      expect(view.held).toBe(true);
      expect(view.agreeing).toBe(2);
      expect(view.masters[2].error).toBeInstanceOf(Error);
      expect(view.masters[2].holder).toBeNull();
    } finally {
      set.masters[2].resume();
    }
    await lock.release();
  });

  it('refuses an empty resource with LockKeyError naming its argument, `resource`', async () => {
    const redlock = await set.redlock();
    expect(() => redlock.inspect('')).toThrow(LockKeyError);
    expect(() => redlock.inspect('')).toThrow('`resource` must be a non-empty string');
  });
});
