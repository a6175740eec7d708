import { randomBytes } from 'node:crypto';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { LockLostError, type LockLostReason } from '../errors/lock-lost.error.js';
import { quote } from '../errors/quote.js';
import { RedlockError } from '../errors/redlock.error.js';
import { now } from '../core/clock.js';
import { Lock } from '../core/lock.js';
import { lockHeldInChain, runWithLock } from '../core/lock-context.js';
import { resolveOptions, type RedlockOptions, type ResolvedRedlockOptions } from '../core/options.js';
import type { AcquireOptions, TryAcquireOptions, UsingOptions } from '../core/redlock.js';
import { checkLockMode, type LockModeOptions, type RequestedShape } from '../core/lock-mode.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { MasterOutcome } from '../core/votes.js';

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
 * works inside them, reentrancy works, and the test can make a lock busy, unavailable or lost.
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
  readonly #held = new Set<Lock>();
  readonly #shapes = new WeakMap<Lock, RequestedShape>();
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

  /** The resources held right now, in acquisition order. */
  get heldResources(): string[] {
    return [...this.#held].flatMap((lock) => [...lock.resources]);
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
    for (const lock of [...this.#held]) {
      if (resource !== undefined && !lock.resources.includes(resource)) continue;
      lock.markLost(new LockLostError(lock.resources, reason, 'simulated by RedlockTestingService'));
      this.#held.delete(lock);
      lost++;
    }
    return lost;
  }

  /** Ends `simulateBusy` and `simulateUnavailable`, and forgets the recorded acquisitions. */
  clearSimulations(): void {
    this.#busy.clear();
    this.#unavailable = undefined;
    this.acquisitions.length = 0;
  }

  /** Nothing to connect. */
  async connect(): Promise<void> {}

  /** Marks held locks lost, as the real service does at shutdown. */
  async close(): Promise<void> {
    for (const lock of [...this.#held]) lock.markLost(LockLostError.shutdown(lock.resources));
    this.#held.clear();
  }

  /** As `RedlockService.acquire`, without Redis: `undefined` with `onBusy: 'skip'` while the lock is busy. */
  acquire(resources: string | readonly string[], ttl: number | undefined, options: AcquireOptions & { onBusy: 'skip' }): Promise<Lock | undefined>;
  acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions & { onBusy?: 'wait' }): Promise<Lock>;
  acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock | undefined>;
  async acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock | undefined> {
    options?.signal?.throwIfAborted();
    try {
      return this.grant(checkResources(resources), ttl ?? this.options.ttl, options);
    } catch (error) {
      if (options?.onBusy === 'skip' && error instanceof LockAcquisitionError && error.busy) return undefined;
      throw error;
    }
  }

  /** As `RedlockService.tryAcquire`: null while `simulateBusy` covers a resource, or while it is held here (readers share; `limit` holders share up to `limit`). */
  async tryAcquire(resources: string | readonly string[], ttl?: number, options?: TryAcquireOptions): Promise<Lock | null> {
    try {
      return this.grant(checkResources(resources), ttl ?? this.options.ttl, options);
    } catch (error) {
      if (error instanceof LockAcquisitionError && error.busy) return null;
      throw error;
    }
  }

  /**
   * As `RedlockService.using`: runs `fn` under a stub lock (reentrant), then releases it. With
   * `onBusy: 'skip'`, resolves to `undefined` without running `fn` while the lock is busy.
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
    const names = checkResources(resources);
    if (typeof fn !== 'function')
      throw new RedlockError(`\`fn\` must be the function to run under the lock; got ${typeof fn}.`);
    options?.signal?.throwIfAborted();
    const inherited = new Set<Lock>();
    const missing = names.filter((name) => {
      const held = lockHeldInChain(this, this.options.keyPrefix + name);
      if (held) inherited.add(held);
      return !held;
    });
    if (missing.length === 0) {
      const result = await fn([...inherited][0]);
      for (const lock of inherited) if (lock.lostReason) throw lock.lostReason;
      return result;
    }
    let lock: Lock;
    try {
      lock = this.grant(missing, ttl ?? this.options.ttl, options);
    } catch (error) {
      if (options?.onBusy === 'skip' && error instanceof LockAcquisitionError && error.busy) return undefined;
      throw error;
    }
    let result: T;
    try {
      result = await runWithLock(lock, () => fn(lock));
    } finally {
      await this.releaseLock(lock);
    }
    for (const held of inherited) if (held.lostReason) throw held.lostReason;
    if (lock.lostReason) throw lock.lostReason;
    return result;
  }

  /** Used by `Lock.extend()`. @internal */
  async extendLock(lock: Lock, ttl: number): Promise<void> {
    if (lock.lostReason) throw lock.lostReason;
    if (!lock.isHeld) throw LockLostError.released(lock.resources);
    lock.markExtended(now() + STUB_VALIDITY_MS, ttl);
  }

  /** Used by `Lock.release()`. @internal */
  async releaseLock(lock: Lock): Promise<void> {
    if (lock.markReleased()) this.#held.delete(lock);
  }

  private grant(resources: string[], ttl: number, options?: LockModeOptions): Lock {
    // Checked (and refused, naming the option) as the real service does, before anything else.
    const shape = checkLockMode(options, resources.length);
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
    const heldHere = resources.filter((r) => this.conflicts(r, shape));
    if (busy.length > 0 || heldHere.length > 0) {
      throw new LockAcquisitionError(
        resources,
        1,
        outcomes('refused'),
        `Could not lock ${quote(resources)}: ${quote([...busy, ...heldHere])} held by another holder (simulated by RedlockTestingService).`,
      );
    }
    const lock = Lock.create(
      this,
      resources,
      resources.map((r) => this.options.keyPrefix + r),
      randomBytes(16).toString('base64url'),
      ttl,
      now() + STUB_VALIDITY_MS,
    );
    this.#held.add(lock);
    this.#shapes.set(lock, shape);
    this.acquisitions.push({ resources: [...resources], ttl });
    return lock;
  }

  /** Whether a lock of `shape` on `resource` must wait for the holders here: readers share, `limit` holders share up to `limit`. */
  private conflicts(resource: string, shape: RequestedShape): boolean {
    const holders = [...this.#held].filter((lock) => lock.resources.includes(resource)).map((lock) => this.#shapes.get(lock));
    if (holders.length === 0) return false;
    if (shape?.kind === 'read') return holders.some((h) => h?.kind !== 'read');
    if (shape?.kind === 'permit') {
      if (holders.some((h) => h?.kind !== 'permit')) return true;
      const other = holders.find((h) => h?.kind === 'permit' && h.limit !== shape.limit);
      if (other?.kind === 'permit') {
        throw new RedlockConfigError(
          'limit',
          `\`limit\` ${shape.limit} differs from the limit ${other.limit} that the holders of ${JSON.stringify(resource)} use; every holder of a counting lock must use the same limit.`,
        );
      }
      return holders.length >= shape.limit;
    }
    return true;
  }
}

function checkResources(resources: string | readonly string[]): string[] {
  const list = typeof resources === 'string' ? [resources] : resources;
  if (!Array.isArray(list) || list.length === 0 || list.some((r) => typeof r !== 'string' || r.length === 0)) {
    throw new LockKeyError('`resources` must be a non-empty resource name or a non-empty array of non-empty names.');
  }
  return [...new Set(list as string[])];
}
