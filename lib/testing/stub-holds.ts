import { LockLostError } from '../errors/lock-lost.error.js';
import type { Lock } from '../lock/lock.js';
import type { ResolvedHoldOptions } from '../options/hold-options.js';
import { now } from '../util/clock.js';

/**
 * The locks the testing stand-in holds, as the masters would: the held ones, the released ones a
 * `minHold` still keeps on their resources (lingering) until it ends, and the `maxHold` timers.
 */
export class StubHolds {
  /** The locks held now (an adopted lock beside the one it was adopted from). */
  readonly held = new Set<Lock>();
  /** Released under `minHold`: still occupying their resources until the timer ends it. */
  readonly #lingering = new Map<Lock, NodeJS.Timeout>();
  /** `minHold` / `maxHold` of the held locks that have them. */
  readonly #limits = new Map<Lock, { minHoldUntil: number; maxHoldTimer?: NodeJS.Timeout }>();

  /** Records when `minHold` ends and arms `maxHold` (the lock is lost at that moment). */
  limit(lock: Lock, hold: ResolvedHoldOptions): void {
    if (hold.minHold === 0 && hold.maxHold === undefined) return;
    const maxHold = hold.maxHold;
    const maxHoldTimer =
      maxHold === undefined
        ? undefined
        : setTimeout(() => {
            lock.markLost(LockLostError.maxHold(lock.resources, maxHold));
            this.held.delete(lock);
          }, maxHold);
    maxHoldTimer?.unref();
    this.#limits.set(lock, { minHoldUntil: now() + hold.minHold, maxHoldTimer });
  }

  /** Releases `lock` and every `Lock` of its holder (the adopted ones), as on the masters; `minHold` keeps it lingering. */
  release(lock: Lock): void {
    const limits = this.#limits.get(lock);
    this.#limits.delete(lock);
    clearTimeout(limits?.maxHoldTimer);
    if (!lock.markReleased()) return;
    for (const held of [...this.held]) if (held.value === lock.value) this.held.delete(held);
    // minHold: the keys would lapse on the masters at that moment, not now.
    const left = (limits?.minHoldUntil ?? 0) - now();
    if (left > 0) {
      const timer = setTimeout(() => this.#lingering.delete(lock), left);
      timer.unref();
      this.#lingering.set(lock, timer);
    }
  }

  /** Every lock on `resource`, held or lingering; `revoke()` takes them all away. */
  onResource(resource: string): Lock[] {
    return [...this.held, ...this.#lingering.keys()].filter((l) => l.resources.includes(resource));
  }

  /** Forgets `lock` at once, lingering included (it was lost or revoked). */
  drop(lock: Lock): void {
    this.held.delete(lock);
    clearTimeout(this.#lingering.get(lock));
    this.#lingering.delete(lock);
  }

  /** One lock per holder (an adopted lock shares its value with the lock it was adopted from), lingering included. */
  occupying(): Lock[] {
    const seen = new Set<string>();
    return [...this.held, ...this.#lingering.keys()].filter((l) => !seen.has(l.value) && !!seen.add(l.value));
  }

  /** The holders occupying `resource`: what a new holder's kind is asked to admit. */
  holdersOf(resource: string): Lock[] {
    return this.occupying().filter((l) => l.resources.includes(resource));
  }

  /** Ends what `minHold` still keeps. */
  endLingering(): void {
    for (const timer of this.#lingering.values()) clearTimeout(timer);
    this.#lingering.clear();
  }

  /** Forgets everything (the locks were marked lost), timers included. */
  clear(): void {
    this.held.clear();
    for (const limits of this.#limits.values()) clearTimeout(limits.maxHoldTimer);
    this.#limits.clear();
    this.endLingering();
  }
}
