/**
 * @Locked on provider methods, RedlockService injection, key templates, errors, renewal,
 * reentrancy, Observables returned by providers, metadata. Real Redis: 3 independent masters.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ConflictException, SetMetadata, type INestApplication } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { concatMap, interval, lastValueFrom, map, take, timer, toArray } from 'rxjs';
import {
  currentLock,
  Lock,
  LockAcquisitionError,
  Locked,
  LockKeyError,
  RedlockError,
  RedlockService,
} from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { InnerService, OuterService } from './fixtures/nested.service.js';
import { OrdersService, PlainThing } from './fixtures/orders.service.js';
import { RedisInspector, sleep, waitFor } from '../support/index.js';
import { fastOptions, startApp } from '../support/nest.js';

let redis: RedisMasters;
let inspector: RedisInspector;
let app: INestApplication;
let orders: OrdersService;

beforeAll(async () => {
  redis = await startRedisMasters(3);
  inspector = new RedisInspector(redis.urls);
  await inspector.waitForUptime();
  app = await startApp(fastOptions(redis.urls), { providers: [OrdersService, OuterService, InnerService] });
  orders = app.get(OrdersService);
});

afterAll(async () => {
  await app?.close();
  await inspector?.close();
  await redis?.stop();
});

beforeEach(async () => {
  orders.hook = () => undefined;
  app.get(InnerService).hook = () => undefined;
  app.get(OuterService).hook = () => undefined;
  await inspector.flush();
  await inspector.resetStats();
});

describe('forRoot and @Locked on a provider method', () => {
  it('injects RedlockService into providers', () => {
    const service = app.get(RedlockService);
    expect(service).toBeInstanceOf(RedlockService);
    expect(orders.redlock).toBe(service);
    expect(service.masters).toHaveLength(3);
  });

  it('holds lock:order:<id> on every master while the method runs, releases it after, passes the return value through', async () => {
    const returned = { answer: 42 };
    let during: { holders: number; values: (string | null)[]; lock: Lock | undefined } | undefined;
    orders.hook = async (id: string) => {
      during = {
        holders: await inspector.held(`lock:order:${id}`),
        values: await inspector.heldValues(`lock:order:${id}`),
        lock: currentLock(),
      };
      return returned;
    };

    await expect(orders.process('o-1')).resolves.toBe(returned);

    expect(during!.holders).toBe(3);
    expect(during!.lock).toBeInstanceOf(Lock);
    expect(during!.lock!.resources).toEqual(['order:o-1']);
    // The same random value (this lock's) on every master.
    expect(during!.values).toEqual([during!.lock!.value, during!.lock!.value, during!.lock!.value]);
    expect(await inspector.holders('lock:order:o-1')).toBeLessThan(2); // free at once (a quorum deleted it)
    expect(await inspector.released()).toBe(true);
    expect(currentLock()).toBeUndefined();
  });

  it('uses the number argument as text in the key', async () => {
    orders.hook = async () => inspector.held('lock:order:17');
    await expect(orders.process(17)).resolves.toBe(3);
  });
});

describe('renewal', () => {
  it('keeps a 400 ms lock through a 2 s method: signal not aborted, key on a majority near the end, call resolves', async () => {
    orders.hook = async (id: string) => {
      const lock = currentLock()!;
      const signal = lock.signal;
      const key = `lock:slow:${id}`;
      await sleep(1_850);
      const near = await inspector.holders(key);
      const pttls = await Promise.all(inspector.clients.map((c) => c.pttl(key)));
      await sleep(150);
      return {
        aborted: signal.aborted,
        held: lock.isHeld,
        near,
        pttls,
        ttl: lock.ttl,
        value: lock.value,
        values: await inspector.values(key),
      };
    };

    const result = (await orders.slow('r-1')) as {
      aborted: boolean;
      held: boolean;
      near: number;
      pttls: number[];
      ttl: number;
      value: string;
      values: (string | null)[];
    };

    expect(result.aborted).toBe(false);
    expect(result.held).toBe(true);
    expect(result.ttl).toBe(400);
    expect(result.near).toBeGreaterThanOrEqual(2);
    // Renewed with the same TTL (not stretched), still the same holder.
    expect(result.pttls.filter((t) => t > 0 && t <= 400).length).toBeGreaterThanOrEqual(2);
    expect(result.values.filter((v) => v === result.value).length).toBeGreaterThanOrEqual(2);
    expect(await inspector.released()).toBe(true);
  });
});

describe("the user's own errors", () => {
  class PaymentDeclined extends Error {}

  it('rejects with the very error object the method threw, and releases the lock', async () => {
    const error = new PaymentDeclined('card declined');
    orders.hook = () => {
      throw error;
    };
    await expect(orders.process('e-1')).rejects.toBe(error);
    expect(await inspector.released()).toBe(true);
  });

  it('passes a Nest HttpException through unchanged', async () => {
    const error = new ConflictException('already paid');
    orders.hook = async () => {
      await sleep(5);
      throw error;
    };
    await expect(orders.process('e-2')).rejects.toBe(error);
    expect(await inspector.released()).toBe(true);
  });

  it('passes a thrown non-Error value through unchanged', async () => {
    const thrown = { code: 'E_NOPE' };
    orders.hook = () => Promise.reject(thrown);
    await expect(orders.process('e-3')).rejects.toBe(thrown);
  });
});

describe('key templates', () => {
  it.each([
    ['undefined', undefined],
    ['null', null],
    ['an object', { id: 1 }],
    ['an empty string', ''],
  ])('#id that is %s at call time rejects with LockKeyError and writes nothing', async (_label, value) => {
    let ran = false;
    orders.hook = () => (ran = true);
    await expect(orders.process(value)).rejects.toBeInstanceOf(LockKeyError);
    expect(ran).toBe(false);
    expect(await inspector.dbsizes()).toEqual([0, 0, 0]);
    expect(await inspector.scriptCalls()).toBe(0);
  });

  it('names the placeholder and the method in the LockKeyError', async () => {
    await expect(orders.process(undefined)).rejects.toThrow(/OrdersService\.process.*#id|#id.*OrdersService\.process/);
  });

  it('refuses an unknown placeholder when the decorator is applied, naming class, method and placeholder', () => {
    const declare = () => {
      class BadOrders {
        @Locked('order:#nope')
        async pay(id: string): Promise<string> {
          return id;
        }
      }
      return BadOrders;
    };
    expect(declare).toThrow(LockKeyError);
    expect(declare).toThrow(/BadOrders/);
    expect(declare).toThrow(/\bpay\b/);
    expect(declare).toThrow(/#nope/);
  });

  it('follows a property path: #dto.order.id', async () => {
    orders.hook = async () => inspector.held('lock:order:77');
    await expect(orders.byDto({ order: { id: 77 } })).resolves.toBe(3);
  });

  it.each([
    ['a missing property', { order: {} }],
    ['a null step', { order: null }],
    ['an object at the end', { order: { id: { nested: true } } }],
  ])('rejects a property path reaching %s with LockKeyError', async (_label, dto) => {
    await expect(orders.byDto(dto)).rejects.toBeInstanceOf(LockKeyError);
    expect(await inspector.totalKeys()).toBe(0);
    expect(await inspector.scriptCalls()).toBe(0);
  });

  it('locks several resources for an array of templates, as one lock', async () => {
    orders.hook = async () => ({
      a: await inspector.heldValues('lock:account:A'),
      b: await inspector.heldValues('lock:account:B'),
      lock: currentLock(),
    });
    const seen = (await orders.transfer('A', 'B', 10)) as { a: (string | null)[]; b: (string | null)[]; lock: Lock };
    expect(seen.lock.resources).toEqual(['account:A', 'account:B']);
    expect(seen.a).toEqual([seen.lock.value, seen.lock.value, seen.lock.value]);
    expect(seen.b).toEqual([seen.lock.value, seen.lock.value, seen.lock.value]);
    expect(await inspector.released()).toBe(true);
  });

  it('uses a key function with the call arguments', async () => {
    orders.hook = async () => inspector.held('lock:user:9');
    await expect(orders.rename({ id: 9 }, 'Ada')).resolves.toBe(3);
  });

  it('takes #1 as the second argument', async () => {
    orders.hook = async () => inspector.held('lock:pair:second');
    await expect(orders.byPosition('first', 'second')).resolves.toBe(3);
  });
});

describe('reentrancy in one call chain', () => {
  it('runs a nested @Locked method on the same resource without re-acquiring (no self-deadlock)', async () => {
    const outer = app.get(OuterService);
    const inner = app.get(InnerService);
    let innerValues: (string | null)[] = [];
    inner.hook = async (_kind: string, id: string) => (innerValues = await inspector.heldValues(`lock:order:${id}`));
    outer.hook = async (_kind: string, id: string) => inspector.held(`lock:order:${id}`);

    const result = await outer.pay('n-1');

    expect(result.outer).toBeInstanceOf(Lock);
    expect(result.inner).toBe(result.outer);
    expect(result.after).toBe(result.outer);
    // Not acquired again: the masters still hold the outer lock's value while the inner method runs…
    expect(innerValues).toEqual([result.outer!.value, result.outer!.value, result.outer!.value]);
    // …and the inner call's return did not release the outer lock.
    expect(result.afterHook).toBe(3);
    expect(await inspector.released()).toBe(true);
  });

  it('acquires a different resource in a nested call, and releases only that one when it returns', async () => {
    const outer = app.get(OuterService);
    const inner = app.get(InnerService);
    let during: { order: number; invoice: number } | undefined;
    inner.hook = async (_kind: string, id: string) =>
      (during = {
        order: await inspector.held(`lock:order:${id}`),
        invoice: await inspector.held(`lock:invoice:${id}`),
      });
    outer.hook = async (_kind: string, id: string) => ({
      order: await inspector.held(`lock:order:${id}`),
      invoiceGone: await inspector.gone(`lock:invoice:${id}`),
    });

    const result = await outer.bill('n-2');

    expect(result.inner).toBeInstanceOf(Lock);
    expect(result.inner).not.toBe(result.outer);
    expect(result.inner!.resources).toEqual(['invoice:n-2']);
    expect(during).toEqual({ order: 3, invoice: 3 });
    expect(result.after).toBe(result.outer);
    expect(result.afterHook).toEqual({ order: 3, invoiceGone: true });
    expect(await inspector.released()).toBe(true);
  });

  it('rejects with LockAcquisitionError (busy) without running the method when another holder keeps the resource', async () => {
    const inner = app.get(InnerService);
    let ran = false;
    inner.hook = () => (ran = true);
    const other = await app.get(RedlockService).acquire('order:taken', 900);
    try {
      const error = await inner.sameOrder('taken').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect((error as LockAcquisitionError).busy).toBe(true);
      expect((error as LockAcquisitionError).outcomes.map((o) => o.status)).toEqual(['refused', 'refused', 'refused']);
      expect(ran).toBe(false);
      // The holder's key is untouched.
      expect(await inspector.heldValues('lock:order:taken')).toEqual([other.value, other.value, other.value]);
    } finally {
      await other.release();
    }
  });

  it('does not treat a concurrent, unrelated call chain as reentrant', async () => {
    // While one call holds order:busy, a separate call chain must wait for it, not piggy-back on it.
    const events: string[] = [];
    orders.hook = async (id: string) => {
      events.push(`in ${id}`);
      await sleep(150);
      events.push(`out ${id}`);
    };
    await Promise.all([orders.process('busy'), sleep(20).then(() => orders.process('busy'))]);
    expect(events).toEqual(['in busy', 'out busy', 'in busy', 'out busy']);
  });
});

describe('Observables returned by a provider', () => {
  it('declared Observable: takes the lock on subscription and releases it when unsubscribed early', async () => {
    const feed = orders.feed('f-1');
    await sleep(80);
    expect(await inspector.holders('lock:feed:f-1')).toBe(0); // nothing until subscribed

    const values: number[] = [];
    let failed: unknown;
    const subscription = feed.subscribe({ next: (v) => values.push(v), error: (e: unknown) => (failed = e) });
    try {
      expect(await waitFor(() => values.length >= 2, 2_000)).toBe(true);
      expect(await inspector.held('lock:feed:f-1')).toBe(3);
    } finally {
      subscription.unsubscribe();
    }
    expect(await waitFor(async () => (await inspector.holders('lock:feed:f-1')) === 0, 1_000)).toBe(true);
    const count = values.length;
    await sleep(100);
    expect(values.length).toBe(count);
    expect(failed).toBeUndefined();
  });

  it('declared Observable: keeps the lock while it emits and releases it when it completes', async () => {
    const ticks: number[] = [];
    const source = interval(20).pipe(
      take(3),
      concatMap(async (v) => (ticks.push(await inspector.held('lock:relay:c-1')), v)),
    );
    await expect(lastValueFrom(orders.relay('c-1', source).pipe(toArray()))).resolves.toEqual([0, 1, 2]);
    expect(ticks).toEqual([3, 3, 3]);
    expect(await inspector.released()).toBe(true);
  });

  it('declared Observable: its own error passes through unchanged and the lock is released', async () => {
    const error = new Error('stream broke');
    const source = timer(30).pipe(
      map(() => {
        throw error;
      }),
    );
    await expect(lastValueFrom(orders.relay('c-2', source))).rejects.toBe(error);
    expect(await inspector.released()).toBe(true);
  });

  it('Observable met only at run time: the lock is kept until the subscriber unsubscribes', async () => {
    // eslint-disable-next-line @typescript-eslint/await-thenable -- @Locked returns a Promise of the Observable it met at run time
    const feed = await orders.feedUndeclared('f-2');
    const values: number[] = [];
    const subscription = feed.subscribe((v) => values.push(v));
    try {
      expect(await waitFor(() => values.length >= 2, 2_000)).toBe(true);
      expect(await inspector.held('lock:feed2:f-2')).toBe(3);
    } finally {
      subscription.unsubscribe();
    }
    expect(await waitFor(async () => (await inspector.holders('lock:feed2:f-2')) === 0, 1_000)).toBe(true);
  });

  it('Observable met only at run time: released if nobody subscribes within the TTL; a later subscription locks anew', async () => {
    // eslint-disable-next-line @typescript-eslint/await-thenable -- as above
    const feed = await orders.feedUndeclared('f-3');
    expect(await inspector.held('lock:feed2:f-3')).toBe(3); // taken at the call
    // Nobody subscribes: the lock is given back after the TTL (600 ms) instead of being renewed forever.
    expect(await waitFor(async () => (await inspector.holders('lock:feed2:f-3')) === 0, 2_000)).toBe(true);

    const values: number[] = [];
    const subscription = feed.subscribe((v) => values.push(v));
    try {
      expect(await waitFor(() => values.length >= 2, 2_000)).toBe(true);
      expect(await inspector.held('lock:feed2:f-3')).toBe(3); // locked again for this subscription
    } finally {
      subscription.unsubscribe();
    }
    expect(await waitFor(async () => (await inspector.holders('lock:feed2:f-3')) === 0, 1_000)).toBe(true);
  });
});

describe('outside Nest', () => {
  it('rejects with a RedlockError saying RedlockService was not injected', async () => {
    const call = new PlainThing().run('p-1');
    await expect(call).rejects.toBeInstanceOf(RedlockError);
    await expect(call).rejects.toThrow(/RedlockService was not injected/);
    await expect(call).rejects.toThrow(/PlainThing\.run/);
  });
});

describe('metadata of the wrapped method', () => {
  it('keeps the method name', () => {
    expect(OrdersService.prototype.process.name).toBe('process');
    expect(OrdersService.prototype.tagged.name).toBe('tagged');
    expect(orders.transfer.name).toBe('transfer');
  });

  it('keeps metadata set by a decorator applied before @Locked, readable by Reflector', async () => {
    const reflector = app.get(Reflector);
    expect(reflector.get('x', orders.tagged)).toBe(1);
    expect(Reflect.getMetadata('x', OrdersService.prototype.tagged)).toBe(1);
    expect(Reflect.getOwnMetadata('x', orders.tagged)).toBe(1);
    // …and the method is still locked.
    orders.hook = async () => inspector.held('lock:tagged:t-1');
    await expect(orders.tagged('t-1')).resolves.toBe(3);
  });

  it('keeps metadata in both orders on a class declared here', () => {
    class Tagged {
      @SetMetadata('above', 'a')
      @Locked('t:#id')
      @SetMetadata('below', 'b')
      async run(id: string): Promise<string> {
        return id;
      }
    }
    const fn = Tagged.prototype.run;
    expect(fn.name).toBe('run');
    expect(Reflect.getMetadata('above', fn)).toBe('a');
    expect(Reflect.getMetadata('below', fn)).toBe('b');
    expect(Reflect.getMetadata('design:paramtypes', Tagged.prototype, 'run')).toEqual([String]);
  });
});
