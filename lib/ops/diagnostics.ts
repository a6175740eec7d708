import { AsyncLocalStorage } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';
import type { MasterOutcome } from '../errors/outcomes.js';
import type { Lock } from '../lock/lock.js';
import type { LockLostError } from '../errors/lock-lost.error.js';

/**
 * How an acquisition ended, as the `outcome` of the acquire channel's context and the
 * `nestjs_quorum_lock.outcome` metric attribute:
 * - `acquired`: the lock was won;
 * - `busy`: another holder kept it for the whole retry budget (for `tryAcquire`, its one attempt);
 * - `skipped`: a call with `onBusy: 'skip'` found it held and gave up without an error;
 * - `timeout`: `acquireTimeout` ran out or the caller's `signal` aborted;
 * - `error`: Redis trouble (errors, timeouts, restarted masters) or any other failure.
 *
 * @example
 * if (ctx.outcome === 'busy') busyCount++;
 * @publicApi
 */
export type AcquireOutcome = 'acquired' | 'busy' | 'skipped' | 'error' | 'timeout';

/**
 * The context object of the `nestjs-quorum-lock:acquire` tracing channel. The same object is passed
 * to `start`, `end`, `asyncStart`, `asyncEnd` and `error`; fields marked "at the end" are filled in
 * by then. Node adds `result` (the `Lock`, or `null` from `tryAcquire`) or `error`.
 *
 * @example
 * diagnostics.tracingChannel('nestjs-quorum-lock:acquire').subscribe({
 *   asyncEnd: (ctx) => console.log(ctx.keyTemplate, ctx.outcome, ctx.attempts, ctx.waited),
 * });
 * @publicApi
 */
export interface AcquireContext {
  /** Which method: `acquire`, `tryAcquire` or `using` (`@Locked` calls `using`). */
  readonly operation: 'acquire' | 'tryAcquire' | 'using';
  /** The resources asked for (without the key prefix). High cardinality: not for metric labels. */
  readonly resources: readonly string[];
  /** The `@Locked` key template (`'order:#id'`) when the call came from the decorator; low cardinality. */
  readonly keyTemplate: string | undefined;
  /** The TTL asked for, ms. */
  readonly ttl: number;
  /** Monotonic `performance.now()` when the call began. */
  readonly startedAt: number;
  /** At the end: tries made (a turn spent queued behind an earlier waiter of this process counts as one). */
  attempts: number;
  /** At the end: ms from the call to the start of its last attempt (the time spent waiting). */
  waited: number;
  /** At the end: ms the whole acquisition took. */
  duration: number;
  /**
   * At the end: each master's answer to the last attempt, in `nodes` order; `undefined` for a master
   * that had not answered yet when the quorum was decided (the library does not wait for a slow master).
   */
  outcomes: readonly (MasterOutcome | undefined)[];
  /** At the end: how it ended. */
  outcome: AcquireOutcome | undefined;
  /** At the end: the lock won, if any. */
  lock: Lock | undefined;
  /** At the end: the lock's fencing token, when fencing is on. */
  fencingToken: number | undefined;
  /** Set by Node's tracing channel on success (the `Lock`, `null` from `tryAcquire`). */
  result?: unknown;
  /** Set by Node's tracing channel on failure. */
  error?: unknown;
}

/**
 * The context object of the `nestjs-quorum-lock:extend` and `nestjs-quorum-lock:release` tracing
 * channels. Node adds `error` when an extension fails (a release never fails).
 *
 * @example
 * diagnostics.tracingChannel('nestjs-quorum-lock:release').subscribe({ asyncEnd: (ctx) => log(ctx.heldFor) });
 * @publicApi
 */
