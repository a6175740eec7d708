import { inspect, type InspectOptions } from 'node:util';
import { LockLostError } from '../errors/lock-lost.error.js';
import { lossMarginOf, now } from '../util/clock.js';
import type { LockHandle } from './lock-handle.js';

/** What a `Lock` needs from the `Redlock` that issued it. */
export interface LockIssuer {
  extendLock(lock: Lock, ttl: number): Promise<void>;
  releaseLock(lock: Lock): Promise<void>;
  /** Told once when the lock is lost (for the `lost` channel and the log). */
  lockLost?(lock: Lock, reason: LockLostError): void;
  /** The lock as plain data for `adopt()` (its kind's state included). */
  toHandle(lock: Lock): LockHandle;
}

type LockState = 'held' | 'released' | 'lost';

/**
 * A lock's kind as this layer sees it: opaque. The kinds (`lib/kinds/lock-kind.ts`: the mutex, the
 * read lock, the counting lock) sit above this layer and implement it; the engine asks them. @internal
 */
export interface HeldKind {
  /** The kind's name: `mutex`, `read`, `permit`. */
  readonly name: string;
}

/**
 * What `JSON.stringify(lock)` and `console.log(lock)` show of a {@link Lock}: everything an operator
 * needs in a log line, never the lock's random value (which proves ownership on the masters).
 *
 * @example
 * logger.log(JSON.stringify({ event: 'charged', lock })); // {"lock":{"resources":["order:42"],"state":"held",…}}
 * @publicApi
 */
export interface LockJson {
  /** The resources the lock covers, without the key prefix. */
  readonly resources: readonly string[];
  /** `held`, `released` or `lost`. */
  readonly state: 'held' | 'released' | 'lost';
  /** Milliseconds of validity left when serialised (0 unless held). */
  readonly validity: number;
  /** The TTL the lock was last set with, ms. */
  readonly ttl: number;
  /** With fencing on. */
  readonly fencingToken?: number;
  /** Why it was lost (`LockLostError.reason`), when it was. */
  readonly lostReason?: LockLostError['reason'];
}

/**
 * A lock held on a quorum of masters. Get one from `RedlockService.acquire()` (or `tryAcquire`),
 * from the `using()` callback, or with `currentLock()` inside a `@Locked` method.
 *
 * `signal` aborts, with a `LockLostError` reason, before the lock's validity ends if it was not
 * renewed in time; pass it to work that must stop when mutual exclusion is no longer guaranteed.
 *
 * @example
 * await using lock = await redlock.acquire('invoice:42', 5_000);
 * await writeInvoice({ signal: lock.signal });
 * // released here, on every master
 * @publicApi
 */
export class Lock implements AsyncDisposable {
  #validUntil: number;
  #ttl: number;
  #state: LockState = 'held';
  #controller: AbortController | undefined;
  #lossTimer: NodeJS.Timeout | undefined;
  #lostReason: LockLostError | undefined;
  #stopRenewal: (() => void) | undefined;
  #releaseRequested = false;
  #releasing: Promise<void> | undefined;

  /** Creates the handle of a lock `issuer` has just won. @internal */
  static create(
    issuer: LockIssuer,
    kind: HeldKind,
    kindState: unknown,
    resources: readonly string[],
    keys: readonly string[],
    value: string,
    ttl: number,
    validUntil: number,
    fencingToken?: number,
  ): Lock {
    return new Lock(issuer, kind, kindState, resources, keys, value, ttl, validUntil, fencingToken);
  }

