/**
 * Issue 8's edges of the contract on real masters: close() and time bounds racing an acquisition,
 * concurrent releases, TTLs timers cannot hold, resource names and list sizes, defaults, use before
 * connect(), and locks left to expire.
 */
import { describe, expect, it } from '@jest/globals';
import v8 from 'node:v8';
import vm from 'node:vm';
import {
  timed,
  rejectionOf,
  resourceName,
  sleep,
  useMasters,
  valuesOn,
  waitFor,
  whilePaused,
  expectAbsentOnAll,
  expectEventuallyAbsent,
  expectHeldOnAll,
} from '../support/index.js';
import {
  LockAcquisitionError,
  LockKeyError,
  Locked,
  MAX_RESOURCES,
  MAX_TTL,
  Redlock,
  RedlockClosedError,
  RedlockConfigError,
  type Lock,
} from '../../lib/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** A margin for "settles promptly" on a loaded 2-core machine; the hang it rules out is 5-10 s. */
const PROMPT_MS = 1_500;

describe('issue 8: the contract at its edges (3 masters)', () => {
  const set = useMasters(3);

  describe('item 5: close() racing an acquisition', () => {
    it('rejects the acquisition and removes what it wrote on every master before close() resolves', async () => {
      const redlock = await set.redlock({ commandTimeout: 2_000 });
      const resource = resourceName('close-race');
      const key = `lock:${resource}`;
      await whilePaused(set.masters.slice(1), async () => {
        // Master 0 grants at once; the two paused ones keep the attempt in flight.
        const acquiring = redlock.acquire(resource, 30_000).then(
          () => 'acquired',
          (error: unknown) => error,
        );
        expect(await waitFor(async () => (await set.clients[0].get(key)) !== null, 2_000)).toBe(true);
        await redlock.close();
        expect(await Promise.race([acquiring, Promise.resolve('still pending')])).toBeInstanceOf(RedlockClosedError);
        expect(await set.clients[0].get(key)).toBeNull();
      });
      // The paused masters run the acquire, then the clean-up sent after it before the connections closed.
      await expectEventuallyAbsent(set.clients, key, 3_000);
    });
  });

  describe('item 6: acquireTimeout and signal bound the whole acquisition while masters hang', () => {
    it('acquireTimeout: rejects promptly with reason "timeout"; the abandoned attempt is cleaned up in the background', async () => {
      const redlock = await set.redlock({ commandTimeout: 5_000 });
      const resource = resourceName('timeout-hang');
      const { ms, error } = await whilePaused(set.masters.slice(1), () =>
        timed(redlock.acquire(resource, 30_000, { acquireTimeout: 300 })),
      );
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect((error as LockAcquisitionError).reason).toBe('timeout');
      expect((error as LockAcquisitionError).message).toContain('acquireTimeout');
      expect(ms).toBeGreaterThanOrEqual(299);
      expect(ms).toBeLessThan(300 + PROMPT_MS); // not the 5 s commandTimeout
      await expectEventuallyAbsent(set.clients, `lock:${resource}`, 3_000);
    });

    it('signal: rejects promptly with the abort reason; the abandoned attempt is cleaned up in the background', async () => {
      const redlock = await set.redlock({ commandTimeout: 5_000 });
      const resource = resourceName('abort-hang');
      const controller = new AbortController();
      const reason = new Error('caller gave up');
      const { ms, error } = await whilePaused(set.masters.slice(1), () => {
        setTimeout(() => controller.abort(reason), 200);
        return timed(redlock.acquire(resource, 30_000, { signal: controller.signal }));
      });
      expect(error).toBe(reason);
      expect(ms).toBeLessThan(200 + PROMPT_MS);
      await expectEventuallyAbsent(set.clients, `lock:${resource}`, 3_000);
    });
  });

  describe('item 7: concurrent release() calls', () => {
    it('all resolve only once a quorum confirmed the release', async () => {
      const redlock = await set.redlock({ commandTimeout: 5_000 });
      const resource = resourceName('release-twice');
      const lock = await redlock.acquire(resource, 30_000);
      await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
      const settled = [false, false];
      let releases: Promise<void>[] = [];
      await whilePaused(set.masters.slice(1), async () => {
        releases = [lock.release(), lock.release()];
        releases.forEach((r, i) => void r.then(() => (settled[i] = true)));
        await sleep(300);
        expect(settled).toEqual([false, false]); // one master of three has confirmed: no quorum yet
      });
      await Promise.all(releases);
      await expectAbsentOnAll(set.clients, `lock:${resource}`);
    });
  });

  describe('item 8: TTLs above 2^31-1 ms', () => {
    it('are refused with RedlockConfigError naming the limit, wherever a TTL enters; MAX_TTL itself works', async () => {
      expect(MAX_TTL).toBe(2 ** 31 - 1);
      const redlock = await set.redlock();
      const resource = resourceName('huge-ttl');
      const held = await redlock.acquire(resourceName('huge-ttl-held'), 1_000);
      const refusals = [
        await rejectionOf(redlock.acquire(resource, 2 ** 31)),
        await rejectionOf(redlock.tryAcquire(resource, 2 ** 31)),
        await rejectionOf(redlock.using(resource, 2 ** 31, async () => 1)),
        await rejectionOf(held.extend(2 ** 31)),
      ];
      for (const error of refusals) {
        expect(error).toBeInstanceOf(RedlockConfigError);
        expect((error as RedlockConfigError).option).toBe('ttl');
        expect((error as Error).message).toContain(String(MAX_TTL));
      }
      for (const option of ['ttl', 'acquireTimeout', 'commandTimeout', 'connectTimeout'] as const) {
        expect(() => new Redlock({ nodes: set.urls, [option]: 2 ** 31 })).toThrow(RedlockConfigError);
      }
      expect(() => new Redlock({ nodes: set.urls, restartGuard: { largestTtl: 2 ** 31 } })).toThrow(
        /restartGuard\.largestTtl/,
      );
      // @Locked refuses it when the class is defined, with the same `option` ('ttl') and the method named
      class Jobs {
        async run(id: string): Promise<string> {
          return id;
        }
      }
      let decorated: unknown;
      try {
        Locked('job:#id', { ttl: 2 ** 31 })(
          Jobs.prototype,
          'run',
          Object.getOwnPropertyDescriptor(Jobs.prototype, 'run')!,
        );
      } catch (error) {
        decorated = error;
      }
      expect(decorated).toBeInstanceOf(RedlockConfigError);
      expect((decorated as RedlockConfigError).option).toBe('ttl');
      expect((decorated as Error).message).toContain('Jobs.run');
      expect((decorated as Error).message).toContain(String(MAX_TTL));
      expect(await valuesOn(set.clients, `lock:${resource}`)).toEqual([null, null, null]);
      await held.release();

      const longest = await redlock.acquire(resource, MAX_TTL);
      await sleep(50);
      expect(longest.isHeld).toBe(true);
      expect(longest.signal.aborted).toBe(false);
      await longest.release();
    });
  });

  describe('item 10: resource names must be well-formed Unicode', () => {
    it('refuses lone surrogates with LockKeyError, writes nothing, and accepts proper pairs', async () => {
      const redlock = await set.redlock();
      const base = resourceName('surrogate');
      for (const resources of [`${base}\uD800`, [`${base}ok`, `${base}\uDC00`], `\uDE00${base}`]) {
        const error = await rejectionOf(redlock.acquire(resources, 1_000));
        expect(error).toBeInstanceOf(LockKeyError);
        expect((error as Error).message).toMatch(/well-formed Unicode/);
      }
      expect(await rejectionOf(redlock.using([`${base}ok`, `${base}\uDC00`], 1_000, async () => 1))).toBeInstanceOf(
        LockKeyError,
      );
      expect((await rejectionOf(redlock.acquire([`${base}ok`, `${base}\uDC00`], 1_000))) as Error).toHaveProperty(
        'message',
        expect.stringContaining('resources[1]'),
      );
      expect(await valuesOn(set.clients, `lock:${base}ok`)).toEqual([null, null, null]);
      const emoji = await redlock.acquire(`${base}\uD83D\uDE00`, 1_000);
      await emoji.release();
      expect(() => new Redlock({ nodes: set.urls, keyPrefix: 'lock\uD800:' })).toThrow(RedlockConfigError);
    });
  });

  describe('item 11: large resource lists', () => {
    it('refuses more than MAX_RESOURCES with a short RedlockConfigError naming the limit', async () => {
      const redlock = await set.redlock();
      const many = Array.from({ length: 150_000 }, (_, i) => `big:${i}`);
      const error = await rejectionOf(redlock.acquire(many, 1_000));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('resources');
      expect((error as Error).message).toContain(String(MAX_RESOURCES));
      expect((error as Error).message.length).toBeLessThan(300);
    });

    it('locks MAX_RESOURCES resources at once (plain and fenced), and caps the message when they are busy', async () => {
      const redlock = await set.redlock({ commandTimeout: 2_000 });
      const other = await set.redlock({ commandTimeout: 2_000 });
      const base = resourceName('max');
      const names = Array.from({ length: MAX_RESOURCES }, (_, i) => `${base}:${i}`);
      const lock = await redlock.acquire(names, 10_000);
      await expectHeldOnAll(set.clients, `lock:${names[MAX_RESOURCES - 1]}`, lock.value, 2_000);
      const busy = await rejectionOf(other.acquire(names, 10_000, { retryCount: 0 }));
      expect(busy).toBeInstanceOf(LockAcquisitionError);
      expect((busy as Error).message).toContain(`and ${MAX_RESOURCES - 5} more`);
      expect((busy as Error).message.length).toBeLessThan(600);
      await lock.release();
      await expectEventuallyAbsent(set.clients, `lock:${names[0]}`, 2_000);
      const fenced = await redlock.acquire(names, 10_000, { fencing: true });
      expect(fenced.fencingToken).toBeGreaterThan(0);
      await fenced.release();
    });
  });

  describe('item 14: use before connect()', () => {
    it('connects on first use: the first attempt already reaches the masters', async () => {
      const redlock = new Redlock({ nodes: set.urls, restartGuard: false });
      try {
        const resource = resourceName('no-connect');
        const lock = await redlock.acquire(resource, 2_000, { retryCount: 0 }); // the first attempt, not a retry, succeeds
        await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
        await lock.release();
        const other = new Redlock({ nodes: set.urls, restartGuard: false });
        const single = await other.tryAcquire(resource, 2_000);
        expect(single).not.toBeNull();
        await single!.release();
        await other.close();
        const fresh = new Redlock({ nodes: set.urls, restartGuard: false });
        expect((await fresh.inspect(resource)).held).toBe(false);
        await fresh.close();
      } finally {
        await redlock.close();
      }
    });
  });

  describe('item 15: locks that expire without release()', () => {
    it('are not kept reachable once their validity lapsed; close() still releases the held ones', async () => {
      const redlock = await set.redlock();
      const refs: WeakRef<Lock>[] = [];
      const acquireAndDrop = async (): Promise<void> => {
        refs.push(new WeakRef((await redlock.tryAcquire(resourceName('expire'), 100))!));
      };
      for (let i = 0; i < 20; i++) await acquireAndDrop();
      const heldResource = resourceName('held-at-close');
      const held = await redlock.acquire(heldResource, 30_000);
      const heldValue = held.value;
      await sleep(300);
      // Collected once nothing but the caller's (dropped) reference held them; a few rounds of gc for a loaded machine.
      await waitFor(() => (gc(), refs.every((r) => r.deref() === undefined)), 2_000, 50);
      expect(refs.map((r, i) => (r.deref() === undefined ? -1 : i)).filter((i) => i >= 0)).toEqual([]);
      await expectHeldOnAll(set.clients, `lock:${heldResource}`, heldValue);
      await redlock.close();
      await expectAbsentOnAll(set.clients, `lock:${heldResource}`);
    });
  });
});