export interface LockOperationContext {
  readonly operation: 'extend' | 'release';
  /** The lock's resources (without the key prefix). */
  readonly resources: readonly string[];
  /** The `@Locked` key template the lock was taken with, if any. */
  readonly keyTemplate: string | undefined;
  /** The TTL asked for (extend) or the lock's TTL (release), ms. */
  readonly ttl: number;
  /** The lock's fencing token, when fencing is on. */
  readonly fencingToken: number | undefined;
  /** The lock. */
  readonly lock: Lock;
  /** Monotonic `performance.now()` when the call began. */
  readonly startedAt: number;
  /** At the end: ms the call took. */
  duration: number;
  /** At the end: each master's answer, in `nodes` order (`undefined`: not answered when decided; empty when nothing was sent). */
  outcomes: readonly (MasterOutcome | undefined)[];
  error?: unknown;
}

/**
 * The message of the `nestjs-quorum-lock:lost` channel: a lock whose mutual exclusion is no longer
 * guaranteed (renewal failed, a majority no longer holds it, its validity ran out, or the
 * application shut down while it was held).
 *
 * @example
 * diagnostics.subscribe('nestjs-quorum-lock:lost', (m) => alert((m as LockLostMessage).reason.message));
 * @publicApi
 */
export interface LockLostMessage {
  readonly resources: readonly string[];
  readonly keyTemplate: string | undefined;
  readonly ttl: number;
  readonly fencingToken: number | undefined;
  readonly lock: Lock;
  /** The `LockLostError` the lock's signal aborted with; its message says why. */
  readonly reason: LockLostError;
}

/** `TracingChannel` for acquisitions; see {@link AcquireContext}. */
export const acquireChannel = diagnostics.tracingChannel<unknown, AcquireContext>('nestjs-quorum-lock:acquire');
/** `TracingChannel` for extensions; see {@link LockOperationContext}. */
export const extendChannel = diagnostics.tracingChannel<unknown, LockOperationContext>('nestjs-quorum-lock:extend');
/** `TracingChannel` for releases; see {@link LockOperationContext}. */
export const releaseChannel = diagnostics.tracingChannel<unknown, LockOperationContext>('nestjs-quorum-lock:release');
/** Channel for lost locks; see {@link LockLostMessage}. */
export const lostChannel = diagnostics.channel('nestjs-quorum-lock:lost');

/**
 * An internal per-call option through which `@Locked` hands its key template to `using()`. A symbol,
 * so option validation and user code never see it.
 */
export const KEY_TEMPLATE: unique symbol = Symbol.for('nestjs-quorum-lock.keyTemplate') as never;

/** The low-cardinality name of a `@Locked` key: the template, templates joined by `,`, or `Class.method()` for a key function. */
export function keyTemplateOf(key: unknown, where: string): string {
  if (typeof key === 'string') return key;
  if (Array.isArray(key)) return key.join(',');
  return `${where}()`;
}

/** The key template a lock was taken with; kept only while someone listens. */
const templates = new WeakMap<Lock, string>();

/** The context of the traced operation the current async call chain is in, for the few notes made deep inside. */
const current = new AsyncLocalStorage<AcquireContext | LockOperationContext>();

function templateFrom(options: unknown): string | undefined {
  return options !== null && typeof options === 'object'
    ? ((options as Record<symbol, unknown>)[KEY_TEMPLATE] as string | undefined)
    : undefined;
}

/**
 * True when somebody listens to any of the channels (an acquisition records the key template that
 * the later extend, release and lost messages carry). Check it before building anything.
 */
export const tracing = (): boolean =>
  acquireChannel.hasSubscribers ||
  lostChannel.hasSubscribers ||
  releaseChannel.hasSubscribers ||
  extendChannel.hasSubscribers;

function outcomeOf(error: unknown, skip: boolean): AcquireOutcome {
  const e = error as { name?: string; busy?: boolean; message?: string } | null;
  // acquireTimeout ran out (the error says so), or the caller's signal ended the wait
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError' || /`acquireTimeout`/.test(e?.message ?? ''))
    return 'timeout';
  if (e?.busy === true) return skip ? 'skipped' : 'busy';
  return 'error';
}

/**
 * Runs an acquisition under the acquire tracing channel. Call only when {@link tracing} is true:
 * with nobody listening, nothing here runs.
 */
