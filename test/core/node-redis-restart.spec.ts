import { describe, expect, it } from '@jest/globals';
import { createClient, type RedisClientType } from 'redis';
import type { LockLostError, TryAcquireOptions } from '../../lib/index.js';
import { inspector, resourceName, useMasters, waitFor } from '../support/index.js';

/**
 * Every lock kind held through node-redis clients only while one master is killed and restarted
 * empty (its script cache and subscriptions gone): the locks hold on the other two, and once the
 * restart guard trusts the master again each kind takes its keys there too and is revoked there.
 */
describe('node-redis clients: every lock kind across a master restart (3 masters)', () => {
  const set = useMasters(3);

  const kinds: [string, TryAcquireOptions][] = [
    ['mutex-fenced', { fencing: true }],
    ['read', { mode: 'read' }],
    ['counting', { limit: 2 }],
  ];

  it('locks held across the restart keep holding; after the guard each kind works on the restarted master, and revoke ends it', async () => {
    const clients = set.urls.map((url) => {
      const c = createClient({ url, socket: { reconnectStrategy: () => 50 } }) as RedisClientType;
      c.on('error', () => undefined);
      return c;
    });
    try {
      const largestTtl = 1_500;
      const redlock = await set.redlock({
        nodes: clients,
        ttl: 1_000,
        restartGuard: { largestTtl },
        owner: 'node-redis-holder',
      });
      const operator = await set.redlock();
      const trusted = (): boolean => redlock.masterStates().every((m) => m.trusted);
      expect(await waitFor(trusted, 2 * largestTtl + 5_000, 50)).toBe(true);

      const held = await Promise.all(
        kinds.map(([name, options]) =>
          redlock.acquire(resourceName(`nr-before-${name}`), 1_000, { ...options, autoExtend: true }),
        ),
      );

      await set.masters[0].kill();
      await set.masters[0].restart();
      set.clients[0] = inspector(set.urls[0]);
      expect(await waitFor(() => redlock.masterStates()[0].distrust === 'restarted', 10_000, 20)).toBe(true);
      expect(await waitFor(trusted, 2 * largestTtl + 5_000, 50)).toBe(true);
      // renewed past their TTL through the restart on the two other masters
      for (const lock of held) expect(lock.signal.aborted).toBe(false);

      for (const [name, options] of kinds) {
        const resource = resourceName(`nr-after-${name}`);
        const lock = await redlock.acquire(resource, 5_000, options);
        // the restarted master (script cache flushed) took its part too: the last master's write may land after the quorum's
        const onRestarted = async (): Promise<boolean> => (await set.clients[0].keys(`lock:${resource}*`)).length > 0;
        const there = await waitFor(onRestarted, 15_000);
        expect({ name, there }).toEqual({ name, there: true });
        expect((await operator.inspect(resource)).owner).toBe('node-redis-holder');
        const result = await operator.revoke(resource, { reason: `after restart: ${name}` });
        expect({ name, revoked: result.revoked, owner: result.owner }).toEqual({
          name,
          revoked: true,
          owner: 'node-redis-holder',
        });
        expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
        expect((lock.signal.reason as LockLostError).reason).toBe('revoked');
      }
      for (const lock of held) await lock.release();
      for (const c of clients) expect(c.isOpen).toBe(true);
    } finally {
      for (const c of clients) if (c.isOpen) c.destroy();
    }
  }, 60_000);
});
