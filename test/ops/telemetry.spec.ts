import 'reflect-metadata';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { context, metrics, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Locked, LockAcquisitionError, RedlockModule, RedlockService } from '../../lib/index.js';
import { rejectionOf, resourceName, sleep, useMasters } from '../support/index.js';

const spans = new InMemorySpanExporter();
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const meterProvider = new MeterProvider({ readers: [reader] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
});
afterAll(async () => {
  await meterProvider.shutdown();
  await tracerProvider.shutdown();
  trace.disable();
  metrics.disable();
  context.disable();
});

/** The data points of one metric, after a collection. */
async function points(name: string): Promise<DataPoint<unknown>[]> {
  metricExporter.reset();
  await reader.forceFlush();
  const all = metricExporter.getMetrics().flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
  return all.filter((m) => m.descriptor.name === name).flatMap((m) => m.dataPoints as DataPoint<unknown>[]);
}

const sum = (ps: DataPoint<unknown>[], attrs: Record<string, unknown>): number =>
  ps
    .filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v))
    .reduce((n, p) => n + (typeof p.value === 'number' ? p.value : (p.value as Histogram).count), 0);

@Injectable()
class Orders {
  @Locked('order:#id', { ttl: 1_000, retryCount: 2, retryDelay: 20, retryJitter: 0 })
  async pay(id: number): Promise<number> {
    await sleep(30);
    return id;
  }
}

