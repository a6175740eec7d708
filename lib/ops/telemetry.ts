import diagnostics from 'node:diagnostics_channel';
import type * as OTel from '@opentelemetry/api';
import type { Lock } from '../lock/lock.js';
import {
  acquireChannel,
  extendChannel,
  keyTemplateOfLock,
  lostChannel,
  releaseChannel,
  type AcquireContext,
  type LockLostMessage,
  type LockOperationContext,
} from './diagnostics.js';

/** The instrumentation scope: the package's name. */
export const INSTRUMENTATION_SCOPE = 'nestjs-quorum-lock';

/** Metric, span and attribute names (docs/operations.md lists them with their units). */
export const TELEMETRY_NAMES = Object.freeze({
  acquireDuration: 'nestjs_quorum_lock.acquire.duration',
  waitDuration: 'nestjs_quorum_lock.wait.duration',
  holdDuration: 'nestjs_quorum_lock.hold.duration',
  acquisitions: 'nestjs_quorum_lock.acquisitions',
  lostLocks: 'nestjs_quorum_lock.lost_locks',
  distrustedMasters: 'nestjs_quorum_lock.distrusted_masters',
  keyTemplate: 'nestjs_quorum_lock.key_template',
  outcome: 'nestjs_quorum_lock.outcome',
  operation: 'nestjs_quorum_lock.operation',
  resourceCount: 'nestjs_quorum_lock.resource_count',
  ttl: 'nestjs_quorum_lock.ttl',
  attempts: 'nestjs_quorum_lock.attempts',
  waited: 'nestjs_quorum_lock.wait_ms',
  fencingToken: 'nestjs_quorum_lock.fencing_token',
  grantedMasters: 'nestjs_quorum_lock.granted_masters',
  lostReason: 'nestjs_quorum_lock.lost_reason',
  distrustReason: 'nestjs_quorum_lock.distrust_reason',
});

/** What the telemetry needs from a `Redlock`: its masters' trust, for the distrusted-masters gauge. */
export interface TelemetrySource {
  readonly masters: readonly string[];
  readonly distrustedFor: readonly number[];
  masterStates?(): readonly { readonly trusted: boolean; readonly distrust?: string }[];
}

type Api = typeof OTel;

let loaded: Promise<Api | null> | undefined;

/** `@opentelemetry/api` when the application has it installed, else null (imported once). */
function loadApi(): Promise<Api | null> {
  const name = '@opentelemetry/api';
  loaded ??= (import(name) as Promise<Api & { default?: Api }>).then(
    (api) => (typeof api.trace?.getTracer === 'function' ? api : (api.default ?? null)),
    () => null,
  );
  return loaded;
}

/** True when the application registered an SDK: without one, the API is a no-op and we stay off the channels. */
function sdkRegistered(api: Api): boolean {
  const provider = api.trace.getTracerProvider() as { getDelegate?: () => object };
  const tracer = provider.getDelegate?.() ?? provider;
  return (
    tracer.constructor.name !== 'NoopTracerProvider' ||
    api.metrics.getMeterProvider().constructor.name !== 'NoopMeterProvider'
  );
}

interface Hold {
  readonly span: OTel.Span;
  readonly start: number;
  readonly template: string | undefined;
}

/** The bridge from the diagnostics channels to OpenTelemetry: one per process, shared by every `Redlock`. */
class Bridge {
  readonly #api: Api;
  readonly #tracer: OTel.Tracer;
  readonly #acquireDuration: OTel.Histogram;
  readonly #waitDuration: OTel.Histogram;
  readonly #holdDuration: OTel.Histogram;
  readonly #acquisitions: OTel.Counter;
  readonly #lost: OTel.Counter;
  readonly #distrusted: OTel.ObservableGauge;
  readonly #sources = new Set<TelemetrySource>();
  readonly #spans = new WeakMap<object, { span: OTel.Span; parent: OTel.Context }>();
  readonly #holds = new WeakMap<Lock, Hold>();
  readonly #unsubscribe: () => void;

