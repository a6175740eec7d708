import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockExtensionError } from '../errors/lock-extension.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { RedlockClosedError } from '../errors/redlock-closed.error.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { quote } from '../errors/quote.js';
import { RedlockError } from '../errors/redlock.error.js';
import { inspect as utilInspect } from 'node:util';
import { startAcquireRound, type AcquireRequest, type RoundContext, type RoundResult } from './acquire-round.js';
import { commandTimeoutFor, driftOf, now, validUntilOf } from './clock.js';
import { Lock } from './lock.js';
import { enterChain } from './lock-context.js';
import { closeMasters, connectMasters, openMasters, type Master } from './master.js';
import {
  checkCallOptions,
  checkFencingPrefix,
  checkTtl,
  resolveOptions,
  resolveRetryOptions,
  type RedlockOptions,
  type ResolvedRedlockOptions,
  type ResolvedRetryOptions,
  type RetryOptions,
} from './options.js';
import { resolveHoldOptions, type HoldOptions, type ResolvedHoldOptions } from './hold-options.js';
import { Leadership, resolveLeadOptions, type LeadOptions } from './leadership.js';
import { startRenewal } from './renewal.js';
import { checkResources } from './resources.js';
import { RestartGuard } from './restart-guard.js';
import { resolveLogger, type RedlockLogger } from './logger.js';
import { MasterMonitor, type MasterState } from './master-monitor.js';
import { secretsOf } from './redact.js';
import { AttemptBudget, OUT_OF_TIME } from './retry.js';
import { settleSplitVotes } from './split-votes.js';
import { quorumOf, voteRound, type MasterOutcome, type VoteRound } from './votes.js';
import { Wakeups } from './wakeups.js';
import { announceFlagFor, releaseChannelFor } from './release-channel.js';
import {
  canQueue,
  handoffRelease,
  HandoverLedger,
  handoverValue,
  rankOf,
  claimWaitOf,
  shouldYield,
  undoTicketed,
  withdrawTicket,
  yieldHandover,
  type HandoffTicket,
} from './handoff.js';
import {
  checkLockMode,
  coversRequest,
  setShape,
  shapeOf,
  type LockModeOptions,
  type RequestedShape,
} from './lock-mode.js';
import * as shared from './shared-rounds.js';
import { inspectResource, type LockInspection } from './inspect.js';
import { startTelemetry } from '../ops/telemetry.js';
import {
  noteAttempt,
  noteOutcomes,
  publishLost,
  traceAcquire,
  traceLockOperation,
  tracing,
} from '../ops/diagnostics.js';

/**
 * Per-call options of `acquire()` and `using()`.
 *
 * @example
 * await redlock.acquire('report', 30_000, { acquireTimeout: 2_000, signal: AbortSignal.timeout(5_000) });
 * @publicApi
 */
export interface AcquireOptions extends RetryOptions, LockModeOptions, HoldOptions {
  /** Gives up waiting when this signal aborts; the acquisition rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** `acquire()` only: renew the lock automatically until it is released (as `using()` does). @default false */
  autoExtend?: boolean;
  /** Issue a fencing token with this lock (`lock.fencingToken`). @default the `fencing` option */
  fencing?: boolean;
}

/**
 * Per-call options of `tryAcquire()`.
 *
 * @example
 * const permit = await redlock.tryAcquire(`export:${tenant}`, 60_000, { limit: 3 });
 * @publicApi
 */
export type TryAcquireOptions = Pick<AcquireOptions, 'mode' | 'limit' | 'fencing'>;

/** Per-call options of `using()`: those of `acquire()` but `autoExtend` (a `using()` lock is always renewed). */
export type UsingOptions = Omit<AcquireOptions, 'autoExtend'>;

/** The limits of one renewed hold: when `minHold` ends, and the timer that ends it at `maxHold`. */
interface HoldLimits {
  minHoldUntil: number;
  maxHoldTimer: NodeJS.Timeout | undefined;
}

/** How `acquireChecked` is to acquire. */
interface AttemptOptions {
  /** The retry policy in force (module options merged with the call's). */
  readonly retry: ResolvedRetryOptions;
  /** The caller's signal. */
  readonly signal?: AbortSignal;
  /** Issue a fencing token. */
  readonly fencing: boolean;
  /** A read lock or a permit of a counting lock; undefined for the exclusive (write) lock. */
  readonly shape?: RequestedShape;
}

/** An acquire attempt whose keys may be on the masters and that no lock owns yet. */
interface InFlight {
  /** How the attempt ended. */
  readonly result: Promise<RoundResult>;
  /** Each master's outcome so far, in `nodes` order. */
  outcomes(): readonly (MasterOutcome | undefined)[];
  /** Removes what the attempt may have written, on every master; never rejects. */
  readonly release: () => Promise<void>;
  /** Its clean-up, once started. */
  cleanup?: Promise<void>;
}

/** Outcomes with a `timeout` for each master that has not answered. */
function settledOutcomes(
  outcomes: readonly (MasterOutcome | undefined)[],
  masters: readonly Master[],
): MasterOutcome[] {
  return outcomes.map((o, i) => o ?? { master: masters[i].label, status: 'timeout' as const });
}

/** Ends of a lock that are not news to an operator: the holder itself released or resigned. */
const QUIET_LOSSES = new Set<string>(['released', 'resigned', 'not-leader']);

/** A vote that counts every reply: a release round waits for a quorum of answers, whatever they say. */
const accept = (): boolean => true;

/** Split votes in a row retried at once (after a short random pause) before the normal retry delay. */
const MAX_SPLIT_RETRIES = 5;
/** The longest random pause before retrying a split vote, ms: a few round trips on a LAN. */
const SPLIT_PAUSE_MS = 5;

