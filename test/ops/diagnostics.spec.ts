import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import diagnostics from 'node:diagnostics_channel';
import { inspect } from 'node:util';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Locked,
  LockAcquisitionError,
  LockLostError,
  RedlockModule,
  type AcquireContext,
  type LockLostMessage,
  type LockOperationContext,
} from '../../lib/index.js';
import { rejectionOf, resourceName, sleep, useMasters } from '../support/index.js';

type Event<C> = { kind: string; ctx: C };

/** Subscribes to a tracing channel for one test, recording every event with a copy of the context at that moment. */
function record<C extends object>(name: string): { events: Event<C>[]; stop(): void } {
  const events: Event<C>[] = [];
  const channel = diagnostics.tracingChannel<unknown, C>(name);
  const handlers = Object.fromEntries(
    ['start', 'end', 'asyncStart', 'asyncEnd', 'error'].map((kind) => [
      kind,
      (ctx: C) => events.push({ kind, ctx: { ...ctx } }),
    ]),
  ) as unknown as Parameters<typeof channel.subscribe>[0];
  channel.subscribe(handlers);
  return { events, stop: () => channel.unsubscribe(handlers) };
}

const stops: (() => void)[] = [];
afterEach(() => {
  while (stops.length) stops.pop()!();
});

describe('diagnostics channels', () => {
  const set = useMasters(3);

  it('acquire: start then asyncEnd with resources, TTL, attempts, wait, each master outcome and the fencing token', async () => {
    const redlock = await set.redlock({ fencing: true, retryDelay: 50, retryJitter: 0 });
    const resource = resourceName('order');
    const blocker = await redlock.acquire(resource, 300); // forces the next call to wait and retry
    const rec = record<AcquireContext>('nestjs-quorum-lock:acquire');
    stops.push(rec.stop);
    const lock = await redlock.acquire(resource, 2_000, { retryCount: 50, retryDelay: 50, retryJitter: 0 });
    await lock.release();
    void blocker;
    const kinds = rec.events.map((e) => e.kind);
    expect(kinds[0]).toBe('start');
    expect(kinds).toContain('asyncEnd');
    expect(kinds).not.toContain('error');
    const start = rec.events[0].ctx;
    expect(start).toMatchObject({
      operation: 'acquire',
      resources: [resource],
      ttl: 2_000,
      keyTemplate: undefined,
      outcome: undefined,
    });
    const end = rec.events.find((e) => e.kind === 'asyncEnd')!.ctx;
    expect(end.outcome).toBe('acquired');
    expect(end.attempts).toBeGreaterThan(1);
    expect(end.waited).toBeGreaterThan(0);
    expect(end.duration).toBeGreaterThanOrEqual(end.waited);
    expect(end.fencingToken).toBe(lock.fencingToken);
    expect(end.fencingToken).toBeGreaterThan(0);
    expect(end.lock).toBe(lock);
    expect(end.result).toBe(lock);
    const answered = end.outcomes.filter(Boolean);
    expect(answered.length).toBeGreaterThanOrEqual(redlock.quorum);
    for (const o of answered) expect(redlock.masters).toContain(o!.master);
    expect(answered.filter((o) => o!.status === 'granted').length).toBeGreaterThanOrEqual(redlock.quorum);
  });

  it('acquire: error with outcome busy and every master refusing when another holder keeps the lock', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('busy');
    const holder = await redlock.acquire(resource, 5_000);
    const rec = record<AcquireContext>('nestjs-quorum-lock:acquire');
    stops.push(rec.stop);
    const error = await rejectionOf(
      redlock.acquire(resource, 1_000, { retryCount: 2, retryDelay: 10, retryJitter: 0 }),
    );
    expect(error).toBeInstanceOf(LockAcquisitionError);
    const failed = rec.events.find((e) => e.kind === 'error')!.ctx;
    expect(failed.outcome).toBe('busy');
    expect(failed.attempts).toBe(3);
    expect(failed.error).toBe(error);
    expect(failed.outcomes.map((o) => o!.status)).toEqual(['refused', 'refused', 'refused']);
    // tryAcquire on a held lock: one attempt, no wait; the lock was busy
    await expect(redlock.tryAcquire(resource, 1_000)).resolves.toBeNull();
    const tried = rec.events.filter((e) => e.kind === 'asyncEnd').at(-1)!.ctx;
    expect(tried).toMatchObject({ operation: 'tryAcquire', outcome: 'busy', result: null, attempts: 1 });
    // which masters refused, as for a busy acquire (docs/operations.md: end fields)
    expect(tried.outcomes.map((o) => o!.status)).toEqual(['refused', 'refused', 'refused']);
    // the same from another instance, which queues nothing for a single try
    const other = await set.redlock();
    await expect(other.tryAcquire(resource, 1_000)).resolves.toBeNull();
    const triedElsewhere = rec.events.filter((e) => e.kind === 'asyncEnd').at(-1)!.ctx;
    expect(triedElsewhere).toMatchObject({ operation: 'tryAcquire', outcome: 'busy', attempts: 1 });
    expect(triedElsewhere.outcomes.map((o) => o!.status)).toEqual(['refused', 'refused', 'refused']);
    // onBusy: 'skip' (as @Locked uses it): skipped, not busy
    await expect(redlock.acquire(resource, 1_000, { onBusy: 'skip' })).resolves.toBeUndefined();
    expect(rec.events.filter((e) => e.kind === 'error').at(-1)!.ctx).toMatchObject({
      operation: 'acquire',
      outcome: 'skipped',
    });
    await holder.release();
  });

  it('acquire: outcome timeout when acquireTimeout ends the wait', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('slow');
    const holder = await redlock.acquire(resource, 5_000);
    const rec = record<AcquireContext>('nestjs-quorum-lock:acquire');
    stops.push(rec.stop);
    await rejectionOf(
      redlock.acquire(resource, 1_000, { retryCount: Infinity, retryDelay: 20, retryJitter: 0, acquireTimeout: 150 }),
    );
    expect(rec.events.find((e) => e.kind === 'error')!.ctx.outcome).toBe('timeout');
    await holder.release();
  });

  it('extend and release: the lock, its TTL and each master outcome; release reports how long it took', async () => {
    const redlock = await set.redlock({ fencing: true });
    const extend = record<LockOperationContext>('nestjs-quorum-lock:extend');
    const release = record<LockOperationContext>('nestjs-quorum-lock:release');
    stops.push(extend.stop, release.stop);
    const resource = resourceName('ext');
    const lock = await redlock.acquire(resource, 1_000);
    await lock.extend(3_000);
    await lock.release();
    const ext = extend.events.find((e) => e.kind === 'asyncEnd')!.ctx;
    expect(ext).toMatchObject({
      operation: 'extend',
      resources: [resource],
      ttl: 3_000,
      lock,
      fencingToken: lock.fencingToken,
    });
    expect(ext.outcomes.filter((o) => o?.status === 'granted').length).toBeGreaterThanOrEqual(redlock.quorum);
    const rel = release.events.find((e) => e.kind === 'asyncEnd')!.ctx;
    expect(rel).toMatchObject({ operation: 'release', resources: [resource], lock });
    expect(rel.outcomes.filter((o) => o?.status === 'granted').length).toBeGreaterThanOrEqual(redlock.quorum);
    expect(rel.duration).toBeGreaterThanOrEqual(0);
  });

  it('lost: a message with the resources and the LockLostError when a majority no longer holds the lock', async () => {
    const redlock = await set.redlock();
    const messages: LockLostMessage[] = [];
    const onLost = (m: unknown): void => void messages.push(m as LockLostMessage);
    diagnostics.subscribe('nestjs-quorum-lock:lost', onLost);
    stops.push(() => diagnostics.unsubscribe('nestjs-quorum-lock:lost', onLost));
    const resource = resourceName('lost');
    const lock = await redlock.acquire(resource, 2_000);
    await Promise.all(set.clients.map((c) => c.del(`lock:${resource}`)));
    const error = await rejectionOf(lock.extend());
    expect(error).toBeInstanceOf(LockLostError);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ resources: [resource], ttl: 2_000, lock, reason: error });
  });

  it("never shows a lock's value: JSON.stringify and util.inspect of the Lock and of every channel's context", async () => {
    const redlock = await set.redlock({ fencing: true });
    const contexts: unknown[] = [];
    const onLost = (m: unknown): void => void contexts.push(m);
    diagnostics.subscribe('nestjs-quorum-lock:lost', onLost);
    stops.push(() => diagnostics.unsubscribe('nestjs-quorum-lock:lost', onLost));
    for (const name of ['acquire', 'extend', 'release']) {
      const channel = diagnostics.tracingChannel<unknown, object>(`nestjs-quorum-lock:${name}`);
      const handlers = { asyncEnd: (ctx: object) => void contexts.push(ctx) } as unknown as Parameters<
        typeof channel.subscribe
      >[0];
      channel.subscribe(handlers);
      stops.push(() => channel.unsubscribe(handlers));
    }
    const resource = resourceName('secret');
    const lock = await redlock.acquire(resource, 2_000);
    await lock.extend(3_000);
    const released = await redlock.acquire(resourceName('secret'), 2_000);
    await released.release();
    await Promise.all(set.clients.map((c) => c.del(`lock:${resource}`)));
    await rejectionOf(lock.extend()); // lost: a majority no longer holds it

    const json = JSON.parse(JSON.stringify(lock)) as Record<string, unknown>;
    expect(json).toEqual({
      resources: [resource],
      state: 'lost',
      validity: 0,
      ttl: 3_000,
      fencingToken: lock.fencingToken,
      lostReason: 'majority-lost',
    });
    expect(JSON.parse(JSON.stringify(released))).toMatchObject({ state: 'released', validity: 0 });
    expect(inspect(lock)).toMatch(/^Lock \{/);
    expect(contexts.length).toBeGreaterThanOrEqual(5); // acquire ×2, extend ×2, release, lost
    for (const text of [
      JSON.stringify(lock),
      inspect(lock, { depth: 5 }),
      JSON.stringify(released),
      inspect(released),
      ...contexts.map((c) => JSON.stringify(c)),
      ...contexts.map((c) => inspect(c, { depth: 5 })),
    ]) {
      expect(text).not.toContain(lock.value);
      expect(text).not.toContain(released.value);
    }
    expect(contexts.map((c) => JSON.stringify(c)).join('\n')).toContain(resource);
  });

  it('@Locked passes its key template (not the resource value) into every channel', async () => {
    @Injectable()
    class Orders {
      @Locked('order:#id', 1_000)
      async pay(id: number): Promise<number> {
        await sleep(5);
        return id;
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: set.urls, restartGuard: false })],
      providers: [Orders],
    }).compile();
    await moduleRef.init();
    const acquire = record<AcquireContext>('nestjs-quorum-lock:acquire');
    const release = record<LockOperationContext>('nestjs-quorum-lock:release');
    stops.push(acquire.stop, release.stop);
    try {
      await expect(moduleRef.get(Orders).pay(42)).resolves.toBe(42);
    } finally {
      await moduleRef.close();
    }
    const end = acquire.events.find((e) => e.kind === 'asyncEnd')!.ctx;
    expect(end).toMatchObject({
      operation: 'using',
      keyTemplate: 'order:#id',
      resources: ['order:42'],
      outcome: 'acquired',
    });
    expect(release.events.find((e) => e.kind === 'asyncEnd')!.ctx.keyTemplate).toBe('order:#id');
  });
});
