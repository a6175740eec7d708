import { LockLostError } from '../errors/lock-lost.error.js';
import type { ResolvedHoldOptions } from '../options/hold-options.js';
import { kindOf } from '../kinds/lock-kind.js';
import type { Lock } from '../lock/lock.js';
import { now } from '../util/clock.js';

/** The limits of one renewed hold: when `minHold` ends, and the timer that ends it at `maxHold`. */
export interface HoldLimits {
  minHoldUntil: number;
  maxHoldTimer: NodeJS.Timeout | undefined;
}

/**
 * The shortest wait between two sweeps: locks lapsing a few ms apart are untracked together, so
 * that many held locks never make a sweep per lock, each over all of them.
 */
const SWEEP_GAP_MS = 50;

/**
 * The locks one `Redlock` instance holds: which lock holds each key here (a waiter need not poll a
 * lock held in its own process: its release wakes it), when each stops being tracked, and the
 * `minHold` / `maxHold` of the holds that have them.
 */
export class Holdings {
  readonly #held = new Set<Lock>();
  readonly #heldKeys = new Map<string, Lock>();
  /**
   * One timer for every held lock: it stops tracking those whose validity has lapsed (so an
   * unreleased lock is garbage), armed for the earliest lapse. A lock released in time costs no timer.
   */
  #sweep: NodeJS.Timeout | undefined;
  /** When the sweep fires (monotonic ms); Infinity when it is not armed. */
  #sweepAt = Infinity;
  readonly #limits = new WeakMap<Lock, HoldLimits>();

  /**
   * @param holding Called when a lock is tracked (the instance then follows revocations).
   * @param idle Called when the last tracked lock is gone.
   */
  constructor(
    private readonly holding: () => void = () => undefined,
    private readonly idle: () => void = () => undefined,
  ) {}

  /** Starts tracking a lock just won. */
  track(lock: Lock): void {
    this.#held.add(lock);
    this.holding();
    this.watchLapse(lock);
    if (!kindOf(lock).exclusive) return; // shared: holders here do not stop waiters here from polling
    for (const key of lock.keys) this.#heldKeys.set(key, lock);
  }

  /** Stops tracking a lock (released, lost, or closed). */
  untrack(lock: Lock): void {
    this.#held.delete(lock);
    if (this.#held.size === 0) this.idle();
    for (const key of lock.keys) if (this.#heldKeys.get(key) === lock) this.#heldKeys.delete(key);
  }

  /** Disarms the sweep (the instance is closing). */
  dispose(): void {
    clearTimeout(this.#sweep);
    this.#sweep = undefined;
    this.#sweepAt = Infinity;
  }

  /** True when a lock of this instance holds one of `keys` now. */
  heldHere(keys: readonly string[]): boolean {
    for (const key of keys) if (this.#heldKeys.get(key)?.isHeld) return true;
    return false;
  }

  /** Every lock tracked now. */
  all(): Lock[] {
    return [...this.#held];
  }

  /**
   * Arms `maxHold` (the signal aborts and renewal stops once the lock has been held that long) and
   * records when `minHold` ends (release then leaves the keys to lapse on the masters at that moment).
   */
  limitHold(lock: Lock, hold: ResolvedHoldOptions): void {
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

  /** The hold's limits, once: `maxHold` is disarmed and the limits forgotten. */
  takeLimits(lock: Lock): HoldLimits | undefined {
    const limits = this.#limits.get(lock);
    if (!limits) return undefined;
    clearTimeout(limits.maxHoldTimer);
    this.#limits.delete(lock);
    return limits;
  }

  /**
   * Stops tracking a lock once its validity has lapsed (an extension moves the check on), so that
   * a lock never released (`tryAcquire` and let it expire) does not stay reachable until `close()`:
   * the sweep is brought forward when this lock lapses before it.
   */
  private watchLapse(lock: Lock): void {
    const at = now() + Math.ceil(lock.validity) + 1;
    if (at < this.#sweepAt) this.armSweep(at);
  }

  private armSweep(at: number): void {
    clearTimeout(this.#sweep);
    this.#sweepAt = at;
    this.#sweep = setTimeout(() => this.sweep(), Math.max(0, at - now()));
    this.#sweep.unref();
  }

  /** Untracks the lapsed locks and arms the sweep for the next lapse (not sooner than SWEEP_GAP_MS). */
  private sweep(): void {
    this.#sweep = undefined;
    this.#sweepAt = Infinity;
    const at = now();
    let next = Infinity;
    for (const lock of this.#held) {
      if (!lock.isHeld) this.untrack(lock);
      else next = Math.min(next, at + Math.ceil(lock.validity) + 1);
    }
    if (next !== Infinity) this.armSweep(Math.max(next, at + SWEEP_GAP_MS));
  }
}
