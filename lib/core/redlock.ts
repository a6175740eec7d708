import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockExtensionError } from '../errors/lock-extension.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { RedlockError } from '../errors/redlock.error.js';
import { inspect } from 'node:util';
import { commandTimeoutFor, driftOf, now, validUntilOf } from './clock.js';
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
import { Leadership, resolveLeadOptions, type Campaigner, type LeadOptions } from './leadership.js';
import { startRenewal } from './renewal.js';
import { RestartGuard } from './restart-guard.js';
import { resolveLogger, type RedlockLogger } from './logger.js';
import { MasterMonitor, type MasterState } from './master-monitor.js';
import { secretsOf } from './redact.js';
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
export interface AcquireOptions extends RetryOptions {
  /** Gives up waiting when this signal aborts; the acquisition rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** `acquire()` only: renew the lock automatically until it is released (as `using()` does). @default false */
  autoExtend?: boolean;
  /** Issue a fencing token with this lock (`lock.fencingToken`). @default the `fencing` option */
  fencing?: boolean;
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
    this.#wakeups = new Wakeups(this.#masters, this.options.wakeOnRelease);
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
   * in `nodes` order; all zeros when the guard is off.
   */
  get distrustedFor(): number[] {
    return this.#masters.map((_, i) => this.#guard?.distrustedFor(i) ?? 0);
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
    const timeout = options.timeout === undefined ? (this.options.restartGuard ? ttl + driftOf(ttl, this.options.driftFactor) : 0) + this.options.connectTimeout : checkTtl(options.timeout, 'timeout');
    const deadline = now() + timeout;
    for (;;) {
      options.signal?.throwIfAborted();
      if (this.#closing.signal.aborted) throw this.closedError();
      const states = this.#monitor.states();
      if (states.filter((m) => m.trusted).length >= this.quorum) return;
      const left = deadline - now();
      if (left <= 0) {
        const why = states
          .filter((m) => !m.trusted)
          .map((m) => `${m.label} ${m.distrust ?? 'not counted'}${m.distrust === 'unreachable' ? (m.lastError ? ` (${m.lastError})` : '') : m.distrustedFor ? ` for ${m.distrustedFor} ms more` : ''}`)
          .join(', ');
        throw new RedlockError(`Fewer than ${this.quorum} of ${states.length} masters count after ${timeout} ms: ${why}.`);
      }
      await new Promise<void>((resolve) => setTimeout(resolve, Math.min(25, left)).unref());
    }
  }

  /**
   * Opens the connections the library owns, waiting up to `connectTimeout` (masters still down are
   * retried in the background), reads each master's `INFO`, and logs what an operator should know.
   *
   * @throws RedlockConfigError naming the node when two nodes are the same Redis server, or a master's
   * `maxmemory-policy` can evict lock keys (unless `allowEvictingMasters`).
   */
  async connect(): Promise<void> {
    const start = now();
    await connectMasters(this.#masters, this.options.connectTimeout);
    await this.#monitor.settled(Math.max(100, this.options.connectTimeout - (now() - start)));
    this.#monitor.connected(this.quorum);
  }

  /** JSON without secrets: the masters' labels and the options other than `nodes`. */
  toJSON(): Record<string, unknown> {
    const { nodes: _nodes, logger: _logger, ...options } = this.options;
    return { masters: this.masters, quorum: this.quorum, options };
  }

  /** `console.log(redlock)` shows no password. @internal */
  [inspect.custom](): string {
    return `Redlock ${inspect(this.toJSON(), { depth: 3 })}`;
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
  async acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock> {
    const names = this.checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    checkCallOptions(options);
    const retry = resolveRetryOptions(this.options, options);
    const lock = await this.acquireChecked(names, lockTtl, retry, options?.signal, false, options?.fencing ?? this.options.fencing);
    if (options?.autoExtend) lock.renewWith(startRenewal(lock));
    return lock;
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
  async using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options?: Omit<AcquireOptions, 'autoExtend'>,
  ): Promise<T> {
    const names = this.checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    if (typeof fn !== 'function') throw new RedlockConfigError('fn', `\`fn\` must be the function to run under the lock; got ${typeof fn}.`);
    checkCallOptions(options);
    const retry = resolveRetryOptions(this.options, options);

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

    const lock = await this.acquireChecked(missing, lockTtl, retry, options?.signal, false, options?.fencing ?? this.options.fencing);
    lock.renewWith(startRenewal(lock));
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
    if (!lock.markReleased()) return;
    this.untrack(lock);
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
    this.#monitor.dispose();
    closeMasters(this.#masters);
  }
}