export function traceAcquire<T extends Lock | null>(
  operation: AcquireContext['operation'],
  resources: readonly string[],
  ttl: number,
  options: unknown,
  run: () => Promise<T>,
): Promise<T> {
  const ctx: AcquireContext = {
    operation,
    resources,
    keyTemplate: templateFrom(options),
    ttl,
    startedAt: performance.now(),
    attempts: 0,
    waited: 0,
    duration: 0,
    outcomes: [],
    outcome: undefined,
    lock: undefined,
    fencingToken: undefined,
  };
  const settle = (lock: Lock | null, error?: unknown): void => {
    ctx.duration = performance.now() - ctx.startedAt;
    if (lock) {
      ctx.lock = lock;
      ctx.fencingToken = lock.fencingToken;
      ctx.outcome = 'acquired';
      if (ctx.keyTemplate !== undefined) templates.set(lock, ctx.keyTemplate);
    } else if (error === undefined)
      ctx.outcome = 'busy'; // tryAcquire's null: held by another
    else {
      ctx.outcome = outcomeOf(error, (options as { onBusy?: unknown } | undefined)?.onBusy === 'skip');
      const e = error as { attempts?: number; outcomes?: readonly MasterOutcome[] };
      if (typeof e?.attempts === 'number') ctx.attempts = e.attempts;
      if (Array.isArray(e?.outcomes)) ctx.outcomes = e.outcomes;
    }
  };
  const traced = current.run(ctx, () =>
    run().then(
      (lock) => (settle(lock), lock),
      (error: unknown) => {
        settle(null, error);
        throw error;
      },
    ),
  );
  return acquireChannel.tracePromise(() => traced, ctx);
}

/**
 * Notes one attempt of the acquisition in progress (its number, when it began and the masters'
 * answers). A no-op unless the acquire channel has subscribers.
 */
export function noteAttempt(
  attempt: number,
  startedAt: number,
  outcomes: readonly (MasterOutcome | undefined)[],
): void {
  if (!tracing()) return;
  const ctx = current.getStore();
  if (!ctx || !('attempts' in ctx) || ctx.outcome !== undefined) return;
  ctx.attempts = attempt;
  ctx.waited = Math.max(0, startedAt - ctx.startedAt);
  ctx.outcomes = outcomes; // filled in as answers arrive
}

/** Notes the masters' answers of the extension or release in progress. No-op unless traced. */
export function noteOutcomes(outcomes: readonly (MasterOutcome | undefined)[]): void {
  if (!tracing()) return;
  const ctx = current.getStore();
  if (!ctx || (ctx.operation !== 'extend' && ctx.operation !== 'release')) return;
  ctx.outcomes = outcomes; // filled in as answers arrive
}

/** Runs an extension or release under its tracing channel when somebody listens, else just runs it. */
export function traceLockOperation(
  operation: 'extend' | 'release',
  lock: Lock,
  ttl: number,
  run: () => Promise<void>,
): Promise<void> {
  const channel = operation === 'extend' ? extendChannel : releaseChannel;
  if (!tracing()) return run();
  const ctx: LockOperationContext = {
    operation,
    resources: lock.resources,
    keyTemplate: templates.get(lock),
    ttl,
    fencingToken: lock.fencingToken,
    lock,
    startedAt: performance.now(),
    duration: 0,
    outcomes: [],
  };
  const traced = current.run(ctx, () =>
    run().finally(() => {
      ctx.duration = performance.now() - ctx.startedAt;
    }),
  );
  return channel.tracePromise(() => traced, ctx);
}

/** Publishes a lost lock on `nestjs-quorum-lock:lost` when somebody listens. */
export function publishLost(lock: Lock, reason: LockLostError): void {
  if (!lostChannel.hasSubscribers) return;
  const message: LockLostMessage = {
    resources: lock.resources,
    keyTemplate: templates.get(lock),
    ttl: lock.ttl,
    fencingToken: lock.fencingToken,
    lock,
    reason,
  };
  lostChannel.publish(message);
}

/** The key template a lock was taken with, if it was traced. */
export function keyTemplateOfLock(lock: Lock): string | undefined {
  return templates.get(lock);
}