describe('OpenTelemetry (real SDK, in-memory exporters)', () => {
  const set = useMasters(3);
  let service: RedlockService;
  let orders: Orders;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: set.urls, restartGuard: false, fencing: true })],
      providers: [Orders],
    }).compile();
    await moduleRef.init();
    service = moduleRef.get(RedlockService);
    orders = moduleRef.get(Orders);
    close = () => moduleRef.close();
  });
  afterAll(() => close());
  beforeEach(() => spans.reset());

  it('spans for acquire, hold and release, children of the caller’s active span, named and labelled by key template only', async () => {
    const tracer = trace.getTracer('test');
    await tracer.startActiveSpan('http request', async (parent: Span) => {
      await orders.pay(42);
      parent.end();
    });
    const finished = spans.getFinishedSpans();
    const byName = (n: string) => finished.find((s) => s.name === n)!;
    const parent = byName('http request');
    const acquire = byName('lock acquire order:#id');
    const hold = byName('lock hold order:#id');
    const release = byName('lock release order:#id');
    for (const s of [acquire, hold, release]) {
      expect(s.spanContext().traceId).toBe(parent.spanContext().traceId);
      expect(s.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(s.attributes['nestjs_quorum_lock.key_template']).toBe('order:#id');
      expect(JSON.stringify(s.attributes)).not.toContain('order:42');
    }
    expect(acquire.attributes).toMatchObject({
      'nestjs_quorum_lock.outcome': 'acquired',
      'nestjs_quorum_lock.attempts': 1,
      'nestjs_quorum_lock.ttl': 1_000,
    });
    expect(acquire.attributes['nestjs_quorum_lock.fencing_token']).toBeGreaterThan(0);
    expect(hold.links[0].context.spanId).toBe(acquire.spanContext().spanId);
    expect(release.links[0].context.spanId).toBe(hold.spanContext().spanId);
    // the hold covers the method's 30 ms
    const ms = (s: typeof hold) => s.duration[0] * 1_000 + s.duration[1] / 1e6;
    expect(ms(hold)).toBeGreaterThanOrEqual(25);
  });

  it('an acquisition that waited records its attempts and wait on the span, and its outcome (busy)', async () => {
    const holder = await service.acquire('order:7', 5_000);
    const error = await rejectionOf(orders.pay(7));
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await holder.release();
    const acquire = spans.getFinishedSpans().find((s) => s.name === 'lock acquire order:#id')!;
    expect(acquire.attributes['nestjs_quorum_lock.outcome']).toBe('busy');
    expect(acquire.attributes['nestjs_quorum_lock.attempts']).toBe(3);
    expect(acquire.attributes['nestjs_quorum_lock.wait_ms']).toBeGreaterThanOrEqual(30);
    expect(acquire.events.map((e) => e.name)).toContain('waited');
  });

  it("a busy tryAcquire's outcome is busy, as for acquire; skipped is only for onBusy: 'skip'", async () => {
    const resource = resourceName('busy-try');
    const busyBefore = sum(await points('nestjs_quorum_lock.acquisitions'), { 'nestjs_quorum_lock.outcome': 'busy' });
    const holder = await service.acquire(resource, 5_000);
    try {
      expect(await service.tryAcquire(resource, 1_000)).toBeNull();
      expect(await service.acquire(resource, 1_000, { onBusy: 'skip' })).toBeUndefined();
      expect(await service.using(resource, 1_000, async () => 'ran', { onBusy: 'skip' })).toBeUndefined();
    } finally {
      await holder.release();
    }
    const outcomes = spans
      .getFinishedSpans()
      .filter((s) => s.name === 'lock acquire')
      .map(
        (s) =>
          `${String(s.attributes['nestjs_quorum_lock.operation'])} ${String(s.attributes['nestjs_quorum_lock.outcome'])}`,
      );
    expect(outcomes).toEqual(['acquire acquired', 'tryAcquire busy', 'acquire skipped', 'using skipped']);
    const busyAfter = sum(await points('nestjs_quorum_lock.acquisitions'), { 'nestjs_quorum_lock.outcome': 'busy' });
    expect(busyAfter).toBe(busyBefore + 1);
  });

  it('metrics: acquire duration, wait time, hold duration and results by outcome, by key template', async () => {
    const before = await points('nestjs_quorum_lock.acquisitions');
    const acquiredBefore = sum(before, {
      'nestjs_quorum_lock.key_template': 'order:#id',
      'nestjs_quorum_lock.outcome': 'acquired',
    });
    const busyBefore = sum(before, {
      'nestjs_quorum_lock.key_template': 'order:#id',
      'nestjs_quorum_lock.outcome': 'busy',
    });
    await orders.pay(1);
    const holder = await service.acquire('order:2', 5_000);
    await rejectionOf(orders.pay(2));
    expect(await service.tryAcquire('order:2', 1_000)).toBeNull(); // no template: a direct call
    await holder.release();
    const results = await points('nestjs_quorum_lock.acquisitions');
    expect(
      sum(results, { 'nestjs_quorum_lock.key_template': 'order:#id', 'nestjs_quorum_lock.outcome': 'acquired' }),
    ).toBe(acquiredBefore + 1);
    expect(sum(results, { 'nestjs_quorum_lock.key_template': 'order:#id', 'nestjs_quorum_lock.outcome': 'busy' })).toBe(
      busyBefore + 1,
    );
    expect(sum(results, { 'nestjs_quorum_lock.outcome': 'busy' })).toBeGreaterThanOrEqual(2); // with the tryAcquire
    for (const p of results) expect(JSON.stringify(p.attributes)).not.toMatch(/order:\d/);
    for (const name of [
      'nestjs_quorum_lock.acquire.duration',
      'nestjs_quorum_lock.wait.duration',
      'nestjs_quorum_lock.hold.duration',
    ]) {
      const ps = await points(name);
      expect(sum(ps, { 'nestjs_quorum_lock.key_template': 'order:#id' })).toBeGreaterThan(0);
    }
    const holds = await points('nestjs_quorum_lock.hold.duration');
    const h = holds.find((p) => p.attributes['nestjs_quorum_lock.key_template'] === 'order:#id')!.value as Histogram;
    expect(h.max).toBeGreaterThanOrEqual(0.025); // seconds
  });

  it('metrics: a lost lock counts with its reason and ends its hold span with an error', async () => {
    const lostBefore = sum(await points('nestjs_quorum_lock.lost_locks'), {});
    const resource = resourceName('lose');
    const lock = await service.acquire(resource, 2_000);
    await Promise.all(set.clients.map((c) => c.del(`lock:${resource}`)));
    await rejectionOf(lock.extend());
    const lost = await points('nestjs_quorum_lock.lost_locks');
    expect(sum(lost, {})).toBe(lostBefore + 1);
    expect(sum(lost, { 'nestjs_quorum_lock.lost_reason': 'majority-lost' })).toBeGreaterThanOrEqual(1);
    const hold = spans.getFinishedSpans().find((s) => s.name === 'lock hold')!;
    expect(hold.status.code).toBe(2); // ERROR
  });

  it('metrics: distrusted masters, by reason', async () => {
    const gauge = await points('nestjs_quorum_lock.distrusted_masters');
    expect(gauge.length).toBeGreaterThan(0);
    expect(sum(gauge, {})).toBe(0);
    set.masters[2].pause();
    try {
      // a master that stops answering is distrusted once its connection drops; restart it to get a fresh one
      await set.masters[2].kill();
      await set.masters[2].restart();
      const redlock = await set.redlock({ restartGuard: true, ttl: 60_000 });
      const deadline = Date.now() + 5_000;
      let distrusted = 0;
      while (Date.now() < deadline && distrusted === 0) {
        distrusted = sum(await points('nestjs_quorum_lock.distrusted_masters'), {});
        if (distrusted === 0) await sleep(50);
      }
      expect(distrusted).toBeGreaterThanOrEqual(1);
      await redlock.close();
    } finally {
      set.masters[2].resume();
    }
  });
});
