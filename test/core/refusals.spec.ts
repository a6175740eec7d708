import { describe, expect, it } from '@jest/globals';
import { dbsizesOn, rejectionOf, useMasters } from '../support/index.js';
import { LockKeyError, Redlock, RedlockConfigError, RedlockError, type RedlockOptions } from '../../lib/index.js';

describe('bad input is refused with the right error, naming the option, and writes nothing', () => {
  const set = useMasters(3);

  /** Connected clients per master (the inspection clients included). */
  async function connectionsOn(): Promise<number[]> {
    return Promise.all(
      set.clients.map(async (c) => Number(/connected_clients:(\d+)/.exec(await c.info('clients'))![1])),
    );
  }

  /** Runs `fn` and asserts that every master is empty before and after. */
  async function writingNothing(fn: () => Promise<void>): Promise<void> {
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0]);
    await fn();
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0]);
  }

  /** Asserts that `new Redlock(options)` throws RedlockConfigError for `option`, opening no connection. */
  async function expectRefusedAtConstruction(options: RedlockOptions, option: string): Promise<void> {
    await writingNothing(async () => {
      const connections = await connectionsOn();
      let thrown: unknown;
      try {
        new Redlock(options);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(RedlockConfigError);
      expect(thrown).toBeInstanceOf(RedlockError);
      expect((thrown as RedlockConfigError).option).toBe(option);
      expect((thrown as Error).message).toContain(`\`${option}\``);
      expect(await connectionsOn()).toEqual(connections);
    });
  }

  it('nodes: [] → RedlockConfigError for `nodes`', async () => {
    await expectRefusedAtConstruction({ nodes: [] }, 'nodes');
  });

  it('the same master listed twice (equal URLs) → RedlockConfigError for `nodes[1]`', async () => {
    await expectRefusedAtConstruction({ nodes: [set.urls[0], set.urls[0]] }, 'nodes[1]');
  });

  it('the same master as localhost and 127.0.0.1 → RedlockConfigError for `nodes[1]`', async () => {
    const port = set.masters[0].port;
    await expectRefusedAtConstruction(
      { nodes: [`redis://localhost:${port}`, `redis://127.0.0.1:${port}`] },
      'nodes[1]',
    );
  });

  it('a node that is not a redis:// URL → RedlockConfigError for `nodes[0]`', async () => {
    await expectRefusedAtConstruction({ nodes: [`http://127.0.0.1:${set.masters[0].port}`] }, 'nodes[0]');
  });

  it.each([0, -1, 1.5, NaN, Infinity])('ttl %p → RedlockConfigError for `ttl`', async (ttl) => {
    await expectRefusedAtConstruction({ nodes: set.urls, ttl }, 'ttl');
  });

  it('retryJitter greater than retryDelay → RedlockConfigError for `retryJitter`', async () => {
    await expectRefusedAtConstruction({ nodes: set.urls, retryDelay: 100, retryJitter: 101 }, 'retryJitter');
  });

  it('retryCount -1 → RedlockConfigError for `retryCount`', async () => {
    await expectRefusedAtConstruction({ nodes: set.urls, retryCount: -1 }, 'retryCount');
  });

  it('driftFactor 0.6 → RedlockConfigError for `driftFactor`', async () => {
    await expectRefusedAtConstruction({ nodes: set.urls, driftFactor: 0.6 }, 'driftFactor');
  });

  it("acquire('') → LockKeyError", async () => {
    const redlock = await set.redlock();
    await writingNothing(async () => {
      expect(await rejectionOf(redlock.acquire('', 1_000))).toBeInstanceOf(LockKeyError);
    });
  });

  it('acquire([]) → LockKeyError', async () => {
    const redlock = await set.redlock();
    await writingNothing(async () => {
      expect(await rejectionOf(redlock.acquire([], 1_000))).toBeInstanceOf(LockKeyError);
    });
  });

  it("acquire(['ok', '']) → LockKeyError, and 'ok' is not locked either", async () => {
    const redlock = await set.redlock();
    await writingNothing(async () => {
      expect(await rejectionOf(redlock.acquire(['ok', ''], 1_000))).toBeInstanceOf(LockKeyError);
    });
  });

  it("tryAcquire('') and using('') → LockKeyError, the callback never runs", async () => {
    const redlock = await set.redlock();
    let called = false;
    await writingNothing(async () => {
      expect(await rejectionOf(redlock.tryAcquire('', 1_000))).toBeInstanceOf(LockKeyError);
      expect(await rejectionOf(redlock.using('', 1_000, () => (called = true)))).toBeInstanceOf(LockKeyError);
    });
    expect(called).toBe(false);
  });

  it("acquire('x', 0) → RedlockConfigError for `ttl`", async () => {
    const redlock = await set.redlock();
    await writingNothing(async () => {
      const error = await rejectionOf(redlock.acquire('x', 0));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('ttl');
    });
  });

  it("using('x', 1.5, fn) → RedlockConfigError for `ttl`, the callback never runs", async () => {
    const redlock = await set.redlock();
    let called = false;
    await writingNothing(async () => {
      const error = await rejectionOf(redlock.using('x', 1.5, () => (called = true)));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('ttl');
    });
    expect(called).toBe(false);
  });

  it('per-call retry options are checked too: retryCount -1 → RedlockConfigError for `retryCount`', async () => {
    const redlock = await set.redlock();
    await writingNothing(async () => {
      const error = await rejectionOf(redlock.acquire('x', 1_000, { retryCount: -1 }));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('retryCount');
    });
  });

  it.each([
    [{ wakeOnRelease: 'yes' }, 'wakeOnRelease'],
    [{ restartGuard: 'on' }, 'restartGuard'],
    [{ restartGuard: { largestTtl: -1 } }, 'restartGuard.largestTtl'],
    [{ fencing: 1 }, 'fencing'],
    [{ fencing: true, keyPrefix: 'x:', fencingPrefix: 'x:fence:' }, 'fencingPrefix'],
    [{ fencingQuorum: 1 }, 'fencingQuorum'],
    [{ fencingQuorum: 4 }, 'fencingQuorum'],
  ])('%p → RedlockConfigError for `%s`', async (extra, option) => {
    await expectRefusedAtConstruction({ nodes: set.urls, ...(extra as Partial<RedlockOptions>) }, option);
  });

  it.each([
    [{ signal: 'soon' }, 'signal'],
    [{ autoExtend: 'yes' }, 'autoExtend'],
    [{ fencing: 'yes' }, 'fencing'],
  ])('acquire with %p → RedlockConfigError for `%s`', async (options, option) => {
    const redlock = await set.redlock();
    await writingNothing(async () => {
      const error = await rejectionOf(redlock.acquire('x', 1_000, options as never));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe(option);
    });
  });

  it('using() without a function → RedlockConfigError for `fn`, before any lock is taken', async () => {
    const redlock = await set.redlock();
    await writingNothing(async () => {
      const error = await rejectionOf(redlock.using('x', 1_000, 'not a function' as never));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('fn');
    });
    const scripts = Number(/cmdstat_set:calls=(\d+)/.exec(await set.clients[0].info('commandstats'))?.[1] ?? 0);
    await rejectionOf(redlock.using('y', 1_000, 42 as never));
    expect(Number(/cmdstat_set:calls=(\d+)/.exec(await set.clients[0].info('commandstats'))?.[1] ?? 0)).toBe(scripts);
  });

  it('lock.extend(0) → RedlockConfigError for `ttl`, and the lock is left as it was', async () => {
    const redlock = await set.redlock();
    const lock = await redlock.acquire('extend-zero', 2_000);
    try {
      const error = await rejectionOf(lock.extend(0));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('ttl');
      expect(lock.isHeld).toBe(true);
    } finally {
      await lock.release();
    }
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0]);
  });
});
