import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockAcquisitionError, LockLostError, Redlock, RedlockConfigError, type Lock } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { rejectionOf, resourceName, sleep, useMasters, whilePaused } from '../support/index.js';

/**
 * The protected resource of docs/fencing.md: a register that takes a write only with a fencing token
 * higher than the last one it accepted. Returns 1 when written, 0 when refused as stale.
 */
const FENCED_SET = `
local last = tonumber(redis.call('hget', KEYS[1], 'token') or '-1')
if tonumber(ARGV[1]) <= last then return 0 end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return 1`;

describe('fencing tokens (5 masters)', () => {
  const set = useMasters(5);

  it('strictly increase across successive holders, from several Redlock instances', async () => {
    const a = await set.redlock({ fencing: true });
    const b = await set.redlock({ fencing: true });
    const resource = resourceName('tokens');
    const tokens: number[] = [];
    for (let i = 0; i < 20; i++) {
      const lock = await (i % 3 === 0 ? b : a).acquire(resource, 2_000);
      tokens.push(lock.fencingToken!);
      await lock.release();
    }
    expect(tokens.every((t) => Number.isSafeInteger(t))).toBe(true);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });

  it('keep increasing when a minority of masters lose their counters', async () => {
    const redlock = await set.redlock({ fencing: true });
    const resource = resourceName('minority-loss');
    let last = 0;
    for (let i = 0; i < 5; i++) {
      const lock = await redlock.acquire(resource, 2_000);
      last = lock.fencingToken!;
      await lock.release();
    }
    await Promise.all([set.clients[0].flushall(), set.clients[3].flushall()]); // 2 of 5 forget everything
    const after = await redlock.acquire(resource, 2_000);
    expect(after.fencingToken).toBeGreaterThan(last);
    await after.release();
  });

  it('is off by default, and can be asked for per call and from using()', async () => {
    const redlock = await set.redlock();
    const plain = await redlock.acquire(resourceName('plain'), 1_000);
    expect(plain.fencingToken).toBeUndefined();
    await plain.release();
    const resource = resourceName('per-call');
    const first = await redlock.acquire(resource, 1_000, { fencing: true });
    await first.release();
    const second = await redlock.using(resource, 1_000, (lock) => lock.fencingToken, { fencing: true });
    expect(second).toBeGreaterThan(first.fencingToken!);
  });

  it('multi-resource locks get one token above every resource counter', async () => {
    const redlock = await set.redlock({ fencing: true });
    const [x, y] = [resourceName('x'), resourceName('y')];
    for (let i = 0; i < 3; i++) await (await redlock.acquire(x, 1_000)).release();
    const lockX = await redlock.acquire(x, 1_000);
    await lockX.release();
    const both = await redlock.acquire([x, y], 1_000);
    expect(both.fencingToken).toBeGreaterThan(lockX.fencingToken!);
    await both.release();
    const lockY = await redlock.acquire(y, 1_000);
    expect(lockY.fencingToken).toBeGreaterThan(both.fencingToken!);
    await lockY.release();
  });

  it('refuses fencing with a key prefix that overlaps the counters', async () => {
    const redlock = await set.redlock({ keyPrefix: '' });
    const error = await rejectionOf(redlock.acquire(resourceName('overlap'), 1_000, { fencing: true }));
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe('fencingPrefix');
  });

  describe('fencingQuorum: tokens that survive masters restarting empty', () => {
    /** A master "restarts empty": its counters (and everything else) are gone. */
    const forget = (i: number) => set.clients[i].flushall();
    /**
     * A paused master still runs the fence write queued for it once resumed; a partition would have
     * dropped it. Put back the counter it had, as if the write never arrived.
     */
    const neverArrived = (masters: number[], resource: string, token: number) =>
      Promise.all(masters.map((i) => set.clients[i].set(`fence:${resource}`, String(token))));

    it('the default majority: a token that reached only a bare quorum can be lost with one of its masters', async () => {
      const redlock = await set.redlock({ fencing: true, retryCount: 0 });
      const resource = resourceName('bare');
      const first = await redlock.acquire(resource, 1_000);
      await first.release();
      // Masters 3 and 4 are cut off: the next token reaches masters 0-2 only.
      const bare = await whilePaused(set.masters.slice(3), async () => {
        const lock = await redlock.acquire(resource, 1_000);
        await lock.release();
        return lock.fencingToken!;
      });
      await neverArrived([3, 4], resource, first.fencingToken!);
      await forget(2);
      // Masters 0 and 1 are slow now: the next quorum is 2-4, and none of them remembers the bare token.
      const after = await whilePaused(set.masters.slice(0, 2), async () => {
        const lock = await redlock.acquire(resource, 1_000);
        await lock.release();
        return lock.fencingToken!;
      });
      expect(bare).toBeGreaterThan(first.fencingToken!);
      expect(after).toBeLessThanOrEqual(bare); // the documented limit (docs/fencing.md)
    });

    it('4 of 5: no token is handed out on a bare quorum, and tokens keep rising after two masters forget', async () => {
      const redlock = await set.redlock({ fencing: true, fencingQuorum: 4, retryCount: 0 });
      const resource = resourceName('four-of-five');
      const refused = await whilePaused(set.masters.slice(3), () => rejectionOf(redlock.acquire(resource, 1_000)));
      expect(refused).toBeInstanceOf(LockAcquisitionError);
      expect((refused as LockAcquisitionError).message).toContain('fencing token');
      expect((refused as LockAcquisitionError).reason).toBe('fencing');

      const cutOff = await whilePaused(set.masters.slice(4), async () => {
        const lock = await redlock.acquire(resource, 1_000); // the token reaches masters 0-3
        await lock.release();
        return lock.fencingToken!;
      });
      await set.clients[4].del(`fence:${resource}`); // as if master 4 never got it
      await Promise.all([forget(0), forget(1)]);
      const after = await whilePaused(set.masters.slice(2, 3), async () => {
        const lock = await redlock.acquire(resource, 1_000); // masters 0, 1, 3, 4: only 3 remembers
        await lock.release();
        return lock.fencingToken!;
      });
      expect(after).toBeGreaterThan(cutOff);
    });

    it('refuses a fencingQuorum below the majority or above the number of masters', () => {
      for (const fencingQuorum of [2, 6, 3.5]) {
        expect(() => new Redlock({ nodes: set.urls, fencingQuorum })).toThrow(/fencingQuorum/);
      }
    });
  });

  describe('a protected resource that checks tokens', () => {
    let store: RedisMasters;
    let register: Redis;

    it('rejects the write of a holder that was paused past its lock, after the next holder wrote', async () => {
      store = await startRedisMasters(1);
      register = new Redis(store.urls[0]);
      try {
        const fencedSet = (token: number, value: string) =>
          register.eval(FENCED_SET, 1, 'register', String(token), value) as Promise<number>;
        const redlock = await set.redlock({ fencing: true, retryDelay: 20, retryJitter: 10, retryCount: 50 });
        const resource = resourceName('stale-writer');

        // A takes the lock (no renewal) and is then "paused" past its validity.
        const a: Lock = await redlock.acquire(resource, 300);
        const lost = new Promise((resolve) => a.signal.addEventListener('abort', () => resolve(a.signal.reason)));
        await sleep(450);
        expect(await lost).toBeInstanceOf(LockLostError);

        // B gets the lock and writes.
        const b = await redlock.acquire(resource, 2_000);
        expect(b.fencingToken).toBeGreaterThan(a.fencingToken!);
        expect(await fencedSet(b.fencingToken!, 'from B')).toBe(1);

        // A wakes up and writes with its old token: refused.
        expect(await fencedSet(a.fencingToken!, 'from A')).toBe(0);
        expect(await register.hget('register', 'value')).toBe('from B');
        await b.release();
      } finally {
        register.disconnect();
        await store.stop();
      }
    });
  });
});
