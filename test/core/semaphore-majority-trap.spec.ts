import { describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import { resourceName, useMasters } from '../support/index.js';

/** A loopback port with nothing listening: a master this client cannot reach (a partition). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const ADMIT = `
if redis.call('scard', KEYS[1]) < tonumber(ARGV[2]) then redis.call('sadd', KEYS[1], ARGV[1]) return 1 end
return 0`;

describe('the majority-of-counters trap (3 masters, limit 2, each client partitioned from a different master)', () => {
  const set = useMasters(3);

  it('per-master counters admit three holders on three different majorities; permit slots admit two', async () => {
    const limit = 2;
    const resource = resourceName('trap');
    // Client i reaches every master but master 2 - i: A|m3, B|m2, C|m1.
    const reachable = [0, 1, 2].map((i) => [0, 1, 2].filter((m) => m !== 2 - i));

    let unsafeHolders = 0;
    for (const [i, masters] of reachable.entries()) {
      const votes = await Promise.all(
        masters.map((m) => set.clients[m].eval(ADMIT, 1, `unsafe:${resource}`, `client-${i}`, limit)),
      );
      if (votes.filter((v) => v === 1).length >= 2) unsafeHolders++;
    }
    expect(unsafeHolders).toBe(3); // > limit: the construction is unsafe
    await Promise.all(set.clients.map((c) => c.del(`unsafe:${resource}`)));

    const dead = `redis://127.0.0.1:${await deadPort()}`;
    const redlocks = await Promise.all(
      reachable.map((masters) =>
        set.redlock({ nodes: [0, 1, 2].map((m) => (masters.includes(m) ? set.urls[m] : dead)), commandTimeout: 1_000 }),
      ),
    );
    const permits = [];
    // A few quick retries: a random slot may collide with the first holder's on the one master both reach.
    for (const r of redlocks)
      permits.push(await r.acquire(resource, 10_000, { limit, retryCount: 3, retryDelay: 50 }).catch(() => null));
    expect(permits.filter(Boolean).length).toBe(limit);
    await Promise.all(permits.flatMap((p) => (p ? [p.release()] : [])));
  });
});
