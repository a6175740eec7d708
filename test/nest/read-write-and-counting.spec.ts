/**
 * `mode` and `limit` through `@Locked` in two Nest applications sharing 3 real masters: readers
 * together, writers (with and without `mode`) alone, at most `limit` holders, a mismatched `limit`
 * refused, bad options refused at decoration time.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { currentLock, lockModeOf, Locked, RedlockConfigError } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { RedisInspector, sleep } from '../support/index.js';
import { fastOptions, startApp } from '../support/nest.js';

/** What runs at once, across both applications (one process). */
const live = { readers: 0, writers: 0, exports: 0, mostReaders: 0, mostExports: 0, violations: 0 };

@Injectable()
class CatalogService {
  @Locked('catalog:#shop', { mode: 'read', retryCount: Infinity, acquireTimeout: 20_000 })
  async page(shop: string): Promise<string> {
    live.readers++;
    live.mostReaders = Math.max(live.mostReaders, live.readers);
    if (live.writers > 0) live.violations++;
    await sleep(40);
    live.readers--;
    return `${shop}:${lockModeOf(currentLock()!).mode}`;
  }

  @Locked('catalog:#shop', { retryCount: Infinity, acquireTimeout: 20_000 })
  async reindex(shop: string): Promise<void> {
    void shop; // named for the key template
    live.writers++;
    if (live.writers > 1 || live.readers > 0) live.violations++;
    await sleep(20);
    live.writers--;
  }

  @Locked('catalog:#shop', { mode: 'write', retryCount: Infinity, acquireTimeout: 20_000 })
  async rename(shop: string): Promise<void> {
    await this.reindex(shop); // reentrant: the outer write lock covers it
  }

  @Locked('export:#tenant', { limit: 2, retryCount: Infinity, acquireTimeout: 20_000 })
  async export(tenant: string): Promise<number> {
    void tenant; // named for the key template
    live.exports++;
    live.mostExports = Math.max(live.mostExports, live.exports);
    await sleep(30);
    live.exports--;
    return currentLock()!.validity > 0 ? 1 : 0;
  }

  @Locked('export:#tenant', { limit: 3, retryCount: 0 })
  async exportWithOtherLimit(tenant: string): Promise<void> {
    void tenant; // named for the key template
    await sleep(1);
  }
}

let redis: RedisMasters;
let inspector: RedisInspector;
let apps: INestApplication[] = [];

beforeAll(async () => {
  redis = await startRedisMasters(3);
  inspector = new RedisInspector(redis.urls);
  await inspector.waitForUptime();
  apps = [
    await startApp(fastOptions(redis.urls), { providers: [CatalogService] }),
    await startApp(fastOptions(redis.urls), { providers: [CatalogService] }),
  ];
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await inspector?.close();
  await redis?.stop();
});

describe('@Locked with `mode` and `limit` (two applications, 3 masters)', () => {
  it('readers share, writers (with or without `mode`) run alone, across both applications', async () => {
    const [a, b] = apps.map((app) => app.get(CatalogService));
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 16; i++) {
      const s = i % 2 ? a : b;
      calls.push(i % 5 === 0 ? s.reindex('s1') : i % 7 === 0 ? s.rename('s1') : s.page('s1'));
    }
    const results = await Promise.all(calls);
    expect(results.filter((r) => r === 's1:read').length).toBeGreaterThan(0);
    expect(live.violations).toBe(0);
    expect(live.mostReaders).toBeGreaterThan(1);
  });

  it('n+1 callers of a `limit: 2` method across both applications: never more than 2 at once; a different limit is refused', async () => {
    const [a, b] = apps.map((app) => app.get(CatalogService));
    const slow = a.export('t1');
    await sleep(5);
    const refused = await b.exportWithOtherLimit('t1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RedlockConfigError);
    expect((refused as Error).message).toMatch(/`limit` 3 differs from the limit 2/);
    const results = await Promise.all([slow, ...Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).export('t1'))]);
    expect(results).toEqual(results.map(() => 1));
    expect(live.mostExports).toBe(2);
  });

  it('refuses a bad `mode` or `limit` at decoration time, naming the option', () => {
    const decorate = (options: object) => () =>
      Locked('x', options as never)({}, 'm', { value: async () => undefined });
    expect(decorate({ mode: 'shared' })).toThrow(expect.objectContaining({ option: 'mode' }));
    expect(decorate({ limit: 0 })).toThrow(expect.objectContaining({ option: 'limit' }));
    expect(decorate({ limit: 2, mode: 'read' })).toThrow(expect.objectContaining({ option: 'mode' }));
  });
});
