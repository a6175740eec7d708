import { describe, expect, it } from '@jest/globals';
import { resourceName, sleep, useMasters, expectAbsentOnAll } from '../support/index.js';

describe('mutual exclusion under concurrency (5 masters)', () => {
  const set = useMasters(5);
  const patient = { retryCount: Infinity, retryDelay: 10, retryJitter: 5, acquireTimeout: 20_000 };

  it('20 concurrent using() on one resource from two Redlock instances never overlap, and all complete', async () => {
    // Two "processes": separate Redlock instances, separate connections.
    const processA = await set.redlock({ commandTimeout: 100 });
    const processB = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('counter');
    let holders = 0;
    let maxHolders = 0;
    let completed = 0;
    const order: number[] = [];

    const tasks = Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0 ? processA : processB).using(
        resource,
        // 5 s: a stall of this process (a loaded machine) longer than the validity would lose the
        // lock legitimately; with 1 s that happened. The bodies take 5-15 ms either way.
        5_000,
        async () => {
          holders += 1;
          maxHolders = Math.max(maxHolders, holders);
          await sleep(5 + (i % 3) * 5);
          holders -= 1;
          completed += 1;
          order.push(i);
          return i;
        },
        patient,
      ),
    );
    const results = await Promise.all(tasks);

    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(completed).toBe(20);
    expect(new Set(order).size).toBe(20);
    expect(maxHolders).toBe(1);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('using() on distinct resources runs concurrently', async () => {
    const processA = await set.redlock({ commandTimeout: 100 });
    const processB = await set.redlock({ commandTimeout: 100 });
    let holders = 0;
    let maxHolders = 0;
    const resources = Array.from({ length: 6 }, (_, i) => resourceName(`distinct-${i}`));

    await Promise.all(
      resources.map((resource, i) =>
        (i % 2 === 0 ? processA : processB).using(
          resource,
          1_000,
          async () => {
            holders += 1;
            maxHolders = Math.max(maxHolders, holders);
            await sleep(100);
            holders -= 1;
          },
          { retryCount: 0 },
        ),
      ),
    );

    expect(maxHolders).toBeGreaterThan(1);
    for (const resource of resources) await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });
});
