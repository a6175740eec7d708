import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { RedlockClosedError } from '../errors/redlock-closed.error.js';
import { inspect as utilInspect } from 'node:util';
import { now } from '../util/clock.js';
import { Lock } from '../lock/lock.js';
import { closeMasters, connectMasters } from '../backend/master.js';
import { type RedlockOptions, type ResolvedRedlockOptions } from '../options/redlock-options.js';
import { Leadership, resolveLeadOptions, type LeadOptions } from '../leadership/leadership.js';
import { checkResources } from '../lock/resources.js';
import { type MasterState } from '../backend/health/master-state.js';
import { inspectResource, type LockInspection } from '../inspect/inspect.js';
import { startTelemetry } from '../ops/telemetry.js';
import { traceLockOperation, tracing } from '../ops/diagnostics.js';
import type { AcquireOptions, TryAcquireOptions, UsingOptions } from './call-spec.js';
import { acquireCall, tryAcquireCall, usingCall, type CallHost } from './calls.js';
import { EngineState } from './engine-state.js';
import { closeEngine, extendLock, releaseLock, reportLoss } from './lifecycle.js';
import { adoptOn, type AdoptOptions } from './adopt.js';
import { handleOf } from './handle.js';
import type { LockHandle } from '../lock/lock-handle.js';
import { whenTrusted } from './when-trusted.js';
import { checkRevokeOptions, revokeHolders, type RevokeOptions, type RevokeResult } from './revoke.js';

/**
 * The Redlock algorithm over N independent Redis masters, with no framework attached.
 * `RedlockService` is this class made injectable; use it directly outside Nest.
 *
 * @example
 * const redlock = new Redlock({ nodes: ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6380', 'redis://127.0.0.1:6381'] });
 * await redlock.connect();
 * const total = await redlock.using('account:7', 5_000, async (lock) => transfer({ signal: lock.signal }));
 * await redlock.close();
 * @publicApi
 */
export class Redlock {
  /** The options in force, defaults filled in. */
  readonly options: ResolvedRedlockOptions;
  /** How many masters must agree: floor(N/2)+1. */
  readonly quorum: number;
  readonly #state: EngineState;
  /** What acquire / tryAcquire / using run on (calls.ts). */
  readonly #calls: CallHost;
  #connecting: Promise<void> | undefined;
  #telemetry: Promise<() => void> | undefined;
  /** Campaigns still running: close() resigns them before it releases anything else. */
  readonly #leaderships = new Set<Leadership>();

  /** @throws RedlockConfigError naming the option at fault; nothing is connected or written then. */
  constructor(options: RedlockOptions) {
    this.#state = new EngineState(options);
    this.options = this.#state.options;
    this.quorum = this.#state.quorum;
    this.#calls = { state: this.#state, issuer: this, connect: () => this.connect() };
  }

  /** The masters' labels (`host:port`), in `nodes` order. */
  get masters(): string[] {
    return this.#state.masters.map((m) => m.label);
  }

  /**
   * Milliseconds until each master's votes count again under the restart guard (0 = counting now),
   * in `nodes` order; all zeros when the guard is off. Never `Infinity`: while a master's `INFO` is
   * still unknown, the guard's full duration (an upper bound). `masterStates()` says why;
   * `whenTrusted()` waits.
   */
  get distrustedFor(): number[] {
    return this.#state.masters.map((_, i) => this.#state.guard?.distrustedFor(i) ?? 0);
  }

  /**
   * Reads what every master holds for `resource` without acquiring or writing anything: each
   * master's holder value and remaining PTTL (or its error), whether one holder has a quorum, and a
   * conservative estimate of that holder's remaining validity; with fencing, the counters too.
   *
   * @example
   * const view = await redlock.inspect('order:42');
   * console.log(view.held ? `held, ${view.validity} ms left` : 'free');
   */
  inspect(resource: string): Promise<LockInspection> {
    const [name] = checkResources(resource, 'resource');
    const { keyPrefix, fencingPrefix, fencing, commandTimeout, driftFactor } = this.options;
    const read = (): Promise<LockInspection> =>
      inspectResource(
        this.#state.masters,
        this.quorum,
        commandTimeout,
        driftFactor,
        name,
        keyPrefix + name,
        fencingPrefix + name,
        fencing,
      );
    return this.#state.connected ? read() : this.connect().then(read); // used before connect(): connect first
  }

