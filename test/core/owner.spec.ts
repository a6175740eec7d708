import { hostname } from 'node:os';
import { describe, expect, it } from '@jest/globals';
import { Redlock, RedlockConfigError } from '../../lib/index.js';
import { rejectionOf, resourceName, useMasters, waitFor } from '../support/index.js';

describe('owner: who holds a lock, stored with it on the masters (3 masters)', () => {
  const set = useMasters(3);

  /** Every key on every master: a refused call leaves nothing. */
  const keysOnMasters = (): Promise<string[][]> =>
    Promise.all(set.clients.map(async (c) => (await c.keys('*')).sort()));

  it('defaults to <hostname>:<pid>, on the view and on each master entry', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('owner-default');
    const lock = await redlock.acquire(resource, 5_000);
    const view = await redlock.inspect(resource);
    expect(view.holder).toBe(lock.value);
    expect(view.owner).toBe(`${hostname()}:${process.pid}`);
    for (const m of view.masters) expect(m.owner).toBe(`${hostname()}:${process.pid}`);
    await lock.release();
    const free = await redlock.inspect(resource);
    expect(free.owner).toBeNull();
    expect(free.masters.map((m) => m.owner)).toEqual([null, null, null]);
  });

  it('module-wide and per call (acquire, tryAcquire, using); the per-call one wins', async () => {
    const redlock = await set.redlock({ owner: 'billing-cron@host 7 — ünïcode' });
    const a = resourceName('owner-module');
    const lock = await redlock.acquire(a, 5_000);
    expect((await redlock.inspect(a)).owner).toBe('billing-cron@host 7 — ünïcode');
    await lock.release();

    const b = resourceName('owner-call');
    const tried = await redlock.tryAcquire(b, 5_000, { owner: 'one-off job' });
    expect((await redlock.inspect(b)).owner).toBe('one-off job');
    await tried!.release();

    const c = resourceName('owner-using');
    const seen = await redlock.using(c, 5_000, async () => (await redlock.inspect(c)).owner, { owner: 'worker 3' });
    expect(seen).toBe('worker 3');
  });

  it('lead() takes an owner per campaign', async () => {
    const redlock = await set.redlock({ owner: 'module-wide' });
    const resource = resourceName('owner-lead');
    const leadership = redlock.lead(resource, { ttl: 2_000, owner: 'poller on web-2' });
    try {
      expect(await waitFor(() => leadership.isLeader, 5_000)).toBe(true);
      expect((await redlock.inspect(resource)).owner).toBe('poller on web-2');
    } finally {
      await leadership.resign();
    }
  });

  it('is carried by a handed-over lock: a queued waiter gets the key with its own owner', async () => {
    const holder = await set.redlock({ owner: 'first' });
    const waiter = await set.redlock({ owner: 'second', retryDelay: 2_000, retryJitter: 0 });
    const resource = resourceName('owner-handoff');
    const held = await holder.acquire(resource, 10_000);
    const waiting = waiter.acquire(resource, 10_000);
    // It queues on the masters after its first refusal; the release then hands it the key.
    expect(await waitFor(async () => (await set.clients[0].exists(`lock:${resource}:handoff:queue`)) === 1)).toBe(true);
    await held.release();
    const lock = await waiting;
    expect(lock.value).toMatch(/^\d+\./); // a handover's value (its ticket's order first)
    const view = await waiter.inspect(resource);
    expect(view.holder).toBe(lock.value);
    expect(view.owner).toBe('second');
    await lock.release();
  });

  it('on read locks (each reader) and counting locks (each permit holder)', async () => {
    const one = await set.redlock({ owner: 'reader-one' });
    const two = await set.redlock({ owner: 'reader-two' });
    const resource = resourceName('owner-read');
    const r1 = await one.acquire(resource, 5_000, { mode: 'read' });
    const r2 = await two.acquire(resource, 5_000, { mode: 'read' });
    const view = await one.inspect(resource);
    expect(new Map(view.readers.map((r) => [r.value, r.owner]))).toEqual(
      new Map([
        [r1.value, 'reader-one'],
        [r2.value, 'reader-two'],
      ]),
    );
    expect(['reader-one', 'reader-two']).toContain(view.owner);
    for (const m of view.masters) expect(m.readers!.map((r) => r.owner).sort()).toEqual(['reader-one', 'reader-two']);
    await Promise.all([r1.release(), r2.release()]);

    const counted = resourceName('owner-permits');
    const p1 = await one.acquire(counted, 5_000, { limit: 2, owner: 'permit-a' });
    const p2 = await two.acquire(counted, 5_000, { limit: 2, owner: 'permit-b' });
    const permits = await one.inspect(counted);
    expect(permits.permits!.slots.map((s) => s.owner).sort()).toEqual(['permit-a', 'permit-b']);
    expect(['permit-a', 'permit-b']).toContain(permits.owner);
    for (const m of permits.masters)
      expect(
        m
          .permits!.filter((p) => p.holder !== null)
          .map((p) => p.owner)
          .sort(),
      ).toEqual(['permit-a', 'permit-b']);
    await Promise.all([p1.release(), p2.release()]);
  });

  it('never replaces the random value as the proof: another lock naming the same owner cannot release it', async () => {
    const redlock = await set.redlock({ owner: 'same' });
    const resource = resourceName('owner-proof');
    const lock = await redlock.acquire(resource, 5_000);
    const random = lock.value.slice(0, lock.value.indexOf('~'));
    expect(random).toMatch(/^[A-Za-z0-9_-]{22}$/); // 128 random bits, base64url
    const other = await set.redlock({ owner: 'same' });
    expect(await other.tryAcquire(resource, 5_000)).toBeNull();
    await lock.extend(5_000);
    expect((await redlock.inspect(resource)).holder).toBe(lock.value);
    await lock.release();
  });

  it.each([
    ['longer than 256 characters', 'x'.repeat(257)],
    ['with a newline', 'two\nlines'],
    ['with a carriage return', 'two\rlines'],
    ['not a string', 42],
  ])(
    'an owner %s is refused with RedlockConfigError naming owner, leaving nothing on the masters',
    async (_, owner) => {
      expect(() => new Redlock({ nodes: set.urls, owner: owner as string })).toThrow(RedlockConfigError);
      expect(() => new Redlock({ nodes: set.urls, owner: owner as string })).toThrow(/`owner`/);
      const redlock = await set.redlock();
      const resource = resourceName('owner-refused');
      const before = await keysOnMasters();
      for (const call of [
        () => redlock.acquire(resource, 5_000, { owner: owner as string }),
        () => redlock.tryAcquire(resource, 5_000, { owner: owner as string }),
        () => redlock.using(resource, 5_000, async () => 1, { owner: owner as string }),
      ]) {
        const error = await rejectionOf(call());
        expect(error).toBeInstanceOf(RedlockConfigError);
        expect((error as RedlockConfigError).option).toBe('owner');
      }
      expect(await keysOnMasters()).toEqual(before);
    },
  );

  it('accepts exactly 256 characters', async () => {
    const redlock = await set.redlock({ owner: 'y'.repeat(256) });
    const resource = resourceName('owner-256');
    const lock = await redlock.acquire(resource, 5_000);
    expect((await redlock.inspect(resource)).owner).toBe('y'.repeat(256));
    await lock.release();
  });
});