  /** Locks come from `Redlock` (`acquire`, `tryAcquire`, `using`), never from application code. */
  private constructor(
    private readonly issuer: LockIssuer,
    /** What kind of lock this is; the engine asks it for the rounds. @internal */
    readonly kind: HeldKind,
    /** The kind's state for this lock (a permit's limit and slot); undefined for the mutex and readers. @internal */
    readonly kindState: unknown,
    /** The resources this lock covers, without the key prefix. */
    readonly resources: readonly string[],
    /** The Redis keys (prefix + resource). @internal */
    readonly keys: readonly string[],
    /** The value (128 random bits, then `~` and the owner; after a handover prefixed with the ticket order) that identifies this holder on the masters. */
    readonly value: string,
    ttl: number,
    validUntil: number,
    /**
     * With fencing on: a number that strictly increases across successive holders of each of the
     * resources, even when a minority of masters fail. Send it with every write to the protected
     * resource, and have the resource refuse a token lower than the last it accepted.
     */
    readonly fencingToken?: number,
  ) {
    this.#ttl = ttl;
    this.#validUntil = validUntil;
  }

  /** The TTL the lock was last set with, in ms. */
  get ttl(): number {
    return this.#ttl;
  }

  /** Milliseconds of validity left (0 once lapsed, released or lost), on a monotonic clock. */
  get validity(): number {
    return this.#state === 'held' ? Math.max(0, this.#validUntil - now()) : 0;
  }

  /** True while the lock is neither released nor lost and its validity has not run out. */
  get isHeld(): boolean {
    return this.#state === 'held' && this.#validUntil > now();
  }

