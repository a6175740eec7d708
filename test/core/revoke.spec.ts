import { describe, expect, it } from '@jest/globals';
import { LockKeyError, LockLostError, RedlockConfigError } from '../../lib/index.js';
import { rejectionOf, resourceName, timed, useMasters, waitFor } from '../support/index.js';

/** Long enough that no renewal (a third of it) nor expiry happens while a test waits: only the revocation can end the lock. */
const LONG_TTL = 60_000;

describe('revoke(): remove the current holder whoever it is (3 masters)', () => {
  const set = useMasters(3);

  /** Every key on every master, sorted. */
  const keysOnMasters = (): Promise<string[][]> =>
    Promise.all(set.clients.map(async (c) => (await c.keys('*')).sort()));
  /** The lock key on each master (type string, zset or none). */
  const typesOf = (key: string): Promise<string[]> => Promise.all(set.clients.map((c) => c.type(key)));

  it('removes an exclusive holder on every master; its signal aborts with LockLostError reason revoked, within a round trip', async () => {
    const holder = await set.redlock({ owner: 'stuck-worker' });
    const operator = await set.redlock({ owner: 'operator' });
    const resource = resourceName('revoke-mutex');
    const lock = await holder.acquire(resource, LONG_TTL, { autoExtend: true });
    const result = await operator.revoke(resource, { reason: 'stuck since 02:00' });

    expect(result).toEqual({ revoked: true, holder: lock.value, owner: 'stuck-worker' });
    // Long before any renewal (a third of the TTL) could have found the keys gone.
    expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
    const reason: unknown = lock.signal.reason;
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('revoked');
    expect((reason as LockLostError).message).toContain('stuck since 02:00');
    expect(lock.isHeld).toBe(false);
    expect(await typesOf(`lock:${resource}`)).toEqual(['none', 'none', 'none']);
    await lock.release(); // idempotent, and removes nothing of anyone else
  });

  it('a revoke right after an instance took its first lock is not missed (its tombstone is checked once it listens)', async () => {
    const operator = await set.redlock();
    for (let i = 0; i < 5; i++) {
      const holder = await set.redlock({ owner: `fresh-${i}` });
      const resource = resourceName('revoke-first');
      const lock = await holder.acquire(resource, LONG_TTL);
      const result = await operator.revoke(resource);
      expect(result.revoked).toBe(true);
      expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
      expect((lock.signal.reason as LockLostError).reason).toBe('revoked');
    }
  });

  it('an instance holding locks follows the revocation channel on every master, and stops once it holds none', async () => {
    // Its connections carry a name (a subscriber inherits it), so other instances of this file do not count.
    const name = `revoke-follower-${process.pid}`;
    const holder = await set.redlock({
      nodes: set.masters.map((m) => ({ host: '127.0.0.1', port: m.port, connectionName: name })),
    });
    /** Per master: this instance's connections subscribed to something (CLIENT LIST's `sub=`). */
    const followers = async (): Promise<number[]> =>
      Promise.all(
        set.clients.map(
          async (c) =>
            ((await c.client('LIST')) as string)
              .split('\n')
              .filter((line) => line.includes(` name=${name} `) && /\bsub=[1-9]/.test(line)).length,
        ),
      );
    expect(await followers()).toEqual([0, 0, 0]);
    const resource = resourceName('revoke-channel');
    const lock = await holder.acquire(resource, LONG_TTL);
    expect(await waitFor(async () => (await followers()).every((n) => n === 1), 5_000)).toBe(true);
    expect(
      await Promise.all(
        set.clients.map((c) => c.call('PUBSUB', 'NUMSUB', '__quorum-lock__!revoked') as Promise<[string, number]>),
      ),
    ).toEqual(set.clients.map(() => ['__quorum-lock__!revoked', expect.any(Number)]));
    // A revocation message names the value: the lock is lost at once, with the message's reason.
    await set.clients[1].publish('__quorum-lock__!revoked', `${lock.value}\nby hand`);
    expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
    expect((lock.signal.reason as LockLostError).reason).toBe('revoked');
    expect((lock.signal.reason as LockLostError).message).toContain('by hand');
    await lock.release();
    // Nothing held: it stops following after a short linger.
    expect(await waitFor(async () => (await followers()).every((n) => n === 0), 6_000)).toBe(true);
  });

  it('without pub/sub (wakeOnRelease: false) the holder finds the revocation at its next renewal, still as revoked', async () => {
    const holder = await set.redlock({ wakeOnRelease: false });
    const operator = await set.redlock();
    const resource = resourceName('revoke-no-pubsub');
    const lock = await holder.acquire(resource, 900, { autoExtend: true }); // renewed every 300 ms
    await operator.revoke(resource, { reason: 'quiet' });
    expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
    expect((lock.signal.reason as LockLostError).reason).toBe('revoked');
    expect((lock.signal.reason as LockLostError).message).toContain('quiet');
  });

  it('resolves revoked false with holder and owner null when nothing is held, writing nothing', async () => {
    const operator = await set.redlock();
    const resource = resourceName('revoke-free');
    const before = await keysOnMasters();
    expect(await operator.revoke(resource)).toEqual({ revoked: false, holder: null, owner: null });
    expect(await keysOnMasters()).toEqual(before);
  });

  it('the next waiter gets the lock as after a release (handed over at once, not at its next retry)', async () => {
    const holder = await set.redlock();
    const waiter = await set.redlock({ retryDelay: 20_000, retryJitter: 0, owner: 'next' });
    const operator = await set.redlock();
    const resource = resourceName('revoke-next');
    const lock = await holder.acquire(resource, LONG_TTL, { autoExtend: true });
    const waiting = timed(waiter.acquire(resource, LONG_TTL));
    // The waiter queued on the masters after its first refusal.
    expect(await waitFor(async () => (await set.clients[0].exists(`lock:${resource}:handoff:queue`)) === 1)).toBe(true);

    await operator.revoke(resource);

    const { value: next, error, ms } = await waiting;
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(20_000); // well before its next retry
    expect((await operator.inspect(resource)).owner).toBe('next');
    expect(lock.signal.aborted).toBe(true);
    await next!.release();
  });

  it('using() rejects with the LockLostError (revoked) once its function settles', async () => {
    const holder = await set.redlock();
    const operator = await set.redlock();
    const resource = resourceName('revoke-using');
    let finished = false;
    const running = holder.using(resource, LONG_TTL, async (lock) => {
      await operator.revoke(resource, { reason: 'maintenance' });
      await waitFor(() => lock.signal.aborted, 5_000);
      finished = true;
      return 'done';
    });
    const error = await rejectionOf(running);
    expect(finished).toBe(true);
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('revoked');
  });

  it('removes every reader of a read lock; each reader instance hears it', async () => {
    const one = await set.redlock({ owner: 'reader-one' });
    const two = await set.redlock({ owner: 'reader-two' });
    const operator = await set.redlock();
    const resource = resourceName('revoke-read');
    const r1 = await one.acquire(resource, LONG_TTL, { mode: 'read' });
    const r2 = await two.acquire(resource, LONG_TTL, { mode: 'read' });

    const result = await operator.revoke(resource);

    expect(result.revoked).toBe(true);
    expect([r1.value, r2.value]).toContain(result.holder);
    expect(['reader-one', 'reader-two']).toContain(result.owner);
    for (const reader of [r1, r2]) {
      expect(await waitFor(() => reader.signal.aborted, 5_000)).toBe(true);
      expect((reader.signal.reason as LockLostError).reason).toBe('revoked');
    }
    expect(await typesOf(`lock:${resource}`)).toEqual(['none', 'none', 'none']);
    // A writer can take it now.
    const writer = await operator.tryAcquire(resource, 5_000);
    expect(writer).not.toBeNull();
    await writer!.release();
  });

  it.each([
    ['read lock (two readers), a writer', { mode: 'read' as const }, {}],
    ['counting lock (both permits), a third permit holder', { limit: 2 }, { limit: 2 }],
  ])('revoking a %s waiting in another instance gets it at once, not at its next retry', async (_, held, wanted) => {
    const one = await set.redlock();
    const two = await set.redlock();
    const waiter = await set.redlock({ retryDelay: 20_000, retryJitter: 0 });
    const operator = await set.redlock();
    const resource = resourceName('revoke-shared-waiter');
    const holders = [await one.acquire(resource, LONG_TTL, held), await two.acquire(resource, LONG_TTL, held)];
    const waiting = timed(waiter.acquire(resource, LONG_TTL, wanted));
    // It waits for a release (or its retry, 20 s away), listening on the key's release channel on every master.
    const listening = async (): Promise<boolean> =>
      (
        await Promise.all(
          set.clients.map(
            (c) => c.call('PUBSUB', 'NUMSUB', `__quorum-lock__:lock:${resource}`) as Promise<[string, number]>,
          ),
        )
      ).every(([, n]) => Number(n) > 0);
    expect(await waitFor(listening, 5_000)).toBe(true);

    expect((await operator.revoke(resource)).revoked).toBe(true);

    const { value: next, error, ms } = await waiting;
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(20_000);
    for (const h of holders) expect(await waitFor(() => h.signal.aborted, 5_000)).toBe(true);
    await next!.release();
  });

  it('removes every permit holder of a counting lock, and its limit record', async () => {
    const one = await set.redlock({ owner: 'permit-a' });
    const two = await set.redlock({ owner: 'permit-b' });
    const operator = await set.redlock();
    const resource = resourceName('revoke-permits');
    const p1 = await one.acquire(resource, LONG_TTL, { limit: 3 });
    const p2 = await two.acquire(resource, LONG_TTL, { limit: 3 });

    const result = await operator.revoke(resource, { reason: 'drain' });

    expect(result.revoked).toBe(true);
    expect(['permit-a', 'permit-b']).toContain(result.owner);
    for (const permit of [p1, p2]) {
      expect(await waitFor(() => permit.signal.aborted, 5_000)).toBe(true);
      expect((permit.signal.reason as LockLostError).message).toContain('drain');
    }
    const view = await operator.inspect(resource);
    expect(view.permits).toBeUndefined();
    for (const c of set.clients)
      expect((await c.keys(`lock:${resource}*`)).filter((k) => !k.endsWith(':revoked'))).toEqual([]);
  });

  it.each([
    ['hears it on the channel', {}],
    ['finds it at its next renewal (wakeOnRelease: false)', { wakeOnRelease: false }],
  ])(
    'a lock on several resources: revoking one ends it, and its instance that %s removes its other keys at once',
    async (_, options) => {
      const TTL = 9_000;
      const holder = await set.redlock({ ...options, owner: 'multi' });
      const waiter = await set.redlock({ retryDelay: 100 });
      const operator = await set.redlock();
      const [a, b] = [resourceName('revoke-multi-a'), resourceName('revoke-multi-b')];
      // Renewed every 3 s: the other key must go at once (or at that renewal), long before it would lapse.
      const lock = await holder.acquire([a, b], TTL, { autoExtend: true });
      const waiting = timed(waiter.acquire(b, LONG_TTL, { retryCount: Infinity }));

      expect((await operator.revoke(a, { reason: 'one of two' })).revoked).toBe(true);

      expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
      expect((lock.signal.reason as LockLostError).reason).toBe('revoked');
      // The holder's work has not released it: its instance did, as its keys no longer make a lock.
      const { value: next, error, ms } = await waiting;
      expect(error).toBeUndefined();
      expect(ms).toBeLessThan((TTL * 2) / 3);
      expect((await operator.inspect(b)).holder).toBe(next!.value);
      await next!.release();
      await lock.release(); // removes nothing of the next holder's
    },
  );

  it.each([
    ['a reason that is not a string', { reason: 42 }, 'reason'],
    ['a reason over 1024 characters', { reason: 'x'.repeat(1_025) }, 'reason'],
    ['an unknown option', { reasn: 'typo' }, 'reasn'],
  ])('refuses %s with RedlockConfigError naming it, removing nothing', async (_, options, option) => {
    const holder = await set.redlock();
    const operator = await set.redlock();
    const resource = resourceName('revoke-refused');
    const lock = await holder.acquire(resource, LONG_TTL);
    const before = await keysOnMasters();
    const error = await rejectionOf(operator.revoke(resource, options as never));
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe(option);
    expect(await keysOnMasters()).toEqual(before);
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  it('refuses an array of resources naming `resource` (it revokes one resource), removing nothing', async () => {
    const holder = await set.redlock();
    const operator = await set.redlock();
    const [a, b] = [resourceName('revoke-array-a'), resourceName('revoke-array-b')];
    const lock = await holder.acquire(a, LONG_TTL);
    const before = await keysOnMasters();
    const error = await rejectionOf(operator.revoke([a, b] as never));
    expect(error).toBeInstanceOf(LockKeyError);
    expect((error as Error).message).toMatch(/`resource`/);
    expect(await keysOnMasters()).toEqual(before);
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });
});
