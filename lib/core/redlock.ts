import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockExtensionError } from '../errors/lock-extension.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { RedlockError } from '../errors/redlock.error.js';
import { commandTimeoutFor, now, validUntilOf } from './clock.js';
import { Lock, type LockIssuer } from './lock.js';
import { lockHeldInChain, runWithLock } from './lock-context.js';
import { closeMasters, connectMasters, openMasters, type Master } from './master.js';
import {
  checkCallOptions,
  checkFencingPrefix,
  checkTtl,
  resolveOptions,
  resolveRetryOptions,
  type RedlockOptions,
  type ResolvedRedlockOptions,
  type RetryOptions,
} from './options.js';
import { issueFencingToken } from './fencing.js';
import { resolveHoldOptions, type HoldOptions, type ResolvedHoldOptions } from './hold-options.js';
import { Leadership, resolveLeadOptions, type Campaigner, type LeadOptions } from './leadership.js';
import { startRenewal } from './renewal.js';
import { RestartGuard } from './restart-guard.js';
import { jitteredDelay } from './retry.js';
import { describeOutcomes, quorumOf, voteRound, type MasterOutcome, type VoteRound } from './votes.js';
import { releaseChannelOf, Wakeups, type Ticket } from './wakeups.js';

/**
 * Per-call options of `acquire()` and `using()`.
 *
 * @example
 * await redlock.acquire('report', 30_000, { acquireTimeout: 2_000, signal: AbortSignal.timeout(5_000) });
 * @publicApi
 */
export interface AcquireOptions extends RetryOptions, HoldOptions {
  /** Gives up waiting when this signal aborts; the acquisition rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** `acquire()` only: renew the lock automatically until it is released (as `using()` does). @default false */
  autoExtend?: boolean;
  /** Issue a fencing token with this lock (`lock.fencingToken`). @default the `fencing` option */
  fencing?: boolean;
}

/** Per-call options of `using()`: those of `acquire()` but `autoExtend` (a `using()` lock is always renewed). */
export type UsingOptions = Omit<AcquireOptions, 'autoExtend'>;

/** The limits of one renewed hold: when `minHold` ends, and the timer that ends it at `maxHold`. */
interface HoldLimits {
  minHoldUntil: number;
  maxHoldTimer: NodeJS.Timeout | undefined;
}

const quote = (resources: readonly string[]): string => resources.map((r) => JSON.stringify(r)).join(', ');

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
export class Redlock implements LockIssuer, Campaigner {
  /** The options in force, defaults filled in. */
  readonly options: ResolvedRedlockOptions;
  /** How many masters must agree: floor(N/2)+1. */
  readonly quorum: number;
  readonly #masters: readonly Master[];
  readonly #held = new Set<Lock>();
  /** Which lock of this instance holds each key: a waiter need not poll a lock held here, whose release wakes it directly. */
  readonly #heldKeys = new Map<string, Lock>();
  readonly #closing = new AbortController();
  /** `minHold` / `maxHold` of the locks that have them. */
  readonly #limits = new WeakMap<Lock, HoldLimits>();
  /** Campaigns still running: close() resigns them before it releases anything else. */
  readonly #leaderships = new Set<Leadership>();
  readonly #wakeups: Wakeups;
  readonly #guard: RestartGuard | undefined;
  readonly #trusts: ((index: number) => boolean) | undefined;
  /** The largest TTL this instance has used: how long the restart guard distrusts a fresh master. */
  #largestTtl: number;

