import { now } from '../util/clock.js';

/** How long a key counts as contended after a handover of it was last seen, ms. */
const CONTENDED_MS = 1_000;

/** How many contended keys are remembered at most (the oldest is forgotten first). */
const CONTENDED_KEYS = 1_024;

/**
 * The keys handed over lately: while waiters are queued on the masters, a newcomer takes its
 * ticket with its first attempt instead of a `SET NX` that a handed key refuses anyway
 * (docs/handoff.md §1).
 */
export class RecentHandovers {
  /** When a handover of each key was last seen (monotonic ms), oldest first. */
  readonly #at = new Map<string, number>();

  /** Notes that a release of `key` handed it to a queued waiter. */
  saw(key: string): void {
    this.#at.delete(key);
    this.#at.set(key, now());
    if (this.#at.size > CONTENDED_KEYS) this.#at.delete(this.#at.keys().next().value!);
  }

  /** True when a handover of `key` was seen within the last second. */
  contended(key: string): boolean {
    const at = this.#at.get(key);
    return at !== undefined && now() - at < CONTENDED_MS;
  }
}
