/**
 * Every method shape `@Locked` accepts is held for its whole run, and the others are refused at
 * decoration: async generators, async methods resolving to an Observable, static methods, synchronous
 * generators; and sibling calls inside a `@Locked` method take turns. Nest app on 3 real masters.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { firstValueFrom, interval, lastValueFrom, map, take, toArray, type Observable } from 'rxjs';
import { currentLock, Locked, LockAcquisitionError, RedlockError, RedlockService } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { RedisInspector, sleep, waitFor } from '../support/index.js';
import { fastOptions, startApp } from '../support/nest.js';

@Injectable()
class ShapesService {
  steps: string[] = [];
  inside = 0;
  most = 0;

  constructor(readonly inspector: RedisInspector) {}

  /** Yields while holding the lock; records how many masters hold it at each step. */
  @Locked('gen:#id')
  async *rows(id: string, count: number): AsyncGenerator<number, string, unknown> {
    try {
      for (let i = 0; i < count; i++) {
        await sleep(20);
        this.steps.push(`yield ${i} held by ${await this.inspector.held(`lock:gen:${id}`)}`);
        yield i;
      }
      return 'end';
    } finally {
      this.steps.push('finally');
    }
  }

  @Locked('gen:#id', { onBusy: 'skip' })
  async *rowsOrNothing(id: string): AsyncGenerator<number> {
    void id;
    yield 1;
  }

  @Locked('obs:#id')
  async feed(id: string): Promise<Observable<number>> {
    await sleep(10);
    return interval(40).pipe(
      take(4),
      map((n) => {
        this.steps.push(`emit ${n} lock ${currentLock() ? 'seen' : 'none'}`);
        return n;
      }),
    );
    void id;
  }

  @Locked('order:#id')
  async pay(id: string): Promise<string[]> {
    return Promise.all([this.charge(id, 'a'), this.charge(id, 'b')]);
  }

  @Locked('order:#id')
  async charge(id: string, label: string): Promise<string> {
    this.inside++;
    this.most = Math.max(this.most, this.inside);
    await sleep(50);
    this.inside--;
    return `${label}:${id}`;
  }
}

let redis: RedisMasters;
let inspector: RedisInspector;
let app: INestApplication;
let shapes: ShapesService;
let redlock: RedlockService;

beforeAll(async () => {
  redis = await startRedisMasters(3);
  inspector = new RedisInspector(redis.urls);
  await inspector.waitForUptime();
  app = await startApp(fastOptions(redis.urls), {
    providers: [ShapesService, { provide: RedisInspector, useValue: inspector }],
  });
  shapes = app.get(ShapesService);
  redlock = app.get(RedlockService);
});

afterAll(async () => {
  await app?.close();
  await inspector?.close();
  await redis?.stop();
});

beforeEach(async () => {
  shapes.steps = [];
  shapes.most = 0;
  await inspector.flush();
});

describe('async generators hold the lock from the first next() until they end', () => {
  it('no lock before the first next(); held at every step; released after return', async () => {
    const rows = shapes.rows('g1', 3);
    await sleep(50);
    expect(await inspector.holders('lock:gen:g1')).toBe(0); // not started: nothing taken
    const seen: number[] = [];
    for await (const row of rows) seen.push(row);
    expect(seen).toEqual([0, 1, 2]);
    expect(shapes.steps).toEqual(['yield 0 held by 3', 'yield 1 held by 3', 'yield 2 held by 3', 'finally']);
    expect(await inspector.gone('lock:gen:g1')).toBe(true);
  });

  it('held between steps while the consumer is slow; released on early return (break)', async () => {
    const rows = shapes.rows('g2', 10);
    for await (const row of rows) {
      await sleep(100); // the consumer is slow: the lock is still held here
      expect(await inspector.holders('lock:gen:g2')).toBe(3);
      if (row === 1) break;
    }
    expect(shapes.steps.at(-1)).toBe('finally');
    expect(await inspector.gone('lock:gen:g2')).toBe(true);
  });

  it('a second generator on the same key waits until the first one is closed', async () => {
    const first = shapes.rows('g3', 5);
    await first.next();
    const second = shapes.rows('g3', 1).next();
    await sleep(150);
    expect(shapes.steps).toEqual(['yield 0 held by 3']); // the second has not started
    await first.return('stop');
    await expect(second).resolves.toEqual({ done: false, value: 0 });
  });

  it("onBusy 'skip': a busy generator is done at once, yielding nothing", async () => {
    const holder = await redlock.acquire('gen:g4', 5_000);
    await expect(shapes.rowsOrNothing('g4').next()).resolves.toEqual({ done: true, value: undefined });
    await holder.release();
    await expect(shapes.rowsOrNothing('g4').next()).resolves.toEqual({ done: false, value: 1 });
  });

  it('a generator whose lock is busy rejects its first next() with LockAcquisitionError', async () => {
    const holder = await redlock.acquire('gen:g5', 5_000);
    const error = await shapes
      .rows('g5', 1)
      .next()
      .catch((e: unknown) => e);
    await holder.release();
    expect(error).toBeInstanceOf(LockAcquisitionError);
  });
});

describe('an async method resolving to an Observable', () => {
  it('keeps the lock while the Observable is subscribed, and releases it when it completes', async () => {
    const feed = await shapes.feed('o1');
    expect(await inspector.holders('lock:obs:o1')).toBe(3); // resolved, not yet subscribed: kept for the subscriber
    const values = await lastValueFrom(feed.pipe(toArray()));
    expect(values).toEqual([0, 1, 2, 3]);
    expect(shapes.steps.every((s) => s.endsWith('lock seen'))).toBe(true);
    expect(await inspector.gone('lock:obs:o1')).toBe(true);
  });

  it('a second caller waits while the first Observable is subscribed', async () => {
    const first = await shapes.feed('o2');
    const sub = first.subscribe();
    const second = shapes.feed('o2').then((o) => firstValueFrom(o));
    await sleep(100);
    expect(await waitFor(async () => (await inspector.holders('lock:obs:o2')) === 3)).toBe(true);
    sub.unsubscribe();
    await expect(second).resolves.toBe(0);
  });
});

describe('refused at decoration, with a message that says why', () => {
  it('a static method', () => {
    let error: unknown;
    try {
      class Jobs {
        @Locked('static:#id')
        static async run(id: string): Promise<string> {
          return id;
        }
      }
      void Jobs;
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RedlockError);
    expect((error as Error).message).toMatch(/static method Jobs\.run/);
    expect((error as Error).message).toMatch(/static methods are not supported/);
    expect((error as Error).message).not.toMatch(/not injected/);
  });

  it('a synchronous generator', () => {
    let error: unknown;
    try {
      class Rows {
        // @ts-expect-error a synchronous generator is not a lockable method
        @Locked('rows:#id')
        *rows(id: string): Generator<string> {
          yield id;
        }
      }
      void Rows;
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RedlockError);
    expect((error as Error).message).toMatch(/Rows\.rows.*synchronous generator.*async \*rows\(\)/);
  });
});

describe('siblings inside a @Locked method take turns: Promise.all([this.charge(id), this.charge(id)])', () => {
  it('runs the inner bodies one at a time, without deadlock, under the outer lock', async () => {
    await expect(shapes.pay('p1')).resolves.toEqual(['a:p1', 'b:p1']);
    expect(shapes.most).toBe(1);
    expect(await inspector.gone('lock:order:p1')).toBe(true);
  });
});