/** `tryAcquire()`'s policy: one attempt, no waiting. */
const ONE_TRY: ResolvedRetryOptions = Object.freeze({
  retryCount: 0,
  retryDelay: 0,
  retryJitter: 0,
  acquireTimeout: undefined,
});

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
  readonly #masters: readonly Master[];
  readonly #held = new Set<Lock>();
  /** Which lock of this instance holds each key: a waiter need not poll a lock held here, whose release wakes it directly. */
  readonly #heldKeys = new Map<string, Lock>();
  /** The timer that stops tracking each held lock once its validity has lapsed (so an unreleased lock is garbage). */
  readonly #lapseTimers = new WeakMap<Lock, NodeJS.Timeout>();
  /** Each lock's release under way, so that concurrent `release()` calls all wait for the quorum. */
  readonly #releases = new WeakMap<Lock, Promise<void>>();
  /** Attempts under way, which `close()` cleans up before closing the connections. */
  readonly #inFlight = new Set<InFlight>();
  /** Clean-ups under way (abandoned and failed attempts, tickets withdrawn), which `close()` waits for. */
  readonly #cleanups = new Set<Promise<void>>();
  /** Acquisitions under way: `close()` waits until each has ended and withdrawn its ticket. */
  readonly #acquiring = new Set<Promise<void>>();
  #connecting: Promise<void> | undefined;
  #connected = false;
  readonly #closing = new AbortController();
  /** `minHold` / `maxHold` of the locks that have them. */
  readonly #limits = new WeakMap<Lock, HoldLimits>();
  #telemetry: Promise<() => void> | undefined;
  /** Campaigns still running: close() resigns them before it releases anything else. */
  readonly #leaderships = new Set<Leadership>();
  readonly #wakeups: Wakeups;
  readonly #guard: RestartGuard | undefined;
  readonly #monitor: MasterMonitor;
  readonly #logger: Required<RedlockLogger>;
  readonly #trusts: (index: number) => true | NonNullable<ReturnType<MasterMonitor['distrust']>>;
  /** The largest TTL this instance has used: how long the restart guard distrusts a fresh master. */
  #largestTtl: number;

  /** @throws RedlockConfigError naming the option at fault; nothing is connected or written then. */
  constructor(options: RedlockOptions) {
    this.options = resolveOptions(options);
    this.#masters = openMasters(this.options.nodes);
    this.quorum = quorumOf(this.#masters.length);
    // A handover message counts like a vote: from a trusted master, on a connection that reached the server the guard vetted.
    const unreadable = new Set<number>();
    this.#wakeups = new Wakeups(
      this.#masters,
      this.options.wakeOnRelease,
      (i, runId) => this.#trusts(i) === true && (!this.#guard || this.#monitor.runIdOf(i) === runId),
      (i) => {
        if (!this.#guard || unreadable.has(i)) return;
        unreadable.add(i);
        this.#logger.warn(
          `${this.#masters[i].label}: INFO is refused on the subscriber connection, so its handover messages are ignored and waiters there wait for their retryDelay (allow INFO to this user)`,
        );
      },
    );
    this.#largestTtl = this.options.ttl;
    const guard = this.options.restartGuard;
    if (guard) {
      this.#guard = new RestartGuard(this.#masters.length, () => {
        const ttl = Math.max(guard.largestTtl ?? 0, this.#largestTtl);
        return ttl + driftOf(ttl, this.options.driftFactor);
      });
    }
    this.#logger = resolveLogger(this.options.logger);
    this.#monitor = new MasterMonitor(this.#masters, this.#guard, {
      allowEvictingMasters: this.options.allowEvictingMasters,
      probeTimeout: Math.max(this.options.commandTimeout, this.options.connectTimeout),
      logger: this.#logger,
      secrets: secretsOf(this.options.nodes),
    });
    this.#trusts = (i) => this.#monitor.distrust(i) ?? true;
    setMaxListeners(0, this.#closing.signal); // every acquisition waiting to retry listens to it
  }

  /** The masters' labels (`host:port`), in `nodes` order. */
  get masters(): string[] {
    return this.#masters.map((m) => m.label);
  }

  /**
   * Milliseconds until each master's votes count again under the restart guard (0 = counting now),
   * in `nodes` order; all zeros when the guard is off. Never `Infinity`: while a master's `INFO` is
   * still unknown, the guard's full duration (an upper bound). `masterStates()` says why;
   * `whenTrusted()` waits.
   */
  get distrustedFor(): number[] {
    return this.#masters.map((_, i) => this.#guard?.distrustedFor(i) ?? 0);
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
        this.#masters,
        this.quorum,
        commandTimeout,
        driftFactor,
        name,
        keyPrefix + name,
        fencingPrefix + name,
        fencing,
      );
    return this.#connected ? read() : this.connect().then(read); // used before connect(): connect first
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
    return this.#monitor.states();
  }

  /**
   * Reads every connected master's `INFO` again (bounded by `connectTimeout`), then returns
   * `masterStates()`: fresh round trips, and a failover noticed even without a reconnect.
   *
   * @example
   * const states = await redlock.refreshMasterStates();
   */
  async refreshMasterStates(): Promise<MasterState[]> {
    await this.#monitor.refresh();
    return this.#monitor.states();
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
  async whenTrusted(options: { timeout?: number; signal?: AbortSignal } = {}): Promise<void> {
    const ttl = Math.max(this.options.restartGuard ? (this.options.restartGuard.largestTtl ?? 0) : 0, this.#largestTtl);
    const timeout =
      options.timeout === undefined
        ? (this.options.restartGuard ? ttl + driftOf(ttl, this.options.driftFactor) : 0) + this.options.connectTimeout
        : checkTtl(options.timeout, 'timeout');
    const deadline = now() + timeout;
    for (;;) {
      options.signal?.throwIfAborted();
      if (this.#closing.signal.aborted) throw new RedlockClosedError();
      const states = this.#monitor.states();
      if (states.filter((m) => m.trusted).length >= this.quorum) return;
      const left = deadline - now();
      if (left <= 0) {
        const why = states
          .filter((m) => !m.trusted)
          .map(
            (m) =>
              `${m.label} ${m.distrust ?? 'not counted'}${m.distrust === 'unreachable' ? (m.lastError ? ` (${m.lastError})` : '') : m.distrustedFor ? ` for ${m.distrustedFor} ms more` : ''}`,
          )
          .join(', ');
        throw new RedlockError(
          `Fewer than ${this.quorum} of ${states.length} masters count after ${timeout} ms: ${why}.`,
        );
      }
      await new Promise<void>((resolve) => setTimeout(resolve, Math.min(25, left)).unref());
    }
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
      await Promise.all([this.#telemetry, connectMasters(this.#masters, this.options.connectTimeout)]);
      await this.#monitor.settled(Math.max(100, this.options.connectTimeout - (now() - start)));
      this.#monitor.connected(this.quorum);
      this.#connected = true;
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
  async acquire(
    resources: string | readonly string[],
    ttl?: number,
    options?: AcquireOptions,
  ): Promise<Lock | undefined> {
    const names = this.checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    checkCallOptions(options);
    const shape = checkLockMode(options, names.length);
    const hold = resolveHoldOptions(options, lockTtl, options?.autoExtend === true);
    const retry = resolveRetryOptions(this.options, this.retryOverrides(options, hold));
    const acquire = this.settlingSplits(hold, lockTtl, options?.signal, () =>
      this.acquireChecked(names, lockTtl, {
        retry,
        signal: options?.signal,
        fencing: options?.fencing ?? this.options.fencing,
        shape,
      }),
    );
    let lock: Lock;
    try {
      lock = await (tracing() ? traceAcquire('acquire', names, lockTtl, options, acquire) : acquire());
    } catch (error) {
      if (hold.skip && error instanceof LockAcquisitionError && error.busy) return this.skipped(error.resources);
      throw error;
    }
    if (options?.autoExtend) lock.renewWith(startRenewal(lock));
    this.limitHold(lock, hold);
    return lock;
  }

  /** `onBusy: 'skip'` met a busy lock: a debug line, no error (skipping is the point). */
  private skipped(resources: readonly string[], holder = 'another holder'): undefined {
    this.#logger.debug(
      `Skipped ${resources.map((r) => JSON.stringify(r)).join(', ')}: held by ${holder} (onBusy: 'skip').`,
    );
    return undefined;
  }

  /**
   * With `onBusy: 'skip'`, a split vote (some master granted, no quorum) is not "busy": try again
   * after a short random delay before skipping (split-votes.ts). `'wait'` retries as configured.
   */
  private settlingSplits(
    hold: ResolvedHoldOptions,
    ttl: number,
    signal: AbortSignal | undefined,
    acquire: () => Promise<Lock>,
  ): () => Promise<Lock> {
    return hold.skip ? () => settleSplitVotes(acquire, ttl, [signal, this.#closing.signal]) : acquire;
  }

  /** With `onBusy: 'skip'`, `retryCount` defaults to 0: a busy lock is skipped at once (a split vote is retried, see `settlingSplits`). */
  private retryOverrides(options: AcquireOptions | undefined, hold: ResolvedHoldOptions): AcquireOptions | undefined {
    return hold.skip && options?.retryCount === undefined ? { ...options, retryCount: 0 } : options;
  }

  /**
   * Arms `maxHold` (the signal aborts and renewal stops once the lock has been held that long) and
   * records when `minHold` ends (release then leaves the keys to lapse on the masters at that moment).
   */
  private limitHold(lock: Lock, hold: ResolvedHoldOptions): void {
    if (hold.minHold === 0 && hold.maxHold === undefined) return;
    const acquiredAt = now();
    const maxHold = hold.maxHold;
    const maxHoldTimer =
      maxHold === undefined
        ? undefined
        : setTimeout(() => {
            lock.markLost(LockLostError.maxHold(lock.resources, maxHold));
          }, maxHold);
    maxHoldTimer?.unref();
    this.#limits.set(lock, { minHoldUntil: acquiredAt + hold.minHold, maxHoldTimer });
  }

  /**
   * Makes a single attempt. Resolves to null when another holder has the lock; rejects with
   * `LockAcquisitionError` when no master said "held" but no quorum answered either (Redis trouble).
   *
   * @example
   * const lock = await redlock.tryAcquire('nightly-report', 60_000);
   * if (!lock) return; // another instance is on it
   */
  async tryAcquire(
    resources: string | readonly string[],
    ttl?: number,
    options?: TryAcquireOptions,
  ): Promise<Lock | null> {
    const names = this.checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    checkCallOptions(options);
    const shape = checkLockMode(options, names.length);
    const tryOnce = (): Promise<Lock | null> =>
      this.acquireChecked(names, lockTtl, {
        retry: ONE_TRY,
        fencing: options?.fencing ?? this.options.fencing,
        shape,
      }).catch((error: unknown) => {
        if (error instanceof LockAcquisitionError && error.busy) return null;
        throw error;
      });
    return tracing() ? traceAcquire('tryAcquire', names, lockTtl, options, tryOnce) : tryOnce();
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
  async using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions,
  ): Promise<T | undefined> {
    const names = this.checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    if (typeof fn !== 'function')
      throw new RedlockConfigError('fn', `\`fn\` must be the function to run under the lock; got ${typeof fn}.`);
    checkCallOptions(options);
    const shape = checkLockMode(options, names.length);
    const hold = resolveHoldOptions(options, lockTtl);
    const retry = resolveRetryOptions(this.options, this.retryOverrides(options, hold));

    // Reentrancy: what the call chain holds is not acquired again; sibling calls take turns on it.
    const entered = enterChain(
      this,
      names,
      (name) => this.options.keyPrefix + name,
      (held, name) => coversRequest(held, shape, name),
      {
        signal: options?.signal,
        skip: hold.skip,
      },
    );
    const entry = entered instanceof Promise ? await entered : entered;
    if (!entry) return this.skipped(names, 'a reentrant call of this call chain'); // onBusy 'skip'
    let lock: Lock | undefined;
    if (entry.missing.length > 0) {
      const missing = [...entry.missing];
      const acquire = this.settlingSplits(hold, lockTtl, options?.signal, () =>
        this.acquireChecked(missing, lockTtl, {
          retry,
          signal: options?.signal,
          fencing: options?.fencing ?? this.options.fencing,
          shape,
        }),
      );
      try {
        lock = await (tracing() ? traceAcquire('using', missing, lockTtl, options, acquire) : acquire());
      } catch (error) {
        entry.leave();
        if (hold.skip && error instanceof LockAcquisitionError && error.busy) return this.skipped(error.resources);
        throw error;
      }
      lock.renewWith(startRenewal(lock));
      this.limitHold(lock, hold);
    }
    const own = lock;
    const result = await entry.run(own, fn, async () => {
      if (own) await this.releaseLock(own);
    });
    this.throwIfLost(entry.inherited);
    if (own?.lostReason) throw own.lostReason;
    return result;
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
    if (this.#closing.signal.aborted) throw new RedlockClosedError();
    const leadership = Leadership.create(this, name, settings);
    this.#leaderships.add(leadership);
    return leadership;
  }

  /** Used by `Leadership` once it has resigned. @internal */
  forgetLeadership(leadership: Leadership): void {
    this.#leaderships.delete(leadership);
  }

  private throwIfLost(locks: Iterable<Lock>): void {
    for (const lock of locks) if (lock.lostReason) throw lock.lostReason;
  }

  private checkResources(resources: string | readonly string[]): string[] {
    return checkResources(resources);
  }

  /**
   * The attempt loop: an acquire round per attempt, under the attempt budget (retry policy,
   * deadline, signals, queue), until a lock is won with validity left or the budget is spent.
   */
  private async acquireChecked(resources: string[], ttl: number, options: AttemptOptions): Promise<Lock> {
    const { keyPrefix, fencingPrefix, driftFactor } = this.options;
    const keys = resources.map((r) => keyPrefix + r);
    if (options.fencing && !this.options.fencing) checkFencingPrefix(keyPrefix, fencingPrefix);
    const counters = options.fencing ? resources.map((r) => fencingPrefix + r) : undefined;
    if (ttl > this.#largestTtl) this.#largestTtl = ttl;
    const context = this.roundContext(commandTimeoutFor(ttl, this.options.commandTimeout));
    const queue = { wakeups: this.#wakeups, keys, heldHere: () => this.heldHere(keys) };
    const budget = new AttemptBudget(options.retry, queue, options.signal, this.#closing.signal);
    const { shape } = options;
    let writer: string | undefined; // a waiting writer's id: it holds off new readers while it waits
    // Handoff between instances (docs/handoff.md): after a first refusal, queue with a ticket on the masters.
    const queues = canQueue({ keys }, shape !== undefined) && options.retry.retryCount > 0;
    let ticket: HandoffTicket | undefined;
    // What the waiter knows of handovers to its ticket: built with the ticket, so that a key nobody
    // waits for pays nothing for it.
    let ledger: HandoverLedger | undefined;
    const takeTicket = (): HandoffTicket => {
      // Not fenced: the release may hand the key straight to this ticket's value (docs/handoff.md §3).
      const random = randomBytes(16).toString('base64url');
      const handover = counters ? undefined : { value: handoverValue(budget.remoteId, budget.arrival, random), ttl };
      if (handover) ledger = new HandoverLedger();
      return { id: budget.remoteId, score: budget.arrival, lease: 0, claim: 0, handover };
    };
    // Waiters are queued on the masters already: take a place with the first attempt.
    if (queues && this.#wakeups.contended(keys[0])) {
      ticket = takeTicket();
      budget.join();
    }
    let splits = 0;
    let won = false;
    let lastRound: VoteRound | undefined;
    // A quorum of masters handed the key to this waiter's ticket in their release (docs/handoff.md §3):
    // the lock is held without an attempt of its own.
    const handedOver = (): Lock | undefined => {
      if (!ticket?.handover || !ledger) return undefined;
      const trusted = (i: number): boolean => this.#trusts(i) === true;
      const until = ledger.validUntil(budget.handedAt, this.quorum, trusted, ttl, driftFactor);
      if (until === undefined || until <= now()) return undefined;
      const lock = Lock.create(this, resources, keys, ticket.handover.value, ttl, until, undefined);
      if (budget.stopped) {
        void this.releaseHeld(lock, context.timeout, true).settled;
        budget.throwIfStopped();
      }
      this.track(lock);
      won = true;
      return lock;
    };
    // close() waits for this acquisition's end (its withdrawal is then under way) before it closes connections.
    let finish!: () => void;
    const acquiring = new Promise<void>((resolve) => (finish = resolve));
    this.#acquiring.add(acquiring);
    try {
      // Used before connect(): connect now, within the budget (masters still down keep reconnecting).
      if (!this.#connected) await budget.bound(this.connect());
      for (;;) {
        await budget.nextAttempt();
        const handed = handedOver();
        if (handed) return handed;
        const value = ticket?.handover?.value ?? randomBytes(16).toString('base64url');
        if (ticket) {
          ticket.lease = this.ticketLease(options.retry, context.timeout);
          // A waiter that did not hear back in time from a quorum in its last round claims nothing
          // (docs/handoff.md §4): else, slower than commandTimeout, it regained its claim at every
          // attempt that found the key taken and held the key back from the others again and again.
          ticket.claim = lastRound && this.heardLate(lastRound) ? 0 : this.claimWindow(options.retry, context.timeout);
        }
        const attempt = this.startAttempt(context, { keys, counters, value, ttl, ticket }, shape);
        // The caller's signal, close() and acquireTimeout end the wait at once, even while masters
        // hang; the attempt's keys are then removed in the background (close() waits for that).
        const result = await budget.bound(attempt.result).catch((stop: unknown) => {
          void this.cleanUp(attempt);
          throw stop;
        });
        if (result === OUT_OF_TIME) {
          void this.cleanUp(attempt);
          throw LockAcquisitionError.of({
            resources,
            attempts: budget.attempts,
            outcomes: settledOutcomes(attempt.outcomes(), this.#masters),
            reason: 'timeout',
            budget: budget.spent,
          });
        }
        lastRound = result.round;
        const sharedResult = shape ? (result as shared.SharedRoundResult) : undefined;
        noteAttempt(budget.attempts, result.start, result.round.outcomes);
        const validUntil = validUntilOf(result.start, ttl, driftFactor);
        if (result.outcome === 'granted' && validUntil > now()) {
          const lock = Lock.create(this, resources, keys, value, ttl, validUntil, result.token);
          if (shape) setShape(lock, shape.kind === 'permit' ? { ...shape, slot: sharedResult!.slot } : shape);
          if (budget.stopped) {
            void this.cleanUp(attempt, () => this.releaseHeld(lock, context.timeout, true).settled);
            budget.throwIfStopped();
          }
          this.#inFlight.delete(attempt);
          this.track(lock);
          won = true;
          ledger?.note(result.start, result.round.replies);
          // Others of this process queued behind a shared lock may share it too: pass the wake-up on
          // (not with the value: the holder's own release must still wake).
          if (sharedResult?.roomLeft) for (const key of keys) this.#wakeups.released(key, `${value}:granted`);
          return lock;
        }
        // Failed: release on ALL masters, the ones that said no or timed out included (silently: nothing was free).
        const released = this.cleanUp(attempt);
        if (ticket?.handover && ledger) {
          ledger.note(result.start, result.round.replies);
          const handed = handedOver();
          if (handed) return handed;
          if (shouldYield(result.round.replies)) {
            // A split handover: the masters' queues differed for a moment (a ticket registered while
            // the release ran). The waiter behind gives its masters on to the first ticket.
            // What it knew no longer holds where a master gave its key on (late messages could be stale).
            const gave = await budget.bound(yieldHandover(this.#masters, keys[0], ticket, context.timeout));
            if (gave !== false) ledger.reset();
          }
        }
        if (queues && result.outcome === 'votes' && !budget.exhausted) {
          if (!ticket) {
            // Refused by a plain SET NX: take a place in the masters' queue at once (not counted).
            ticket = takeTicket();
            budget.join();
            budget.again();
          } else if (splits < MAX_SPLIT_RETRIES && (await this.splitVote(budget, result.round))) {
            // A split vote (some masters granted, others refused, no quorum): nobody holds the lock,
            // so retry after a short random pause instead of a full retryDelay. The retry is not
            // counted; the attempt that split was, so that splits alone can never retry forever.
            splits++;
            budget.again(Math.random() * SPLIT_PAUSE_MS);
          } else {
            // Refused while queued behind other live waiters: counted only while the queue does not
            // move, so that `retryCount` bounds the time the lock is not handed on, for every waiter.
            splits = 0;
            const rank = rankOf(result.round.replies, this.quorum);
            if (rank !== undefined && rank > 0) {
              budget.behind(rank);
              // Releases hand the key on in ticket order and name the ticket (docs/handoff.md §3):
              // a waiter behind others need not poll, only renew its ticket before the lease lapses,
              // or come back when the key can be its own (the key expires, or the claim ahead lapses).
              // Not without pub/sub (nothing would name it), nor while it holds part of a split (§6).
              const granted = result.round.outcomes.some((o) => o?.status === 'granted');
              const soonest = claimWaitOf(result.round.replies, this.quorum) ?? Infinity;
              if (this.options.wakeOnRelease && !granted) budget.waitAtLeast(Math.min(ticket.lease / 3, soonest + 5));
            }
          }
        }
        if (sharedResult?.heldLimit !== undefined && shape?.kind === 'permit') {
          await released;
          throw new RedlockConfigError(
            'limit',
            `\`limit\` ${shape.limit} differs from the limit ${sharedResult.heldLimit} that the holders of ${quote(resources)} use; every holder of a counting lock must use the same limit.`,
          );
        }
        if (!shape && !ticket && !budget.exhausted) {
          // Writer preference: a waiting writer holds off new readers, for a little longer than its
          // next attempt. A queued writer's live ticket does that already (rw-scripts `readAcquire`).
          writer ??= randomBytes(16).toString('base64url');
          const { retryDelay, retryJitter } = options.retry;
          const between = typeof retryDelay === 'number' ? retryDelay : 1_000;
          shared.registerWriter(context, keys, writer, 2 * (between + retryJitter) + 2 * context.timeout + 50);
        }
        if (budget.exhausted) {
          const spent = budget.spent;
          await budget.bound(Promise.all([released, result.round.settled])); // every outcome, unless time is up
          budget.throwIfStopped();
          throw LockAcquisitionError.of({
            resources,
            attempts: budget.attempts,
            outcomes: settledOutcomes(result.round.outcomes, this.#masters),
            reason: result.outcome === 'granted' ? 'too-late' : result.outcome,
            budget: spent,
          });
        }
      }
    } finally {
      const handedAt = budget.handedAt;
      budget.leave();
      if (writer) shared.withdrawWriter(context, keys, writer); // won or gave up: stop holding readers off
      // Won or gave up: leave every master's queue (sent before this holder's release on each connection);
      // a waiter that gave up also drops its value where a release already handed it over.
      if (ticket) {
        const givenUp = won ? '' : (ticket.handover?.value ?? '');
        // A winner's ticket has left the queue of each master that handed it the key: not sent there.
        const queued = won && ledger ? ledger.mayBeQueued(handedAt, this.#masters.length) : undefined;
        const masters = queued ? this.#masters.filter((_, i) => queued[i]) : this.#masters;
        if (masters.length > 0)
          void this.trackCleanup(withdrawTicket(masters, keys[0], ticket, context.timeout, givenUp));
      }
      this.#acquiring.delete(acquiring);
      finish();
    }
  }

  /**
   * True when, once every master answered (within the budget), some granted and some refused but
   * fewer than a quorum granted: contenders split the votes. Masters that failed or timed out are
   * Redis trouble, not a split, and wait a full retry delay.
   */
  private async splitVote(budget: AttemptBudget, round: VoteRound): Promise<boolean> {
    if ((await budget.bound(round.settled)) === OUT_OF_TIME) return false;
    return (
      round.outcomes.some((o) => o?.status === 'granted') &&
      round.outcomes.some((o) => o?.status === 'refused') &&
      round.outcomes.every((o) => o?.status === 'granted' || o?.status === 'refused')
    );
  }

  /** How long the masters keep a waiter's ticket after each attempt: past its next attempt. */
  private ticketLease(retry: ResolvedRetryOptions, timeout: number): number {
    const between = typeof retry.retryDelay === 'number' ? retry.retryDelay : 1_000;
    return 2 * (between + retry.retryJitter) + 2 * timeout + 100;
  }

  /**
   * How long a ticket's claim on a free key lasts after its last attempt that found the key taken
   * (docs/handoff.md §4): one wait before its next attempt and that attempt's round trip, plus a
   * margin. A first waiter that cannot finish holds a free key back no longer than this.
   */
  private claimWindow(retry: ResolvedRetryOptions, timeout: number): number {
    const between = typeof retry.retryDelay === 'number' ? retry.retryDelay : 1_000;
    return between + retry.retryJitter + timeout + 100;
  }

  /**
   * True when more masters than a quorum can spare did not answer `round` within the command timeout
   * (so far): the waiter's replies come too late to win, whatever the masters grant.
   */
  private heardLate(round: VoteRound): boolean {
    const late = round.outcomes.filter((o) => o?.status === 'timeout').length;
    return late > this.#masters.length - this.quorum;
  }

  /** Sends an acquire round and records it as in flight until a lock owns its keys or it is cleaned up. */
  private startAttempt(context: RoundContext, request: AcquireRequest, shape: AttemptOptions['shape']): InFlight {
    let attempt: InFlight;
    if (shape) {
      const result = shared.sharedAcquireRound(context, request, shape);
      let round: VoteRound | undefined;
      void result.then(
        (r) => (round = r.round),
        () => undefined,
      );
      attempt = {
        result,
        outcomes: () => round?.outcomes ?? this.#masters.map(() => undefined),
        // A shared round knows what to undo only once it has decided; its undo still lands after it on each connection.
        release: () =>
          result
            .then((r) => Promise.all(r.cleanUp().map((c) => c.settled)))
            .then(
              () => undefined,
              () => undefined,
            ),
      };
    } else {
      const started = startAcquireRound(context, request);
      attempt = {
        result: started.result,
        outcomes: () => started.round.outcomes,
        // A master that refused wrote nothing (a ticket stays queued on purpose): undo only the others,
        // at once, so that on each connection the undo lands before this waiter's next attempt (a
        // ticket's attempts all use its one value). A ticketed attempt's undo leaves a key that a
        // release handed over (handoff.ts `undo`).
        release: () => {
          const refused = started.round.outcomes.map((o) => o?.status === 'refused');
          if (refused.every(Boolean)) return Promise.resolve();
          const { ticket } = request;
          // One key: the undo frees it like a release, handing it to the first queued waiter, if any
          // (after simultaneous first attempts split the votes, the stale values go straight to the
          // first ticket instead of waiting for its next attempt).
          const announce = request.keys.length === 1;
          if (!ticket) return this.releaseKeys(request.keys, request.value, context.timeout, announce, refused).settled;
          return voteRound(
            this.#masters.filter((_, i) => !refused[i]),
            this.quorum,
            context.timeout,
            (m) =>
              undoTicketed(m, request.keys[0], request.value, ticket, started.round.replies[this.#masters.indexOf(m)]),
            () => true,
          ).settled;
        },
      };
    }
    this.#inFlight.add(attempt);
    return attempt;
  }

  /**
   * Removes what an attempt may have written (by default: compare-and-delete on every master), sent
   * after the attempt's own commands on each connection, so it lands after them even on a master
   * that hangs now and answers later. Idempotent; never rejects; `close()` waits for it.
   */
  private cleanUp(attempt: InFlight, release: () => Promise<void> = attempt.release): Promise<void> {
    this.#inFlight.delete(attempt);
    if (!attempt.cleanup) attempt.cleanup = this.trackCleanup(release());
    return attempt.cleanup;
  }

  /** Waits for `work`, at most `ms` (for `close()`: nothing may hold it open indefinitely). */
  private async boundedWait(work: Promise<unknown>, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /** Records a clean-up under way (it never rejects), which `close()` waits for. */
  private trackCleanup(done: Promise<void>): Promise<void> {
    this.#cleanups.add(done);
    void done.then(() => this.#cleanups.delete(done));
    return done;
  }

  private roundContext(timeout: number): RoundContext {
    return {
      masters: this.#masters,
      quorum: this.quorum,
      timeout,
      fencingQuorum: this.options.fencingQuorum,
      trusts: this.#trusts,
    };
  }

  /** Releases a held lock of any kind on every master. */
  private releaseHeld(lock: Lock, timeout: number, announce: boolean): VoteRound {
    const shape = shapeOf(lock);
    if (shape?.kind === 'read') return shared.releaseRead(this.roundContext(timeout), lock.keys, lock.value, announce);
    if (shape?.kind === 'permit')
      return shared.releasePermit(
        this.roundContext(timeout),
        lock.keys[0],
        shape.limit,
        shape.slot,
        lock.value,
        announce,
      );
    return this.releaseKeys(lock.keys, lock.value, timeout, announce);
  }

  private track(lock: Lock): void {
    this.#held.add(lock);
    this.watchLapse(lock);
    if (shapeOf(lock)) return; // shared: holders here do not stop waiters here from polling
    for (const key of lock.keys) this.#heldKeys.set(key, lock);
  }

  /**
   * Stops tracking a lock once its validity has lapsed (an extension moves the check on), so that
   * a lock never released (`tryAcquire` and let it expire) does not stay reachable until `close()`.
   */
  private watchLapse(lock: Lock): void {
    const timer = setTimeout(
      () => {
        if (!this.#held.has(lock)) return;
        if (lock.isHeld) this.watchLapse(lock);
        else this.untrack(lock);
      },
      Math.ceil(lock.validity) + 1,
    );
    timer.unref();
    this.#lapseTimers.set(lock, timer);
  }

  private untrack(lock: Lock): void {
    this.#held.delete(lock);
    for (const key of lock.keys) if (this.#heldKeys.get(key) === lock) this.#heldKeys.delete(key);
    clearTimeout(this.#lapseTimers.get(lock));
    this.#lapseTimers.delete(lock);
  }

  private heldHere(keys: readonly string[]): boolean {
    for (const key of keys) if (this.#heldKeys.get(key)?.isHeld) return true;
    return false;
  }

  /** Used by `Lock.extend()`. @internal */
  extendLock(lock: Lock, ttl: number): Promise<void> {
    return traceLockOperation('extend', lock, ttl, () => this.extendNow(lock, ttl));
  }

  private async extendNow(lock: Lock, ttl: number): Promise<void> {
    checkTtl(ttl);
    if (lock.lostReason) throw lock.lostReason;
    if (!lock.isHeld) {
      const reason = lock.releaseRequested
        ? LockLostError.released(lock.resources)
        : LockLostError.lapsed(lock.resources);
      lock.markLost(reason);
      throw reason;
    }
    if (ttl > this.#largestTtl) this.#largestTtl = ttl;
    const timeout = commandTimeoutFor(ttl, this.options.commandTimeout);
    const start = now();
    const round = this.extendRound(lock, ttl, timeout);
    noteOutcomes(round.outcomes);
    const won = await round.decided;
    const validUntil = validUntilOf(start, ttl, this.options.driftFactor);
    if (won && lock.isHeld && validUntil > now()) {
      lock.markExtended(validUntil, ttl);
      if (!shapeOf(lock)) void round.settled.then(() => this.repairQuorum(lock, ttl, timeout, round.replies));
      return;
    }
    const refused = round.outcomes.filter((o) => o?.status === 'refused').length;
    if (refused > this.#masters.length - this.quorum || !lock.isHeld) {
      const reason =
        refused > this.#masters.length - this.quorum
          ? LockLostError.majorityLost(lock.resources, refused, this.#masters.length)
          : LockLostError.notRenewed(lock.resources);
      lock.markLost(reason);
      this.untrack(lock);
      throw reason;
    }
    throw LockExtensionError.of(lock.resources, settledOutcomes(round.outcomes, this.#masters), lock.validity);
  }

  /**
   * Quorum repair (docs/quorum-repair.md): after an extension won a quorum, re-takes the keys (same
   * value, same TTL) on the masters that answered that they no longer have them, so that one master
   * losing a key (a restart, an eviction, a clock jump) does not leave the holder on a bare quorum.
   * Only while the lock is still valid here, that is while a majority holds it, so no other holder
   * can hold a majority: the keys it re-takes are keys this holder is entitled to.
   */
  private repairQuorum(lock: Lock, ttl: number, timeout: number, replies: readonly unknown[]): void {
    const lost = this.#masters.filter((_, i) => replies[i] === 2);
    if (lost.length === 0 || !lock.isHeld) return;
    void voteRound(
      lost,
      lost.length,
      timeout,
      (m) => m.scripts.quorumLockRepair(lock.keys.length, ...lock.keys, lock.value, String(ttl)),
      (reply) => reply === 1,
    ).settled;
  }

  /** Used by `Lock.release()`. @internal */
  releaseLock(lock: Lock): Promise<void> {
    return traceLockOperation('release', lock, lock.ttl, () => this.releaseNow(lock));
  }

  /** Used by `Lock` when it is lost: tells the channel and the log. @internal */
  lockLost(lock: Lock, reason: LockLostError): void {
    publishLost(lock, reason);
    // the message names the resources and why; never the lock's value
    if (!QUIET_LOSSES.has(reason.reason)) this.#logger.warn(`${reason.message} (${reason.reason})`);
  }

  private releaseNow(lock: Lock): Promise<void> {
    const pending = this.#releases.get(lock);
    if (pending) return pending; // a concurrent release() resolves with the first, once a quorum confirmed
    const wasHeld = lock.isHeld;
    if (!lock.markReleased()) return Promise.resolve();
    const releasing = this.releaseOnMasters(lock, wasHeld);
    this.#releases.set(lock, releasing);
    return releasing;
  }

  private async releaseOnMasters(lock: Lock, wasHeld: boolean): Promise<void> {
    this.untrack(lock);
    if (await this.endMinHold(lock, wasHeld)) return;
    const round = this.releaseHeld(lock, commandTimeoutFor(lock.ttl, this.options.commandTimeout), true);
    noteOutcomes(round.outcomes);
    await round.decided;
    // Handed to a queued waiter: this process's next acquisition of the key queues at once.
    if (round.replies.includes(2)) this.#wakeups.sawHandover(lock.keys[0]);
    for (const key of lock.keys) this.#wakeups.released(key, lock.value);
  }

  /**
   * Ends a hold released before its `minHold` was over: instead of deleting the keys, shortens them to
   * lapse on the masters when `minHold` ends. The keys already outlive that moment (minHold <= ttl,
   * set or renewed since acquisition), so a master that misses this keeps a longer TTL, never a
   * shorter one. Returns false when the lock has no `minHold` left or was lost (delete it as usual).
   */
  private async endMinHold(lock: Lock, wasHeld: boolean): Promise<boolean> {
    const limits = this.#limits.get(lock);
    if (!limits) return false;
    clearTimeout(limits.maxHoldTimer);
    this.#limits.delete(lock);
    const left = Math.ceil(limits.minHoldUntil - now());
    if (!wasHeld || left <= 0) return false;
    await this.extendRound(lock, left, commandTimeoutFor(lock.ttl, this.options.commandTimeout)).decided;
    return true;
  }

  /**
   * Compare-and-pexpire of `lock`'s keys to `ttl` on every master, by the lock's kind: a reader's
   * entry, a permit slot (with its limit record), or the exclusive keys. A quorum of trusted masters
   * that still hold this lock's value wins. Used to extend a lock and to shorten a released one to
   * its `minHold`.
   */
  private extendRound(lock: Lock, ttl: number, timeout: number): VoteRound {
    const shape = shapeOf(lock);
    if (shape?.kind === 'read')
      return shared.extendRead(this.roundContext(timeout), lock.keys, lock.value, String(ttl));
    if (shape?.kind === 'permit')
      return shared.extendPermit(
        this.roundContext(timeout),
        lock.keys[0],
        shape.limit,
        shape.slot,
        lock.value,
        String(ttl),
      );
    return voteRound(
      this.#masters,
      this.quorum,
      timeout,
      (m) => m.scripts.quorumLockExtend(lock.keys.length, ...lock.keys, lock.value, String(ttl)),
      (reply) => reply === 1,
      this.#trusts,
    );
  }

  /**
   * Compare-and-delete on every master. Never rejects. With `announce`, each deleted key is
   * published on its release channel so that waiters elsewhere retry at once.
   */
  private releaseKeys(
    keys: readonly string[],
    value: string,
    timeout: number,
    announce: boolean,
    skip?: readonly boolean[],
  ): VoteRound {
    const masters = skip ? this.#masters.filter((_, i) => !skip[i]) : this.#masters;
    if (keys.length === 1) {
      // One key: the release hands it to the first queued waiter, if any (docs/handoff.md).
      const key = keys[0];
      const reserve = announce ? String(Math.max(1, Math.ceil(timeout))) : '0';
      return voteRound(masters, this.quorum, timeout, (m) => handoffRelease(m, key, value, reserve), accept);
    }
    return voteRound(
      masters,
      this.quorum,
      timeout,
      (m) =>
        m.scripts.quorumLockRelease(
          keys.length,
          ...keys,
          value,
          announceFlagFor(m, announce),
          ...(announce ? keys.map((key) => releaseChannelFor(m, key)) : []),
        ),
      () => true,
    );
  }

  /**
   * Resigns every leadership, stops every renewal, aborts pending acquisitions and withdraws their
   * tickets (a key already handed to one passes on), marks held locks lost (their signals abort),
   * releases them on every master within `commandTimeout`, then closes only the connections the
   * library opened. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    await Promise.all([...this.#leaderships].map((leadership) => leadership.resign()));
    this.#closing.abort(new RedlockClosedError());
    // Attempts in flight reject with RedlockClosedError; what they wrote is removed on every master first.
    for (const attempt of [...this.#inFlight]) void this.cleanUp(attempt);
    // Every wait ends at once on the abort: each acquisition then withdraws its ticket and gives on a
    // key already handed to it (a clean-up awaited below), so that nothing stays queued for it.
    await this.boundedWait(Promise.all(this.#acquiring), this.options.commandTimeout);
    const held = [...this.#held];
    for (const lock of held) this.untrack(lock);
    await Promise.all([
      ...held.map((lock) => {
        lock.markLost(LockLostError.shutdown(lock.resources));
        lock.markReleased();
        const released = this.releaseHeld(lock, this.options.commandTimeout, true).settled;
        this.#releases.set(lock, released);
        return released;
      }),
      ...this.#cleanups,
    ]);
    this.#wakeups.close();
    this.#monitor.dispose();
    void this.#telemetry?.then((stop) => stop());
    closeMasters(this.#masters);
  }
}
