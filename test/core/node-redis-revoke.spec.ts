import { afterAll, describe, expect, it } from '@jest/globals';
import { createClient, type RedisClientType } from 'redis';
import { LockLostError, type Lock } from '../../lib/core.js';
import { resourceName, useMasters, waitFor } from '../support/index.js';

/** Long enough that no renewal (a third of it) nor expiry happens while a test waits: only the revocation can end the lock. */
const LONG_TTL = 60_000;

/**
 * `owner`, `revoke()` and `adopt()` on masters given as node-redis v5 clients: the owner is stored and read
 * back through them, the revoke script runs through them, and the revocation channel is heard
 * through the subscriber connections the library opens from them.
 */
describe('owner and revoke() through node-redis clients (3 masters)', () => {
  const set = useMasters(3);
  const opened: RedisClientType[] = [];

  /** Three node-redis clients, one per master (not connected: the library connects them). */
  function nodeRedisNodes(RESP: 2 | 3 = 2): RedisClientType[] {
    const clients = set.urls.map((url) => createClient({ url, RESP }) as RedisClientType);
    for (const c of clients) c.on('error', () => undefined);
    opened.push(...clients);
    return clients;
  }

  afterAll(() => {
    for (const c of opened) if (c.isOpen) c.destroy();
  });

  /** Resolves once `lock` is lost, with its `LockLostError`. */
  async function lostError(lock: Lock): Promise<LockLostError> {
    expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    return lock.signal.reason as LockLostError;
  }

  it.each([2, 3] as const)(
    'RESP%i: a holder on node-redis clients hears its revocation at once; the owner is read through them',
    async (resp) => {
      const holder = await set.redlock({ nodes: nodeRedisNodes(resp), owner: 'node-redis-worker' });
      const operator = await set.redlock({ nodes: nodeRedisNodes(resp) });
      const resource = resourceName(`nr-revoke-${resp}`);
      const lock = await holder.acquire(resource, LONG_TTL);
      // A second lock, so the first one's revocation is heard on the channel, not only in the tombstones.
      const other = await holder.acquire(resourceName('nr-other'), LONG_TTL);
      expect(
        await waitFor(
          async () =>
            Number(
              ((await set.clients[0].call('PUBSUB', 'NUMSUB', '__quorum-lock__!revoked')) as [string, number])[1],
            ) > 0,
          5_000,
        ),
      ).toBe(true);

      const view = await operator.inspect(resource);
      expect(view.owner).toBe('node-redis-worker');
      expect(view.masters.map((m) => m.owner)).toEqual(['node-redis-worker', 'node-redis-worker', 'node-redis-worker']);

      const result = await operator.revoke(resource, { reason: 'through node-redis' });
      expect(result).toEqual({ revoked: true, holder: lock.value, owner: 'node-redis-worker' });
      const error = await lostError(lock);
      expect(error.reason).toBe('revoked');
      expect(error.message).toContain('through node-redis');
      expect(await Promise.all(set.clients.map((c) => c.exists(`lock:${resource}`)))).toEqual([0, 0, 0]);
      expect(other.isHeld).toBe(true);
      await other.release();
    },
  );

  it('without pub/sub (wakeOnRelease: false) a holder on node-redis clients finds the revocation at its next renewal', async () => {
    const holder = await set.redlock({ nodes: nodeRedisNodes(), wakeOnRelease: false });
    const operator = await set.redlock();
    const resource = resourceName('nr-revoke-quiet');
    const lock = await holder.acquire(resource, 900, { autoExtend: true }); // renewed every 300 ms
    await operator.revoke(resource, { reason: 'quiet' });
    const error = await lostError(lock);
    expect(error.reason).toBe('revoked');
    expect(error.message).toContain('quiet');
  });

  it('a lock acquired through ioredis is adopted through node-redis clients; revoking it ends both', async () => {
    const route = await set.redlock({ owner: 'route' });
    const worker = await set.redlock({ nodes: nodeRedisNodes(3) });
    const resource = resourceName('nr-adopt');
    const lock = await route.acquire(resource, LONG_TTL);
    const adopted = await worker.adopt(JSON.parse(JSON.stringify(lock.toHandle())) as ReturnType<Lock['toHandle']>);
    await adopted.extend(LONG_TTL);
    expect((await worker.inspect(resource)).owner).toBe('route');
    expect((await worker.revoke(resource)).revoked).toBe(true);
    for (const holder of [adopted, lock]) expect((await lostError(holder)).reason).toBe('revoked');
  });

  it('revoke removes every reader held through node-redis clients, and each reader hears it', async () => {
    const one = await set.redlock({ nodes: nodeRedisNodes() });
    const two = await set.redlock({ nodes: nodeRedisNodes(3) });
    const operator = await set.redlock({ nodes: nodeRedisNodes() });
    const resource = resourceName('nr-revoke-read');
    const r1 = await one.acquire(resource, LONG_TTL, { mode: 'read' });
    const r2 = await two.acquire(resource, LONG_TTL, { mode: 'read' });
    expect((await operator.revoke(resource)).revoked).toBe(true);
    for (const reader of [r1, r2]) expect((await lostError(reader)).reason).toBe('revoked');
    expect(await Promise.all(set.clients.map((c) => c.type(`lock:${resource}`)))).toEqual(['none', 'none', 'none']);
  });
});
