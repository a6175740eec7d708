/**
 * Lock loss under faults, with 5 independent masters (quorum 3): pausing 3 of them (SIGSTOP) while a
 * @Locked method runs makes renewal impossible, so the lock's signal must abort and the call must
 * reject with LockLostError; pausing only 2 must not.
 */
import 'reflect-metadata';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { currentLock, LockLostError } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { OrdersService } from './fixtures/orders.service.js';
import { RedisInspector, sleep } from '../support/index.js';
import { fastOptions, startApp } from '../support/nest.js';

let redis: RedisMasters;
let inspector: RedisInspector;
let app: INestApplication;
let orders: OrdersService;

beforeAll(async () => {
  redis = await startRedisMasters(5);
  inspector = new RedisInspector(redis.urls);
  await inspector.waitForUptime();
  app = await startApp(fastOptions(redis.urls, { commandTimeout: 100 }), { providers: [OrdersService] });
  orders = app.get(OrdersService);
});

afterAll(async () => {
  for (const m of redis?.masters ?? []) if (m.pid) m.resume();
  await app?.close();
  await inspector?.close();
  await redis?.stop();
});

beforeEach(async () => {
  orders.hook = () => undefined;
  await inspector.flush();
});

afterEach(() => {
  for (const m of redis.masters) m.resume();
});

/** Resolves true when `signal` aborts, false after `ms`. */
function abortedWithin(signal: AbortSignal, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve(true)), { once: true });
  });
}

describe('lock loss', () => {
  it('aborts the signal and rejects with LockLostError after the method returns normally, when 3 of 5 masters stop', async () => {
    const events: string[] = [];
    let inside:
      | { heldAtStart: number; validityAtStart: number; aborted: boolean; reason: unknown; lockedFor: number }
      | undefined;
    orders.hook = async (id: string) => {
      const lock = currentLock()!;
      const signal = lock.signal;
      const heldAtStart = await inspector.held(`lock:fragile:${id}`);
      const start = performance.now();
      const validityAtStart = lock.validity;
      for (const m of redis.masters.slice(0, 3)) m.pause();
      try {
        const aborted = await abortedWithin(signal, 3_000);
        inside = { heldAtStart, validityAtStart, aborted, reason: signal.reason, lockedFor: performance.now() - start };
      } finally {
        for (const m of redis.masters) m.resume();
      }
      events.push('method returned');
      return 'finished normally';
    };

    const outcome = await orders.fragile('x-1').then(
      (value) => ({ value }),
      (error: unknown) => (events.push('call rejected'), { error }),
    );

    expect(inside!.heldAtStart).toBe(5);
    expect(inside!.aborted).toBe(true);
    expect(inside!.reason).toBeInstanceOf(LockLostError);
    // Delivered before it happens: the signal aborted before the lock's local validity ran out.
    expect(inside!.lockedFor).toBeLessThan(inside!.validityAtStart);
    expect(outcome).toEqual({ error: inside!.reason });
    expect((outcome as { error: unknown }).error).toBeInstanceOf(LockLostError);
    expect((outcome as { error: LockLostError }).error.resources).toEqual(['fragile:x-1']);
    expect(events).toEqual(['method returned', 'call rejected']);
  });

  it('keeps the lock when only 2 of 5 masters stop (a quorum of 3 still renews it)', async () => {
    orders.hook = async (id: string) => {
      const lock = currentLock()!;
      const signal = lock.signal;
      for (const m of redis.masters.slice(0, 2)) m.pause();
      try {
        await sleep(1_200); // two TTLs
        // Only the 3 running masters are asked: a paused one would not answer.
        return {
          aborted: signal.aborted,
          held: lock.isHeld,
          onLive: await inspector.holders(`lock:fragile:${id}`, [2, 3, 4]),
        };
      } finally {
        for (const m of redis.masters) m.resume();
      }
    };
    const result = (await orders.fragile('x-2')) as { aborted: boolean; held: boolean; onLive: number };
    expect(result.aborted).toBe(false);
    expect(result.held).toBe(true);
    expect(result.onLive).toBe(3);
  });
});
