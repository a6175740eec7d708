import { randomBytes } from 'node:crypto';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError, type LockLostReason } from '../errors/lock-lost.error.js';
import { quote } from '../errors/quote.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { now } from '../util/clock.js';
import { resolveHoldOptions } from '../options/hold-options.js';
import { Lock } from '../lock/lock.js';
import { enterChain } from '../lock/lock-context.js';
import { checkLockMode } from '../kinds/lock-mode.js';
import type { KindRequest } from '../kinds/lock-kind.js';
import { StubHolds } from './stub-holds.js';
import {
  checkCallOptions,
  checkTtl,
  resolveOptions,
  type RedlockOptions,
  type ResolvedRedlockOptions,
} from '../options/redlock-options.js';
import type { AcquireOptions, TryAcquireOptions, UsingOptions } from '../engine/call-spec.js';
import { checkAdoptOptions, type AdoptOptions } from '../engine/adopt.js';
import { checkLockHandle, handleOf } from '../engine/handle.js';
import type { LockHandle } from '../lock/lock-handle.js';
import { checkRevokeOptions, type RevokeOptions, type RevokeResult } from '../engine/revoke.js';
import { ownerOfValue } from '../options/owner.js';
import type { MasterOutcome } from '../errors/outcomes.js';

/** Stub locks do not lapse on their own (about 12 days); tests end them with `simulateLoss()`. */
const STUB_VALIDITY_MS = 2 ** 30;
const STUB_MASTERS = ['stub-a:6379', 'stub-b:6379', 'stub-c:6379'];

/** One acquisition the stand-in granted, in order (see `RedlockTestingService.acquisitions`). */
export interface StubAcquisition {
  readonly resources: readonly string[];
  readonly ttl: number;
}

/**
 * A Redis-free stand-in for `RedlockService`, for unit and e2e tests of an application. `@Locked`
 * methods, `using()`, `acquire()` and `tryAcquire()` run with real `Lock` handles: `currentLock()`
 * works inside them, reentrancy works (sibling calls of one holder take turns, as for real), and the
 * test can make a lock busy, unavailable or lost. The per-call options behave as with Redis:
 * `onBusy: 'skip'` resolves to `undefined` when busy, `minHold` keeps the resource busy after the work
 * until that long after the acquisition, `maxHold` loses the lock at that moment, `mode: 'read'`
 * locks share with each other and exclude writers, and `limit: n` admits up to `n` holders.
 * Provide it with `RedlockTestingModule.forRoot()` or `overrideRedlock(builder)`.
 *
 * @example
 * const redlock = new RedlockTestingService();
 * const app = await overrideRedlock(Test.createTestingModule({ imports: [AppModule] }), redlock).compile();
 * redlock.simulateBusy('order:7');            // another instance "holds" it: LockAcquisitionError, busy
 * redlock.simulateLoss('order:8');            // aborts the signal of the lock held on order:8
 * @publicApi
 */
export class RedlockTestingService {
  /** The options in force, defaults filled in (`nodes` are three names; nothing is connected). */
  readonly options: ResolvedRedlockOptions;
  /** As for three masters. */
  readonly quorum = 2;
  /** Every acquisition granted so far, oldest first. */
  readonly acquisitions: StubAcquisition[] = [];
  readonly #holds = new StubHolds();
  readonly #busy = new Set<string>();
  #unavailable: Error | undefined;

  /** @param options Any `Redlock` option except `nodes` (e.g. `keyPrefix`, `ttl`); they are checked as the real service checks them. */
  constructor(options: Omit<Partial<RedlockOptions>, 'nodes'> = {}) {
    // resolveOptions checks the options without connecting; the stand-in never opens a connection.
    this.options = {
      ...resolveOptions({ restartGuard: false, ...options, nodes: STUB_MASTERS.map((m) => `redis://${m}`) }),
    };
  }

  /** The stand-in's master labels. */
  get masters(): string[] {
    return [...STUB_MASTERS];
  }

  /** Always trusted: zeros. */
  get distrustedFor(): number[] {
    return STUB_MASTERS.map(() => 0);
  }

  /** The resources held right now, in acquisition order, including those a `minHold` keeps after their work ended. */
  get heldResources(): string[] {
    return this.#holds.occupying().flatMap((lock) => [...lock.resources]);
  }

  /** Makes `resource` held by "another instance" until `clearSimulations()`: acquisitions reject with a busy `LockAcquisitionError`, `tryAcquire` resolves to null. */
  simulateBusy(...resources: string[]): this {
    for (const r of resources) this.#busy.add(r);
    return this;
  }

  /** Makes every acquisition reject with a `LockAcquisitionError` whose `busy` is false (the masters unreachable), until `clearSimulations()`. */
  simulateUnavailable(error: Error = new Error('connect ECONNREFUSED (simulated by RedlockTestingService)')): this {
    this.#unavailable = error;
    return this;
  }

