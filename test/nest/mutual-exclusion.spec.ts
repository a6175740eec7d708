/**
 * Mutual exclusion across two independent Nest applications sharing the same 3 masters: a counter
 * shared in this process records how many callers are inside the @Locked method at once.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { ExclusiveService, SHARED_COUNTER, SharedCounter } from './fixtures/exclusive.service.js';
import { RedisInspector } from '../support/index.js';
import { fastOptions, startApp } from '../support/nest.js';

let redis: RedisMasters;
let inspector: RedisInspector;
let counter: SharedCounter;
let appA: INestApplication;
let appB: INestApplication;
let a: ExclusiveService;
let b: ExclusiveService;

function appWith(name: string): Promise<INestApplication> {
  return startApp(fastOptions(redis.urls), {
    providers: [
      ExclusiveService,
      { provide: SHARED_COUNTER, useFactory: () => counter },
      { provide: 'APP_NAME', useValue: name },
    ],
  });
}

beforeAll(async () => {
  redis = await startRedisMasters(3);
  inspector = new RedisInspector(redis.urls);
  await inspector.waitForUptime();
  counter = new SharedCounter();
  [appA, appB] = await Promise.all([appWith('A'), appWith('B')]);
  a = appA.get(ExclusiveService);
  b = appB.get(ExclusiveService);
});

afterAll(async () => {
  await Promise.all([appA?.close(), appB?.close()]);
  await inspector?.close();
  await redis?.stop();
});

beforeEach(async () => {
  await inspector.flush();
});

describe('two independent applications, one set of masters', () => {
  it('are two separate Nest containers', () => {
    expect(appA).not.toBe(appB);
    expect(a).not.toBe(b);
  });

  it('never lets two callers of the same id in at once; all 20 calls succeed', async () => {
    const calls = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).critical('same', 15));
    const results = await Promise.all(calls);

    expect(results).toHaveLength(20);
    expect(results.filter((r) => r === 'A:same')).toHaveLength(10);
    expect(results.filter((r) => r === 'B:same')).toHaveLength(10);
    expect(counter.maxPerId.get('same')).toBe(1);
    // Strict alternation in/out, whoever the app.
    const log = counter.log.filter((l) => l.endsWith(' same'));
    expect(log).toHaveLength(40);
    log.forEach((entry, i) => expect(entry).toMatch(i % 2 === 0 ? / in same$/ : / out same$/));
    expect(await inspector.released()).toBe(true);
  });

  it('lets calls on different ids overlap', async () => {
    const ids = ['d0', 'd1', 'd2', 'd3', 'd4', 'd5'];
    counter.maxInside = 0;
    const results = await Promise.all(ids.map((id, i) => (i % 2 === 0 ? a : b).critical(id, 150)));
    expect(results).toEqual(ids.map((id, i) => `${i % 2 === 0 ? 'A' : 'B'}:${id}`));
    expect(counter.maxInside).toBeGreaterThan(1);
    for (const id of ids) expect(counter.maxPerId.get(id)).toBe(1);
  });
});