  /**
   * Aborts with a `LockLostError` when the lock can no longer be trusted: renewal failed, a majority
   * of masters no longer hold it, or its validity is about to end without renewal (5 % of the TTL
   * before, at least 2 ms). A normal `release()` does not abort it.
   *
   * Its state is also checked when read: once validity has ended, `signal.aborted`, `signal.reason`
   * and `signal.throwIfAborted()` show the loss even if no timer could run (a synchronous stall of
   * the event loop), so it never disagrees with `isHeld` and `validity`.
   */
  get signal(): AbortSignal {
    this.checkDeadline();
    if (!this.#controller) {
      const controller = new AbortController();
      this.#controller = controller;
      this.checkOnRead(controller.signal);
      if (this.#lostReason) controller.abort(this.#lostReason);
      else if (this.#state === 'held') this.armLossTimer();
    }
    return this.#controller.signal;
  }

  /** A lock whose validity has ended while nothing could run is lost now. */
  private checkDeadline(): void {
    if (this.#state === 'held' && this.#validUntil <= now()) this.expire();
  }

  /** Makes `signal`'s state computed on read: `aborted`, `reason` and `throwIfAborted()` check the deadline first. */
  private checkOnRead(signal: AbortSignal): void {
    const proto = AbortSignal.prototype;
    const check = (): void => this.checkDeadline();
    Object.defineProperties(signal, {
      aborted: {
        configurable: true,
        get: () => (check(), Reflect.get<AbortSignal, 'aborted'>(proto, 'aborted', signal)),
      },
      reason: { configurable: true, get: () => (check(), Reflect.get(proto, 'reason', signal) as unknown) },
      throwIfAborted: { configurable: true, writable: true, value: () => (check(), proto.throwIfAborted.call(signal)) },
    });
  }

  private expire(): void {
    this.markLost(this.#stopRenewal ? LockLostError.notRenewed(this.resources) : LockLostError.lapsed(this.resources));
  }

  /** The reason the lock was lost, or undefined. */
  get lostReason(): LockLostError | undefined {
    return this.#lostReason;
  }

  /**
   * Resets the lock's TTL on a quorum of masters (compare-and-pexpire). It succeeds only while the
   * lock is still valid here: a lapsed lock is never revived.
   *
   * @param ttl New TTL in ms (default: the lock's current TTL).
   * @throws LockLostError when the lock lapsed, was released, or a majority no longer holds it.
   * @throws LockExtensionError when no quorum answered in time (the lock stays valid until its old deadline).
   */
  extend(ttl: number = this.#ttl): Promise<void> {
    return this.issuer.extendLock(this, ttl);
  }

  /**
   * Deletes the keys on every master where they still hold this lock's value. Idempotent; never
   * throws, also when the lock has already expired (the keys then expire on their own).
   */
  release(): Promise<void> {
    return this.issuer.releaseLock(this);
  }

  /**
   * The lock as JSON, for logs: resources, state, validity, TTL, fencing token and why it was lost;
   * never its random value, its keys or the instance that issued it.
   *
   * @example
   * JSON.stringify(lock); // {"resources":["invoice:42"],"state":"held","validity":4987,"ttl":5000}
   */
  toJSON(): LockJson {
    this.checkDeadline();
    return {
      resources: this.resources,
      state: this.#state,
      validity: Math.round(this.validity),
      ttl: this.#ttl,
      ...(this.fencingToken === undefined ? {} : { fencingToken: this.fencingToken }),
      ...(this.#lostReason ? { lostReason: this.#lostReason.reason } : {}),
    };
  }

  /**
   * The lock as plain, JSON-safe data, for another process to finish the work with
   * `adopt(handle)` on the same masters (docs/portable-handles.md): resources, value, TTL, mode,
   * permit slot and fencing token. It carries the value that proves ownership: treat it as a secret.
   * This lock keeps working; either side may extend and release. Written whatever the lock's state:
   * adopting the handle of a lock the masters no longer hold rejects with `LockLostError` `'lapsed'`.
   *
   * @example
   * await queue.add('ship', { order: 42, lock: lock.toHandle() });
   */
  toHandle(): LockHandle {
    return this.issuer.toHandle(this);
  }

  /** `console.log(lock)` and `util.inspect(lock)` show what `toJSON()` does. */
  [inspect.custom](_depth: number, options: InspectOptions): string {
    return `Lock ${inspect(this.toJSON(), options)}`;
  }

  /** `await using lock = …` releases the lock at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** True when `issuer` granted this lock. @internal */
  isIssuedBy(issuer: LockIssuer): boolean {
    return this.issuer === issuer;
  }

  /** Hands the lock the function that stops its auto-renewal; release and loss call it. @internal */
  renewWith(stop: () => void): void {
    this.#stopRenewal = stop;
  }

  /** Records a successful extension. @internal */
  markExtended(validUntil: number, ttl: number): void {
    this.#validUntil = validUntil;
    this.#ttl = ttl;
    if (this.#lossTimer) this.armLossTimer();
  }

  /** True once `release()` was called. @internal */
  get releaseRequested(): boolean {
    return this.#releaseRequested;
  }

  /** The release under way on the masters, so that concurrent `release()` calls all wait for its quorum. @internal */
  get releasing(): Promise<void> | undefined {
    return this.#releasing;
  }

  /** Records the release under way (see `releasing`). @internal */
  set releasing(release: Promise<void>) {
    this.#releasing = release;
  }

  /** Marks the lock released; returns false when it already was. @internal */
  markReleased(): boolean {
    if (this.#releaseRequested) return false;
    this.checkDeadline(); // released after its validity ended (a stall): it was lost first
    this.#releaseRequested = true;
    if (this.#state === 'held') this.#state = 'released';
    this.#stopRenewal?.();
    clearTimeout(this.#lossTimer);
    this.#lossTimer = undefined;
    return true;
  }

  /** Marks the lock lost and aborts its signal (first reason wins). @internal */
  markLost(reason: LockLostError): void {
    if (this.#state !== 'held') return;
    this.#state = 'lost';
    this.#lostReason = reason;
    this.#stopRenewal?.();
    clearTimeout(this.#lossTimer);
    this.#lossTimer = undefined;
    this.#controller?.abort(reason);
    this.issuer.lockLost?.(this, reason);
  }

  /** Arms (or re-arms) the timer that aborts the signal before validity ends. @internal */
  armLossTimer(): void {
    clearTimeout(this.#lossTimer);
    const delay = this.#validUntil - lossMarginOf(this.#ttl) - now();
    const expire = (): void => {
      this.#lossTimer = undefined;
      this.expire();
    };
    if (delay <= 0) {
      this.#lossTimer = undefined;
      expire();
      return;
    }
    this.#lossTimer = setTimeout(expire, delay);
    this.#lossTimer.unref();
  }
}