  /** @throws RedlockConfigError naming the option at fault; nothing is connected or written then. */
  constructor(options: RedlockOptions) {
    this.options = resolveOptions(options);
    this.#masters = openMasters(this.options.nodes);
    this.quorum = quorumOf(this.#masters.length);
    this.#wakeups = new Wakeups(this.#masters, this.options.wakeOnRelease);
    this.#largestTtl = this.options.ttl;
    const guard = this.options.restartGuard;
    if (guard) {
      this.#guard = new RestartGuard(this.#masters, () => Math.max(guard.largestTtl ?? 0, this.#largestTtl), this.options.driftFactor);
      this.#trusts = (i) => this.#guard!.trusts(i);
    }
    setMaxListeners(0, this.#closing.signal); // every acquisition waiting to retry listens to it
  }

  /** The masters' labels (`host:port`), in `nodes` order. */
  get masters(): string[] {
    return this.#masters.map((m) => m.label);
  }

  /**
   * Milliseconds until each master's votes count again under the restart guard (0 = counting now),
   * in `nodes` order; all zeros when the guard is off.
   */
  get distrustedFor(): number[] {
    return this.#masters.map((_, i) => this.#guard?.distrustedFor(i) ?? 0);
  }

  /** Opens the connections the library owns, waiting up to `connectTimeout`; masters still down are retried in the background. */
  connect(): Promise<void> {
    return connectMasters(this.#masters, this.options.connectTimeout);
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
  acquire(resources: string | readonly string[], ttl: number | undefined, options: AcquireOptions & { onBusy: 'skip' }): Promise<Lock | undefined>;
  acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions & { onBusy?: 'wait' }): Promise<Lock>;
  acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock | undefined>;
  async acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock | undefined> {
    const names = this.checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    checkCallOptions(options);
    const hold = resolveHoldOptions(options, lockTtl, options?.autoExtend === true);
    const retry = resolveRetryOptions(this.options, this.retryOverrides(options, hold));
    let lock: Lock;
    try {
      lock = await this.acquireChecked(names, lockTtl, retry, options?.signal, false, options?.fencing ?? this.options.fencing);
    } catch (error) {
      if (hold.skip && error instanceof LockAcquisitionError && error.busy) return undefined;
      throw error;
    }
    if (options?.autoExtend) lock.renewWith(startRenewal(lock));
    this.limitHold(lock, hold);
    return lock;
  }

  /** With `onBusy: 'skip'`, `retryCount` defaults to 0: a busy lock is skipped at once. */
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
            lock.markLost(
              new LockLostError(
                lock.resources,
                `The lock on ${quote(lock.resources)} was held for \`maxHold\` (${maxHold} ms): renewal stopped and mutual exclusion is no longer guaranteed.`,
              ),
            );
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
  async tryAcquire(resources: string | readonly string[], ttl?: number): Promise<Lock | null> {
    const names = this.checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    try {
      return await this.acquireChecked(
        names,
        lockTtl,
        { retryCount: 0, retryDelay: 0, retryJitter: 0, acquireTimeout: undefined },
        undefined,
        true,
        this.options.fencing,
      );
    } catch (error) {
      if (error instanceof LockAcquisitionError && error.busy) return null;
      throw error;
    }
  }

  /**
   * Runs `fn` under the lock, renewing it while `fn` runs, and releases it on every master when `fn`
   * settles. Returns `fn`'s result; `fn`'s own errors pass through unchanged. If the lock was lost
   * while `fn` ran (see `lock.signal`), the call rejects with `LockLostError` after `fn` settles.
   * Reentrant: resources already held by an enclosing `using()` / `@Locked` in the same call chain
   * are not acquired again.
   *
   * @example
   * const seat = await redlock.using(`seat:${id}`, 2_000, async (lock) => sell(id, lock.signal));
   */
  using<T>(resources: string | readonly string[], ttl: number | undefined, fn: (lock: Lock) => Promise<T> | T, options: UsingOptions & { onBusy: 'skip' }): Promise<T | undefined>;
  using<T>(resources: string | readonly string[], ttl: number | undefined, fn: (lock: Lock) => Promise<T> | T, options?: UsingOptions & { onBusy?: 'wait' }): Promise<T>;
  using<T>(resources: string | readonly string[], ttl: number | undefined, fn: (lock: Lock) => Promise<T> | T, options?: UsingOptions): Promise<T | undefined>;
  async using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options?: UsingOptions,
  ): Promise<T | undefined> {
    const names = this.checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    if (typeof fn !== 'function') throw new RedlockConfigError('fn', `\`fn\` must be the function to run under the lock; got ${typeof fn}.`);
    checkCallOptions(options);
    const hold = resolveHoldOptions(options, lockTtl);
    const retry = resolveRetryOptions(this.options, this.retryOverrides(options, hold));

    const inherited = new Set<Lock>();
    const missing: string[] = [];
    for (const name of names) {
      const held = lockHeldInChain(this, this.options.keyPrefix + name);
      if (held) inherited.add(held);
      else missing.push(name);
    }
    if (missing.length === 0) {
      const [outer] = inherited;
      const result = await fn(outer);
      this.throwIfLost(inherited);
      return result;
    }

    let lock: Lock;
    try {
      lock = await this.acquireChecked(missing, lockTtl, retry, options?.signal, false, options?.fencing ?? this.options.fencing);
    } catch (error) {
      if (hold.skip && error instanceof LockAcquisitionError && error.busy) return undefined;
      throw error;
    }
    lock.renewWith(startRenewal(lock));
    this.limitHold(lock, hold);
    let result: T;
    try {
      result = await runWithLock(lock, () => fn(lock));
    } finally {
      await this.releaseLock(lock);
    }
    this.throwIfLost(inherited);
    if (lock.lostReason) throw lock.lostReason;
    return result;
  }

  /**
   * Campaigns for leadership of `resource` until resigned: tries to win a renewable lock on it, leads
   * while it can renew it, and tries again after losing it. A standby retries every `retryDelay`, and
   * at once when the leader releases (resigns or shuts down cleanly). `close()` resigns every campaign.
   *
   * @param resource The resource to lead (the key is `keyPrefix + resource`).
   * @throws RedlockConfigError naming a bad option; LockKeyError for an empty resource; RedlockError once closed.
   * @example
   * const leadership = redlock.lead('billing-poller', { ttl: 5_000 });
   * leadership.changes.subscribe((leading) => leading && poll(leadership.signal));
   * // later
   * await leadership.resign();
   */
  lead(resource: string, options?: LeadOptions): Leadership {
    if (typeof resource !== 'string') throw new LockKeyError(`\`resource\` must be a non-empty string; got ${Array.isArray(resource) ? 'an array' : typeof resource}.`);
    const [name] = this.checkResources(resource);
    const settings = resolveLeadOptions(this.options, options);
    if (this.#closing.signal.aborted) throw this.closedError();
    const leadership = new Leadership(this, name, settings);
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
    const list = typeof resources === 'string' ? [resources] : resources;
    if (!Array.isArray(list) || list.length === 0) {
      throw new LockKeyError('`resources` must be a non-empty resource name or a non-empty array of them.');
    }
    for (const [i, r] of list.entries()) {
      if (typeof r !== 'string' || r.length === 0) {
        throw new LockKeyError(`\`resources${typeof resources === 'string' ? '' : `[${i}]`}\` must be a non-empty string; got ${r === '' ? 'an empty string' : typeof r}.`);
      }
    }
    return list.length === 1 ? [list[0]] : [...new Set(list)];
  }

  private async acquireChecked(
    resources: string[],
    ttl: number,
    retry: ReturnType<typeof resolveRetryOptions>,
    signal: AbortSignal | undefined,
    single: boolean,
    fencing: boolean,
  ): Promise<Lock> {
    const closing = this.#closing.signal;
    const keys = resources.map((r) => this.options.keyPrefix + r);
    if (fencing && !this.options.fencing) checkFencingPrefix(this.options.keyPrefix, this.options.fencingPrefix);
    const counters = fencing ? resources.map((r) => this.options.fencingPrefix + r) : undefined;
    if (ttl > this.#largestTtl) this.#largestTtl = ttl;
    const timeout = commandTimeoutFor(ttl, this.options.commandTimeout);
    const deadline = retry.acquireTimeout === undefined ? Infinity : now() + retry.acquireTimeout;
    const ttlArg = String(ttl);
    // Waiters of this process queue per key (FIFO). While a waiter is not first in line, a wait that
    // ends without a wake-up is a turn spent queued, not an attempt: only the head polls, so waiters
    // do not split the votes of the one a release just woke; nor does the head while the lock is held
    // in this process, whose release wakes it directly. The last turn is always a real attempt.
    let ticket = retry.retryCount > 0 && this.#wakeups.isQueued(keys) ? this.#wakeups.join(keys) : undefined;
    let turns = 0;
    try {
      for (let mustWait = ticket !== undefined; ; mustWait = true) {
        if (mustWait) {
          const wait = Math.min(jitteredDelay(retry.retryDelay, retry.retryJitter), Math.max(0, deadline - now()));
          const woken = await ticket!.wait(wait, signal, closing);
          if (!woken && (!ticket!.isHead || this.heldHere(keys)) && turns < retry.retryCount && now() < deadline) {
            turns++;
            continue;
          }
        }
        signal?.throwIfAborted();
        if (closing.aborted) throw this.closedError();
        turns++;
        const value = randomBytes(16).toString('base64url');
        const start = now();
        const round = counters
          ? voteRound(
              this.#masters,
              this.quorum,
              timeout,
              (m) => m.scripts.quorumLockFencedAcquire(keys.length * 2, ...keys, ...counters, value, ttlArg, keys.length),
              (reply) => typeof reply === 'number' && reply >= 0,
              this.#trusts,
            )
          : keys.length === 1
            ? voteRound(
                this.#masters,
                this.quorum,
                timeout,
                (m) => m.client.set(keys[0], value, 'PX', ttlArg, 'NX'), // one key: no script needed
                (reply) => reply === 'OK',
                this.#trusts,
              )
            : voteRound(
                this.#masters,
                this.quorum,
                timeout,
                (m) => m.scripts.quorumLockAcquire(keys.length, ...keys, value, ttlArg),
                (reply) => reply === 1,
                this.#trusts,
              );
        let won = await round.decided;
        const lockWon = won;
        let token: number | undefined;
        if (won && counters) {
          const seen = Math.max(0, ...round.replies.map((r) => (typeof r === 'number' ? r : 0)));
          token = await issueFencingToken(this.#masters, this.options.fencingQuorum, timeout, counters, seen + 1, this.#trusts);
          won = token !== undefined;
        }
        const validUntil = validUntilOf(start, ttl, this.options.driftFactor);
        if (won && validUntil > now()) {
          const lock = new Lock(this, resources, keys, value, ttl, validUntil, token);
          if (signal?.aborted || closing.aborted) {
            void this.releaseKeys(keys, value, timeout, true);
            throw signal?.aborted ? signal.reason : this.closedError();
          }
          this.track(lock);
          return lock;
        }
        // Failed: release on ALL masters, the ones that said no or timed out included (silently: nothing was free).
        const released = this.releaseKeys(keys, value, timeout, false);
        const left = deadline - now();
        const outOfTime = left <= 0;
        if (turns > retry.retryCount || outOfTime || signal?.aborted || closing.aborted) {
          await Promise.all([released.settled, round.settled]);
          signal?.throwIfAborted();
          if (closing.aborted) throw this.closedError();
          const why = lockWon ? (won ? 'too-late' : 'fencing') : 'votes';
          throw this.acquisitionError(resources, turns, round.outcomes, why, retry, outOfTime && !single);
        }
        ticket ??= this.#wakeups.join(keys);
      }
    } finally {
      ticket?.leave();
    }
  }

  private track(lock: Lock): void {
    this.#held.add(lock);
    for (const key of lock.keys) this.#heldKeys.set(key, lock);
  }

  private untrack(lock: Lock): void {
    this.#held.delete(lock);
    for (const key of lock.keys) if (this.#heldKeys.get(key) === lock) this.#heldKeys.delete(key);
  }

  private heldHere(keys: readonly string[]): boolean {
    for (const key of keys) if (this.#heldKeys.get(key)?.isHeld) return true;
    return false;
  }

  private acquisitionError(
    resources: string[],
    attempts: number,
    outcomes: readonly (MasterOutcome | undefined)[],
    failure: 'votes' | 'too-late' | 'fencing',
    retry: ReturnType<typeof resolveRetryOptions>,
    outOfTime: boolean,
  ): LockAcquisitionError {
    const settled = outcomes.map((o, i) => o ?? { master: this.#masters[i].label, status: 'timeout' as const });
    const why =
      failure === 'too-late'
        ? 'the quorum was won too late: no validity was left (raise `ttl` or lower latency)'
        : failure === 'fencing'
          ? 'the lock was won but no quorum of masters took its fencing token'
          : `${this.quorum} of ${this.#masters.length} masters are needed; last attempt: ${describeOutcomes(settled, 'held by another holder')}`;
    const budget = outOfTime ? `within \`acquireTimeout\` (${retry.acquireTimeout} ms)` : `after ${attempts} attempt${attempts === 1 ? '' : 's'} (\`retryCount\` ${retry.retryCount})`;
    return new LockAcquisitionError(resources, attempts, settled, `Could not lock ${quote(resources)} ${budget}: ${why}.`);
  }

  /** Used by `Lock.extend()`. @internal */
  async extendLock(lock: Lock, ttl: number): Promise<void> {
    checkTtl(ttl);
    if (lock.lostReason) throw lock.lostReason;
    if (!lock.isHeld) {
      const reason = new LockLostError(lock.resources, `Cannot extend the lock on ${quote(lock.resources)}: it was released or its validity ended. A lapsed lock is never revived; acquire it again.`);
      lock.markLost(reason);
      throw reason;
    }
    if (ttl > this.#largestTtl) this.#largestTtl = ttl;
    const timeout = commandTimeoutFor(ttl, this.options.commandTimeout);
    const start = now();
    const round = voteRound(
      this.#masters,
      this.quorum,
      timeout,
      (m) => m.scripts.quorumLockExtend(lock.keys.length, ...lock.keys, lock.value, String(ttl)),
      (reply) => reply === 1,
      this.#trusts,
    );
    const won = await round.decided;
    const validUntil = validUntilOf(start, ttl, this.options.driftFactor);
    if (won && lock.isHeld && validUntil > now()) {
      lock.markExtended(validUntil, ttl);
      return;
    }
    const refused = round.outcomes.filter((o) => o?.status === 'refused').length;
    if (refused > this.#masters.length - this.quorum || !lock.isHeld) {
      const reason = new LockLostError(
        lock.resources,
        `The lock on ${quote(lock.resources)} was lost: ${refused > this.#masters.length - this.quorum ? `${refused} of ${this.#masters.length} masters no longer hold it` : 'its validity ended before a quorum extended it'}.`,
      );
      lock.markLost(reason);
      this.untrack(lock);
      throw reason;
    }
    throw new LockExtensionError(
      lock.resources,
      round.outcomes.map((o, i) => o ?? { master: this.#masters[i].label, status: 'timeout' as const }),
      `Could not extend the lock on ${quote(lock.resources)}: ${describeOutcomes(round.outcomes, 'no longer holding it')}. It stays valid for ${Math.round(lock.validity)} ms.`,
    );
  }

  /** Used by `Lock.release()`. @internal */
  async releaseLock(lock: Lock): Promise<void> {
    const wasHeld = lock.isHeld;
    if (!lock.markReleased()) return;
    this.untrack(lock);
    const limits = this.#limits.get(lock);
    if (limits) {
      clearTimeout(limits.maxHoldTimer);
      this.#limits.delete(lock);
      const left = Math.ceil(limits.minHoldUntil - now());
      if (wasHeld && left > 0) {
        // minHold: the keys already outlive `left` (minHold <= ttl, set or renewed since acquisition);
        // shorten them to end exactly then and let them lapse. A master that misses this keeps the longer TTL.
        await voteRound(
          this.#masters,
          this.quorum,
          commandTimeoutFor(lock.ttl, this.options.commandTimeout),
          (m) => m.scripts.quorumLockExtend(lock.keys.length, ...lock.keys, lock.value, String(left)),
          () => true,
        ).decided;
        return;
      }
    }
    await this.releaseKeys(lock.keys, lock.value, commandTimeoutFor(lock.ttl, this.options.commandTimeout), true).decided;
    for (const key of lock.keys) this.#wakeups.released(key, lock.value);
  }

  /**
   * Compare-and-delete on every master. Never rejects. With `announce`, each deleted key is
   * published on its release channel so that waiters elsewhere retry at once.
   */
  private releaseKeys(keys: readonly string[], value: string, timeout: number, announce: boolean): VoteRound {
    const args = [...keys, value, announce ? '1' : '0'];
    if (announce) for (const key of keys) args.push(releaseChannelOf(key));
    return voteRound(
      this.#masters,
      this.quorum,
      timeout,
      (m) => m.scripts.quorumLockRelease(keys.length, ...args),
      () => true,
    );
  }

  private closedError(): RedlockError {
    return new RedlockError('Redlock is closed (the application is shutting down); no new lock can be acquired.');
  }

  /**
   * Resigns every leadership, stops every renewal, aborts pending acquisitions, marks held locks lost (their signals abort),
   * releases them on every master within `commandTimeout`, then closes only the connections the
   * library opened. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    await Promise.all([...this.#leaderships].map((leadership) => leadership.resign()));
    this.#closing.abort(this.closedError());
    const held = [...this.#held];
    this.#held.clear();
    this.#heldKeys.clear();
    await Promise.all(
      held.map((lock) => {
        lock.markLost(new LockLostError(lock.resources, `The lock on ${quote(lock.resources)} was released because the application is shutting down.`));
        return this.releaseKeys(lock.keys, lock.value, this.options.commandTimeout, true).settled;
      }),
    );
    this.#wakeups.close();
    this.#guard?.dispose();
    closeMasters(this.#masters);
  }
}
