/**
 * @Locked on controller handlers over HTTP: both stacking orders with a ParseIntPipe, guards and pipes
 * running before the lock, Nest HTTP exceptions keeping their status, and an Observable handler.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { DenyGuard, ITEM_CONTROLLERS, Probe } from './fixtures/items.controller.js';
import { ScopedController, ScopedService } from './fixtures/scoped.js';
import { RedisInspector } from '../support/index.js';
import { fastOptions, startHttpApp } from '../support/nest.js';

let redis: RedisMasters;
let inspector: RedisInspector;
let app: INestApplication;
let base: string;
let probe: Probe;

beforeAll(async () => {
  redis = await startRedisMasters(3);
  inspector = new RedisInspector(redis.urls);
  await inspector.waitForUptime();
  ({ app, base } = await startHttpApp(fastOptions(redis.urls), {
    controllers: [...ITEM_CONTROLLERS, ScopedController],
    providers: [Probe, DenyGuard, ScopedService],
  }));
  probe = app.get(Probe);
});

afterAll(async () => {
  await app?.close();
  await inspector?.close();
  await redis?.stop();
});

beforeEach(async () => {
  probe.hook = () => undefined;
  probe.calls = 0;
  await inspector.flush();
  await inspector.resetStats();
});

describe.each([
  ['@Locked above @Get', 'above'],
  ['@Locked below @Get', 'below'],
])('%s', (_label, prefix) => {
  it('serves the route (200), runs the pipe, and holds the key during the handler', async () => {
    probe.hook = async (_where: string, id: number) => ({ holders: await inspector.held(`lock:item:${id}`) });

    const res = await fetch(`${base}/${prefix}/42`);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: 42, type: 'number', probe: { holders: 3 } });
    expect(probe.calls).toBe(1);
    expect(await inspector.released()).toBe(true);
  });

  it('answers 400 for a non-numeric id and takes no lock (the pipe runs first)', async () => {
    const res = await fetch(`${base}/${prefix}/abc`);

    expect(res.status).toBe(400);
    expect(probe.calls).toBe(0);
    expect(await inspector.scriptCalls()).toBe(0);
    expect(await inspector.totalKeys()).toBe(0);
  });
});

describe('guards and HTTP exceptions', () => {
  it('answers 403 when a guard refuses, and takes no lock', async () => {
    const res = await fetch(`${base}/guarded/5`);

    expect(res.status).toBe(403);
    expect(probe.calls).toBe(0);
    expect(await inspector.scriptCalls()).toBe(0);
    expect(await inspector.totalKeys()).toBe(0);
  });

  it('keeps a ConflictException thrown under the lock as 409 (not 500), and releases the lock', async () => {
    let during = -1;
    probe.hook = async (_where: string, id: string) => (during = await inspector.held(`lock:item:${id}`));

    const res = await fetch(`${base}/above/7/conflict`, { method: 'POST' });

    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ statusCode: 409, message: 'item 7 is busy' });
    expect(during).toBe(3);
    expect(await inspector.released()).toBe(true);
  });
});

describe('Observable handler', () => {
  it.each([
    ['declared Observable<number[]>', 'stream'],
    ['no declared return type', 'stream-undeclared'],
  ])('%s: holds the key while the Observable emits and releases it once it completes', async (_label, route) => {
    const ticks: number[] = [];
    probe.hook = async (_where: string, id: string) => ticks.push(await inspector.held(`lock:stream:${id}`));

    const res = await fetch(`${base}/${route}/s-1`);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([0, 1, 2]);
    expect(ticks).toEqual([3, 3, 3]);
    expect(await inspector.released()).toBe(true);
  });

  it('serialises two concurrent requests on the same id', async () => {
    const log: string[] = [];
    probe.hook = async (_where: string, id: string, tick: number) => log.push(`${id}:${tick}`);

    const [r1, r2] = await Promise.all([fetch(`${base}/stream/s-2`), fetch(`${base}/stream/s-2`)]);

    expect([r1.status, r2.status]).toEqual([200, 200]);
    // Each stream ran its 3 ticks without the other interleaving.
    expect(log).toEqual(['s-2:0', 's-2:1', 's-2:2', 's-2:0', 's-2:1', 's-2:2']);
  });
});

describe('request scope', () => {
  it('locks in a request-scoped controller calling a request-scoped provider', async () => {
    probe.hook = async (_where: string, id: string) => ({
      request: await inspector.held(`lock:request:${id}`),
      scoped: await inspector.held(`lock:scoped:${id}`),
    });

    const res = await fetch(`${base}/scoped/r-1`);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      outer: ['request:r-1'],
      inner: { resources: ['scoped:r-1'], probe: { request: 3, scoped: 3 } },
    });
    expect(await inspector.released()).toBe(true);
  });
});