  constructor(api: Api) {
    this.#api = api;
    const N = TELEMETRY_NAMES;
    this.#tracer = api.trace.getTracer(INSTRUMENTATION_SCOPE);
    const meter = api.metrics.getMeter(INSTRUMENTATION_SCOPE);
    const seconds = {
      unit: 's',
      advice: { explicitBucketBoundaries: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] },
    };
    this.#acquireDuration = meter.createHistogram(N.acquireDuration, {
      ...seconds,
      description: 'Duration of lock acquisitions, waiting and retries included.',
    });
    this.#waitDuration = meter.createHistogram(N.waitDuration, {
      ...seconds,
      description: 'Time an acquisition spent waiting before its last attempt.',
    });
    this.#holdDuration = meter.createHistogram(N.holdDuration, {
      ...seconds,
      description: 'How long locks were held, from acquisition to release or loss.',
    });
    this.#acquisitions = meter.createCounter(N.acquisitions, {
      unit: '{acquisition}',
      description: 'Lock acquisitions by outcome.',
    });
    this.#lost = meter.createCounter(N.lostLocks, {
      unit: '{lock}',
      description: 'Locks lost before they were released.',
    });
    this.#distrusted = meter.createObservableGauge(N.distrustedMasters, {
      unit: '{master}',
      description: 'Masters whose votes do not count now.',
    });
    const observeDistrusted = (result: OTel.ObservableResult): void => {
      for (const source of this.#sources) {
        const states = source.masterStates?.();
        if (states) {
          const byReason = new Map<string, number>();
          for (const s of states)
            if (!s.trusted) byReason.set(s.distrust ?? 'unknown', (byReason.get(s.distrust ?? 'unknown') ?? 0) + 1);
          if (byReason.size === 0) result.observe(0);
          for (const [reason, count] of byReason) result.observe(count, { [N.distrustReason]: reason });
        } else {
          result.observe(source.distrustedFor.filter((ms) => ms > 0).length);
        }
      }
    };
    this.#distrusted.addCallback(observeDistrusted);

    const acquire = {
      start: (c: AcquireContext) => this.acquireStart(c),
      asyncEnd: (c: AcquireContext) => this.acquireEnd(c),
    };
    const extend = {
      start: (c: LockOperationContext) => this.opStart(c),
      asyncEnd: (c: LockOperationContext) => this.opEnd(c),
    };
    const release = {
      start: (c: LockOperationContext) => this.opStart(c),
      asyncEnd: (c: LockOperationContext) => this.opEnd(c),
    };
    const lost = (m: unknown): void => this.lost(m as LockLostMessage);
    acquireChannel.subscribe(acquire as never);
    extendChannel.subscribe(extend as never);
    releaseChannel.subscribe(release as never);
    diagnostics.subscribe(lostChannel.name, lost);
    this.#unsubscribe = () => {
      acquireChannel.unsubscribe(acquire as never);
      extendChannel.unsubscribe(extend as never);
      releaseChannel.unsubscribe(release as never);
      diagnostics.unsubscribe(lostChannel.name, lost);
      this.#distrusted.removeCallback(observeDistrusted);
    };
  }

  add(source: TelemetrySource): void {
    this.#sources.add(source);
  }

  /** Removes a source; true when none is left. */
  remove(source: TelemetrySource): boolean {
    this.#sources.delete(source);
    return this.#sources.size === 0;
  }

  dispose(): void {
    this.#unsubscribe();
  }

  private templateAttrs(template: string | undefined): OTel.Attributes {
    return template === undefined ? {} : { [TELEMETRY_NAMES.keyTemplate]: template };
  }

  private acquireStart(ctx: AcquireContext): void {
    const parent = this.#api.context.active();
    const N = TELEMETRY_NAMES;
    const span = this.#tracer.startSpan(
      ctx.keyTemplate === undefined ? 'lock acquire' : `lock acquire ${ctx.keyTemplate}`,
      {
        kind: this.#api.SpanKind.INTERNAL,
        attributes: {
          ...this.templateAttrs(ctx.keyTemplate),
          [N.operation]: ctx.operation,
          [N.resourceCount]: ctx.resources.length,
          [N.ttl]: ctx.ttl,
        },
      },
      parent,
    );
    this.#spans.set(ctx, { span, parent });
  }

  private acquireEnd(ctx: AcquireContext): void {
    const N = TELEMETRY_NAMES;
    const outcome = ctx.outcome ?? 'error';
    const attrs = { ...this.templateAttrs(ctx.keyTemplate), [N.outcome]: outcome };
    this.#acquireDuration.record(ctx.duration / 1_000, attrs);
    this.#waitDuration.record(ctx.waited / 1_000, this.templateAttrs(ctx.keyTemplate));
    this.#acquisitions.add(1, attrs);
    const started = this.#spans.get(ctx);
    if (!started) return;
    this.#spans.delete(ctx);
    const { span, parent } = started;
    span.setAttributes({
      [N.outcome]: outcome,
      [N.attempts]: ctx.attempts,
      [N.waited]: Math.round(ctx.waited),
      [N.grantedMasters]: ctx.outcomes.filter((o) => o?.status === 'granted').length,
      ...(ctx.fencingToken === undefined ? {} : { [N.fencingToken]: ctx.fencingToken }),
    });
    if (ctx.attempts > 1) span.addEvent('waited', { [N.waited]: Math.round(ctx.waited), [N.attempts]: ctx.attempts });
    if (outcome === 'error' || outcome === 'timeout') this.fail(span, ctx.error);
    span.end();
    if (ctx.lock) {
      const hold = this.#tracer.startSpan(
        ctx.keyTemplate === undefined ? 'lock hold' : `lock hold ${ctx.keyTemplate}`,
        {
          kind: this.#api.SpanKind.INTERNAL,
          attributes: {
            ...this.templateAttrs(ctx.keyTemplate),
            [N.ttl]: ctx.ttl,
            [N.resourceCount]: ctx.resources.length,
          },
          links: [{ context: span.spanContext() }],
        },
        parent,
      );
      this.#holds.set(ctx.lock, { span: hold, start: performance.now(), template: ctx.keyTemplate });
    }
  }

  private opStart(ctx: LockOperationContext): void {
    const hold = this.#holds.get(ctx.lock);
    const span = this.#tracer.startSpan(
      ctx.keyTemplate === undefined ? `lock ${ctx.operation}` : `lock ${ctx.operation} ${ctx.keyTemplate}`,
      {
        kind: this.#api.SpanKind.INTERNAL,
        attributes: { ...this.templateAttrs(ctx.keyTemplate), [TELEMETRY_NAMES.ttl]: ctx.ttl },
        ...(hold ? { links: [{ context: hold.span.spanContext() }] } : {}),
      },
      this.#api.context.active(),
    );
    this.#spans.set(ctx, { span, parent: this.#api.context.active() });
  }

  private opEnd(ctx: LockOperationContext): void {
    const started = this.#spans.get(ctx);
    if (started) {
      this.#spans.delete(ctx);
      started.span.setAttribute(
        TELEMETRY_NAMES.grantedMasters,
        ctx.outcomes.filter((o) => o?.status === 'granted').length,
      );
      if (ctx.error !== undefined) this.fail(started.span, ctx.error);
      started.span.end();
    }
    if (ctx.operation === 'release') this.endHold(ctx.lock, undefined);
  }

  private lost(message: LockLostMessage): void {
    const reason = (message.reason as { reason?: unknown }).reason;
    const why = typeof reason === 'string' ? reason : 'lost';
    this.#lost.add(1, {
      ...this.templateAttrs(message.keyTemplate ?? keyTemplateOfLock(message.lock)),
      [TELEMETRY_NAMES.lostReason]: why,
    });
    this.endHold(message.lock, message.reason);
  }

  private endHold(lock: Lock, lostBecause: Error | undefined): void {
    const hold = this.#holds.get(lock);
    if (!hold) return;
    this.#holds.delete(lock);
    this.#holdDuration.record((performance.now() - hold.start) / 1_000, this.templateAttrs(hold.template));
    if (lostBecause) this.fail(hold.span, lostBecause);
    hold.span.end();
  }

  private fail(span: OTel.Span, error: unknown): void {
    const e = error instanceof Error ? error : new Error(String(error));
    span.recordException(e);
    span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message: e.message });
    span.setAttribute('error.type', e.name);
  }
}

let bridge: Bridge | undefined;

/**
 * Connects `source` to OpenTelemetry when `@opentelemetry/api` is installed and an SDK is registered
 * (start the SDK before the application connects, as OpenTelemetry recommends). Returns the function
 * that disconnects it; the channels are left when the last source goes.
 */
export async function startTelemetry(source: TelemetrySource): Promise<() => void> {
  const api = await loadApi();
  if (!api || (!bridge && !sdkRegistered(api))) return () => undefined;
  bridge ??= new Bridge(api);
  const current = bridge;
  current.add(source);
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    if (current.remove(source) && bridge === current) {
      current.dispose();
      bridge = undefined;
    }
  };
}