  /**
   * Removes the current holders of `resource` on every master, whoever they are: the exclusive
   * holder, or every reader of a read lock and every permit holder of a counting lock. The holder's
   * instance, when connected, aborts that lock's `signal` with `LockLostError` (reason `'revoked'`,
   * with `reason` as detail) within a round trip; waiters move on as after a release. For operators:
   * the holder's work is then no longer under mutual exclusion. See docs/owner-and-revoke.md.
   *
   * @returns `revoked` (a holder held on a quorum was removed), `holder` (its value) and `owner`.
   * @throws RedlockConfigError for a bad `reason`; LockKeyError for an empty resource or an array of them.
   * @example
   * const { revoked, owner } = await redlock.revoke('nightly-report', { reason: 'stuck since 02:00' });
   */
  async revoke(resource: string, options?: RevokeOptions): Promise<RevokeResult> {
    // An array would name several locks: revoking only its first one is not what was asked.
    if (Array.isArray(resource))
      throw new LockKeyError('`resource` must be one resource name: revoke() takes one resource at a time.');
    const [name] = checkResources(resource, 'resource');
    const reason = checkRevokeOptions(options);
    if (this.#state.closing.signal.aborted) throw new RedlockClosedError();
    const view = await this.inspect(name);
    const { masters, quorum } = this.#state;
    return revokeHolders({ masters, quorum, timeout: this.options.commandTimeout }, view, reason);
  }

  /**
   * Each master as this instance sees it now (connected, trusted or why not and for how long,
   * round trip, `maxmemory-policy`, `run_id`), in `nodes` order. Synchronous and read-only: for
   * health checks and inspection. `refreshMasterStates()` asks the masters first.
   *
   * @example
   * const counting = redlock.masterStates().filter((m) => m.trusted).length;
   * if (counting < redlock.quorum) console.warn('locks cannot be taken now');
   */
  masterStates(): MasterState[] {
    return this.#state.monitor.states();
  }

  /**
   * Reads every connected master's `INFO` again (bounded by `connectTimeout`), then returns
   * `masterStates()`: fresh round trips, and a failover noticed even without a reconnect.
   *
   * @example
   * const states = await redlock.refreshMasterStates();
   */
  async refreshMasterStates(): Promise<MasterState[]> {
    await this.#state.monitor.refresh();
    return this.#state.monitor.states();
  }

  /**
   * Resolves once a quorum of masters is connected and counts (the restart guard trusts them), so
   * that a lock can be taken; rejects with `RedlockError` after `timeout` ms (default: the restart
   * guard's duration plus `connectTimeout`), naming each master that does not count and why.
   *
   * @example
   * await redlock.connect();
   * await redlock.whenTrusted({ timeout: 15_000 }); // fresh masters: wait out the restart guard
   */
  whenTrusted(options: { timeout?: number; signal?: AbortSignal } = {}): Promise<void> {
    return whenTrusted(this.#state, options);
  }

  /**
   * Opens the connections the library owns, waiting up to `connectTimeout` (masters still down are
   * retried in the background), reads each master's `INFO`, and logs what an operator should know.
   * Optional: the first acquisition connects (within its own budget) when this was not called;
   * calling it at start-up takes that wait out of the first request.
   *
   * @throws RedlockConfigError naming the node when two nodes are the same Redis server, or a master's
   * `maxmemory-policy` can evict lock keys (unless `allowEvictingMasters`).
   */
  connect(): Promise<void> {
    this.#connecting ??= (async () => {
      const start = now();
      this.#telemetry ??= startTelemetry(this); // OpenTelemetry, when installed and an SDK is registered
      await Promise.all([this.#telemetry, connectMasters(this.#state.masters, this.options.connectTimeout)]);
      await this.#state.monitor.settled(Math.max(100, this.options.connectTimeout - (now() - start)));
      this.#state.monitor.connected(this.quorum);
      this.#state.connected = true;
    })().catch((error: unknown) => {
      this.#connecting = undefined; // a later call tries again
      throw error;
    });
    return this.#connecting;
  }

  /** JSON without secrets: the masters' labels and the options other than `nodes`. */
  toJSON(): Record<string, unknown> {
    const { nodes: _nodes, logger: _logger, ...options } = this.options;
    return { masters: this.masters, quorum: this.quorum, options };
  }

  /** `console.log(redlock)` shows no password. @internal */
  [utilInspect.custom](): string {
    return `Redlock ${utilInspect(this.toJSON(), { depth: 3 })}`;
  }

  /**
   * Acquires a lock on one resource, or on several at once (all or none on each master), retrying
   * with jittered delays until `retryCount`, `acquireTimeout` or `signal` ends it.
   *
   * @param resources A resource name, or several; the Redis keys are `keyPrefix + resource`.
   * @param ttl Time-to-live in ms (default: the `ttl` option).
   * @throws LockAcquisitionError with each master's outcome when no quorum was won in time.
   * @throws LockKeyError for an empty resource name; RedlockConfigError for a bad `ttl` or retry option.
   * @example
   * const lock = await redlock.acquire(['seat:12A', 'seat:12B'], 3_000);
   * try { await book(); } finally { await lock.release(); }
   */
  acquire(
    resources: string | readonly string[],
    ttl: number | undefined,
    options: AcquireOptions & { onBusy: 'skip' },
  ): Promise<Lock | undefined>;
  acquire(
    resources: string | readonly string[],
    ttl?: number,
    options?: AcquireOptions & { onBusy?: 'wait' },
  ): Promise<Lock>;
  acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock | undefined>;
  acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock | undefined> {
    return acquireCall(this.#calls, resources, ttl, options);
  }

  /**
   * Makes a single attempt. Resolves to null when another holder has the lock; rejects with
   * `LockAcquisitionError` when no master said "held" but no quorum answered either (Redis trouble).
   *
   * @example
   * const lock = await redlock.tryAcquire('nightly-report', 60_000);
   * if (!lock) return; // another instance is on it
   */
  tryAcquire(resources: string | readonly string[], ttl?: number, options?: TryAcquireOptions): Promise<Lock | null> {
    return tryAcquireCall(this.#calls, resources, ttl, options);
  }

  /**
   * Runs `fn` under the lock, renewing it while `fn` runs, and releases it on every master when `fn`
   * settles. Returns `fn`'s result; `fn`'s own errors pass through unchanged. If the lock was lost
   * while `fn` ran (see `lock.signal`), the call rejects with `LockLostError` after `fn` settles.
   * Reentrant: resources held by an enclosing `using()` / `@Locked` call of the same call chain that
   * is still running are not acquired again; sibling calls take turns on them, and the enclosing
   * call keeps them held until every call that entered has settled. `onBusy: 'skip'` resolves to
   * `undefined` when another holder has the lock; `minHold` / `maxHold` bound the hold (`HoldOptions`).
   *
   * @example
   * const seat = await redlock.using(`seat:${id}`, 2_000, async (lock) => sell(id, lock.signal));
   * const ran = await redlock.using('report', 30_000, build, { onBusy: 'skip', minHold: 5_000 }); // undefined if busy
   */
  using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options: UsingOptions & { onBusy: 'skip' },
  ): Promise<T | undefined>;
  using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions & { onBusy?: 'wait' },
  ): Promise<T>;
  using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions,
  ): Promise<T | undefined>;
  using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions,
  ): Promise<T | undefined> {
    return usingCall(this.#calls, resources, ttl, fn, options);
  }

  /**
   * Campaigns for leadership of `resource` until resigned: tries to win a renewable lock on it, leads
   * while it can renew it, and tries again after losing it. A standby retries every `retryDelay`, and
   * at once when the leader releases (resigns or shuts down cleanly). `close()` resigns every campaign.
   *
   * @param resource The resource to lead (the key is `keyPrefix + resource`).
   * @throws RedlockConfigError naming a bad option; LockKeyError for an empty resource; RedlockClosedError once closed.
   * @example
   * const leadership = redlock.lead('billing-poller', { ttl: 5_000 });
   * leadership.changes.subscribe((leading) => leading && poll(leadership.signal));
   * // later
   * await leadership.resign();
   */
  lead(resource: string, options?: LeadOptions): Leadership {
    if (typeof resource !== 'string')
      throw new LockKeyError(
        `\`resource\` must be a non-empty string; got ${Array.isArray(resource) ? 'an array' : typeof resource}.`,
      );
    const [name] = checkResources(resource, 'resource');
    const settings = resolveLeadOptions(this.options, options);
    if (this.#state.closing.signal.aborted) throw new RedlockClosedError();
    const leadership = Leadership.create(this, name, settings);
    this.#leaderships.add(leadership);
    return leadership;
  }

  /**
   * Rebuilds a `Lock` from `lock.toHandle()`, taken in this or another process on the same masters
   * (docs/portable-handles.md). One extension round (by the handle's `ttl`) decides: its quorum is
   * the adopted lock's validity. The lock can then `extend`, `release` and, with `autoExtend`, renew
   * itself; the original holder's lock keeps working too. Its fencing token is the handle's.
   *
   * @throws RedlockConfigError naming the handle's field at fault (e.g. `handle.value`), before anything is sent.
   * @throws LockLostError (`reason: 'lapsed'`) when the lock is no longer held.
   * @throws LockExtensionError when too few masters answered to tell.
   * @example
   * const lock = await redlock.adopt(JSON.parse(message).lock, { autoExtend: true });
   * try { await ship(lock.signal); } finally { await lock.release(); }
   */
  adopt(handle: LockHandle, options?: AdoptOptions): Promise<Lock> {
    return adoptOn(this.#state, this, () => this.connect(), handle, options);
  }

  /** Used by `Leadership` once it has resigned. @internal */
  forgetLeadership(leadership: Leadership): void {
    this.#leaderships.delete(leadership);
  }

  /** Used by `Lock.extend()`. @internal */
  extendLock(lock: Lock, ttl: number): Promise<void> {
    return traceLockOperation('extend', lock, ttl, () => extendLock(this.#state, lock, ttl));
  }

  /** Used by `Lock.release()`. @internal */
  releaseLock(lock: Lock): Promise<void> {
    if (!tracing()) return releaseLock(this.#state, lock); // no closure per release while nobody listens
    return traceLockOperation('release', lock, lock.ttl, () => releaseLock(this.#state, lock));
  }

  /** Used by `Lock.toHandle()`. @internal */
  toHandle(lock: Lock): LockHandle {
    return handleOf(lock);
  }

  /** Used by `Lock` when it is lost: tells the channel and the log. @internal */
  lockLost(lock: Lock, reason: LockLostError): void {
    reportLoss(this.#state, lock, reason);
  }

  /**
   * Resigns every leadership, stops every renewal, aborts pending acquisitions and withdraws their
   * tickets (a key already handed to one passes on), marks held locks lost (their signals abort),
   * releases them on every master within `commandTimeout`, then closes only the connections the
   * library opened. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#state.closing.signal.aborted) return;
    await Promise.all([...this.#leaderships].map((leadership) => leadership.resign()));
    await closeEngine(this.#state);
    void this.#telemetry?.then((stop) => stop());
    closeMasters(this.#state.masters);
  }
}