  /**
   * Loses the held locks covering `resource` (every held lock when omitted): their `signal`s abort
   * with a `LockLostError`, and a `@Locked` method or `using()` running under them rejects with it
   * after its work settles. `reason` is the error's `reason` (a majority of masters lost it, by
   * default). Returns how many locks were lost.
   */
  simulateLoss(resource?: string, reason: LockLostReason = 'majority-lost'): number {
    let lost = 0;
    for (const lock of [...this.#holds.held]) {
      if (resource !== undefined && !lock.resources.includes(resource)) continue;
      lock.markLost(new LockLostError(lock.resources, reason, 'simulated by RedlockTestingService'));
      this.#holds.held.delete(lock);
      lost++;
    }
    return lost;
  }

  /**
   * Takes `resource` away from whoever holds it here, as `RedlockService.revoke()` does on the
   * masters: each holder's `signal` aborts with `LockLostError` (reason `'revoked'`), what `minHold`
   * kept ends, and the resource is free at once.
   *
   * @example
   * const { revoked } = await redlock.revoke('nightly-report', { reason: 'stuck' });
   */
  async revoke(resource: string, options?: RevokeOptions): Promise<RevokeResult> {
    if (typeof resource !== 'string' || resource.length === 0)
      throw new LockKeyError('`resource` must be one non-empty resource name.');
    const why = checkRevokeOptions(options);
    const holders = this.#holds.onResource(resource);
    for (const lock of holders) {
      lock.markLost(LockLostError.revoked(lock.resources, why));
      this.#holds.drop(lock);
    }
    const holder = holders[0]?.value ?? null;
    return { revoked: holders.length > 0, holder, owner: ownerOfValue(holder) };
  }

  /** Ends `simulateBusy`, `simulateUnavailable` and what `minHold` still keeps, and forgets the recorded acquisitions. */
  clearSimulations(): void {
    this.#busy.clear();
    this.#unavailable = undefined;
    this.acquisitions.length = 0;
    this.#holds.endLingering();
  }

  /** Nothing to connect. */
  async connect(): Promise<void> {}

  /** Marks held locks lost, as the real service does at shutdown. */
  async close(): Promise<void> {
    for (const lock of [...this.#holds.held]) lock.markLost(LockLostError.shutdown(lock.resources));
    this.#holds.clear();
  }

  /** As `RedlockService.acquire`, without Redis: `undefined` with `onBusy: 'skip'` while the lock is busy. */
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
    const { names, lockTtl, kind } = this.#check(resources, ttl, options);
    const hold = resolveHoldOptions(options, lockTtl, options?.autoExtend === true);
    options?.signal?.throwIfAborted();
    let lock: Lock;
    try {
      lock = this.grant(names, lockTtl, kind);
    } catch (error) {
      if (hold.skip && error instanceof LockAcquisitionError && error.busy) return undefined;
      throw error;
    }
    this.#holds.limit(lock, hold);
    return lock;
  }

  /** As `RedlockService.tryAcquire`: null while `simulateBusy` covers a resource (or its holders fill it). */
  async tryAcquire(
    resources: string | readonly string[],
    ttl?: number,
    options?: TryAcquireOptions,
  ): Promise<Lock | null> {
    const { names, lockTtl, kind } = this.#check(resources, ttl, options);
    try {
      return this.grant(names, lockTtl, kind);
    } catch (error) {
      if (error instanceof LockAcquisitionError && error.busy) return null;
      throw error;
    }
  }

  /**
   * As `RedlockService.using`: runs `fn` under a stub lock (reentrant), then releases it. With
   * `onBusy: 'skip'`, resolves to `undefined` without running `fn` while the lock is busy.
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
    const { names, lockTtl, kind } = this.#check(resources, ttl, options, () => {
      if (typeof fn !== 'function')
        throw new RedlockConfigError('fn', `\`fn\` must be the function to run under the lock; got ${typeof fn}.`);
    });
    const hold = resolveHoldOptions(options, lockTtl);
    options?.signal?.throwIfAborted();
    // Reentrancy as for real: what the call chain holds is not acquired again; siblings take turns.
    const entered = enterChain(
      this,
      names,
      (name) => this.options.keyPrefix + name,
      (held, name) => kind.kind.covers(held, kind.state, name),
      { signal: options?.signal, skip: hold.skip },
    );
    const entry = entered instanceof Promise ? await entered : entered;
    if (!entry) return undefined; // onBusy 'skip': a sibling of this call chain has the turn
    let lock: Lock | undefined;
    if (entry.missing.length > 0) {
      try {
        lock = this.grant([...entry.missing], lockTtl, kind);
      } catch (error) {
        entry.leave();
        if (hold.skip && error instanceof LockAcquisitionError && error.busy) return undefined;
        throw error;
      }
      this.#holds.limit(lock, hold);
    }
    const own = lock;
    const result = await entry.run(own, fn, async () => {
      if (own) await this.releaseLock(own);
    });
    for (const held of entry.inherited) if (held.lostReason) throw held.lostReason;
    if (own?.lostReason) throw own.lostReason;
    return result;
  }

  /**
   * As `RedlockService.adopt`: a lock this stand-in holds (same value, same resources) is adopted as
   * the same holder, and a release on either side ends it for both (the other's `extend()` then
   * rejects with `'majority-lost'`). A handle of a lock not held rejects with `LockLostError`
   * (`'lapsed'`); a wrong shape with `RedlockConfigError` naming the field.
   */
  async adopt(handle: LockHandle, options?: AdoptOptions): Promise<Lock> {
    const { resources, value, fencingToken, ttl: handleTtl } = checkLockHandle(handle, this.options.keyPrefix);
    const { ttl } = checkAdoptOptions(options, handleTtl);
    const same = [...this.#holds.held].find(
      (l) =>
        l.value === value && l.resources.length === resources.length && resources.every((r, i) => l.resources[i] === r),
    );
    if (!same) throw new LockLostError(resources, 'lapsed', 'no lock held here has this value (RedlockTestingService)');
    const lock = Lock.create(
      this,
      same.kind,
      same.kindState,
      resources,
      same.keys,
      value,
      ttl,
      now() + STUB_VALIDITY_MS,
      fencingToken,
    );
    this.#holds.held.add(lock);
    return lock;
  }

  /** Used by `Lock.extend()`. @internal */
  async extendLock(lock: Lock, ttl: number): Promise<void> {
    if (lock.lostReason) throw lock.lostReason;
    if (!lock.isHeld) throw LockLostError.released(lock.resources);
    if (!this.#holds.held.has(lock)) {
      // Released by another `Lock` of the same holder (an adopted one): gone from the "masters".
      const reason = LockLostError.majorityLost(lock.resources, STUB_MASTERS.length, STUB_MASTERS.length);
      lock.markLost(reason);
      throw reason;
    }
    lock.markExtended(now() + STUB_VALIDITY_MS, ttl);
  }

  /** Used by `Lock.toHandle()`. @internal */
  toHandle(lock: Lock): LockHandle {
    return handleOf(lock);
  }

  /** Used by `Lock.release()`. @internal */
  async releaseLock(lock: Lock): Promise<void> {
    this.#holds.release(lock);
  }

  /** A call's resources, TTL and kind, checked as the real service checks them (`check` between TTL and options). */
  #check(
    resources: string | readonly string[],
    ttl: number | undefined,
    options: AcquireOptions | undefined,
    check?: () => void,
  ): { names: string[]; lockTtl: number; kind: KindRequest } {
    const names = checkResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    check?.();
    checkCallOptions(options);
    return { names, lockTtl, kind: checkLockMode(options, names.length) };
  }

  private grant(resources: string[], ttl: number, { kind, state }: KindRequest): Lock {
    const outcomes = (status: MasterOutcome['status'], error?: Error): MasterOutcome[] =>
      STUB_MASTERS.map((master) => ({ master, status, ...(error && { error }) }));
    if (this.#unavailable) {
      throw new LockAcquisitionError(
        resources,
        1,
        outcomes('error', this.#unavailable),
        `Could not lock ${quote(resources)}: the masters are unavailable (simulated by RedlockTestingService).`,
      );
    }
    const busy = resources.filter((r) => this.#busy.has(r));
    // Who stands in the way, as on real masters: the kind's own admit rule, asked of the holders here.
    const holds = this.#holds;
    const heldHere = resources.filter((r) => !this.#busy.has(r) && !kind.admits(holds.holdersOf(r), state, r));
    if (busy.length > 0 || heldHere.length > 0) {
      throw new LockAcquisitionError(
        resources,
        1,
        outcomes('refused'),
        `Could not lock ${quote(resources)}: ${quote([...busy, ...heldHere])} held by another holder (simulated by RedlockTestingService).`,
      );
    }
    const placed = kind.placeAmong?.(holds.holdersOf(resources[0]), state, resources[0]) ?? state;
    const lock = Lock.create(
      this,
      kind,
      placed,
      resources,
      resources.map((r) => this.options.keyPrefix + r),
      randomBytes(16).toString('base64url'),
      ttl,
      now() + STUB_VALIDITY_MS,
    );
    holds.held.add(lock);
    this.acquisitions.push({ resources: [...resources], ttl });
    return lock;
  }
}

function checkResources(resources: string | readonly string[]): string[] {
  const list = typeof resources === 'string' ? [resources] : resources;
  if (!Array.isArray(list) || list.length === 0 || list.some((r) => typeof r !== 'string' || r.length === 0)) {
    throw new LockKeyError('`resources` must be a non-empty resource name or a non-empty array of non-empty names.');
  }
  return [...new Set(list as string[])];
}
