import { describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import type { Master } from '../../lib/backend/master.js';
import { plainAcquire, plainRelease } from '../../lib/kinds/mutex/plain-batch.js';
import { defineScripts } from '../../lib/lua/scripts.js';
import { expectAbsentOnAll, resourceName, useMasters } from '../support/index.js';

/** Top-level script calls and plain SETs one master counted since its last RESETSTAT. */
async function calls(client: Redis): Promise<{ scripts: number; sets: number }> {
  const info = await client.info('commandstats');
  let scripts = 0;
  for (const m of info.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) scripts += Number(m[1]);
  return { scripts, sets: Number(/^cmdstat_set:calls=(\d+)/m.exec(info)?.[1] ?? 0) };
}

/**
 * The uncontended mutex's `SET NX PX` and release of one loop turn ride in one script call per master
 * (plain-batch.lua, lib/backend/write-batcher.ts), in call order; a call alone sends its own command.
 */
describe('plain calls of one loop turn batched per master (3 masters)', () => {
  const set = useMasters(3);

  it('32 concurrent acquisitions and their releases reach each master in a few script calls, and every lock is taken and freed', async () => {
    const redlock = await set.redlock();
    const resources = Array.from({ length: 32 }, (_, i) => resourceName(`batched-${i}`));
    await Promise.all(set.clients.map((c) => c.config('RESETSTAT')));
    const locks = await Promise.all(resources.map((r) => redlock.acquire(r, 10_000)));
    await Promise.all(locks.map((lock) => lock.release()));
    for (const client of set.clients) {
      const { scripts } = await calls(client);
      // Unbatched: 32 SETs and 32 release scripts on each master.
      expect(scripts).toBeGreaterThan(0);
      expect(scripts).toBeLessThanOrEqual(8);
    }
    for (const r of resources) await expectAbsentOnAll(set.clients, `lock:${r}`);
  }, 30_000);

  it('a sequential caller sends its own SET NX PX and release script, as without batching', async () => {
    const redlock = await set.redlock();
    await Promise.all(set.clients.map((c) => c.config('RESETSTAT')));
    const lock = await redlock.acquire(resourceName('alone'), 10_000);
    await lock.release();
    for (const client of set.clients) {
      const seen = await calls(client);
      // Batched as one script, the SET would run inside it (counted too) beside a script call.
      expect(seen).toEqual({ scripts: 1, sets: 1 });
    }
  }, 30_000);

  it('calls of one loop turn on one key run in call order: acquire, release, acquire again', async () => {
    const client = set.clients[0];
    const master = { client, scripts: defineScripts(client), label: 'm0' } as unknown as Master;
    const key = `lock:${resourceName('order')}`;
    // One synchronous turn: the three calls leave together at its end.
    const replies = await Promise.all([
      plainAcquire(master, key, 'first', '10000'),
      plainRelease(master, key, 'first', '0'),
      plainAcquire(master, key, 'second', '10000'),
      plainAcquire(master, key, 'third', '10000'),
    ]);
    expect(replies).toEqual([1, 1, 1, 0]);
    expect(await client.get(key)).toBe('second');
    await client.del(key);
  }, 30_000);

  it('an entry that fails rejects its own call only: the others of the batch ran', async () => {
    const client = set.clients[1];
    const master = { client, scripts: defineScripts(client), label: 'm1' } as unknown as Master;
    const held = `lock:${resourceName('oom-held')}`;
    const fresh = `lock:${resourceName('oom-fresh')}`;
    await client.set(held, 'v0');
    const policy = await client.config('GET', 'maxmemory-policy');
    const used = Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    await client.config('SET', 'maxmemory', String(Math.max(1, used - 100_000)));
    try {
      const [acquired, released] = await Promise.allSettled([
        plainAcquire(master, fresh, 'v1', '10000'),
        plainRelease(master, held, 'v0', '0'),
      ]);
      expect(acquired.status).toBe('rejected');
      expect(String((acquired as PromiseRejectedResult).reason)).toMatch(/OOM/);
      expect(released).toEqual({ status: 'fulfilled', value: 1 });
    } finally {
      await client.config('SET', 'maxmemory', '0');
      await client.config('SET', 'maxmemory-policy', policy[1]);
    }
    expect(await client.exists(held, fresh)).toBe(0);
  }, 30_000);
});
