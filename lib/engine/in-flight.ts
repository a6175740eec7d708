import type { Master } from '../backend/master.js';
import type { MasterOutcome } from '../errors/outcomes.js';
import type { KindAttempt } from '../kinds/acquire-request.js';

/** An acquire attempt whose keys may be on the masters and that no lock owns yet (its kind made it). */
export interface InFlight extends KindAttempt {
  /** Its clean-up, once started. */
  cleanup?: Promise<void>;
}

/** Outcomes with a `timeout` for each master that has not answered. */
export function settledOutcomes(
  outcomes: readonly (MasterOutcome | undefined)[],
  masters: readonly Master[],
): MasterOutcome[] {
  return outcomes.map((o, i) => o ?? { master: masters[i].label, status: 'timeout' as const });
}

/** Waits for `work`, at most `ms` (for `close()`: nothing may hold it open indefinitely). */
export async function boundedWait(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * What one `Redlock` instance has under way on the masters: attempts no lock owns yet, clean-ups
 * (abandoned and failed attempts, tickets withdrawn), and acquisitions, which `close()` waits for.
 */
export class Attempts {
  readonly #inFlight = new Set<InFlight>();
  readonly #cleanups = new Set<Promise<void>>();
  /** Acquisitions under way, and who waits for them all to end (close()). */
  #acquiring = 0;
  #whenNoneAcquiring: (() => void)[] = [];

  /** Records an attempt sent, until a lock owns its keys (`owned`) or it is cleaned up. */
  add(attempt: InFlight): void {
    this.#inFlight.add(attempt);
  }

  /** A lock now owns the attempt's keys: nothing to clean up. */
  owned(attempt: InFlight): void {
    this.#inFlight.delete(attempt);
  }

  /**
   * Removes what an attempt may have written (by default: compare-and-delete on every master), sent
   * after the attempt's own commands on each connection, so it lands after them even on a master
   * that hangs now and answers later. Idempotent; never rejects; `close()` waits for it.
   */
  cleanUp(attempt: InFlight, release: () => Promise<void> = attempt.release): Promise<void> {
    this.#inFlight.delete(attempt);
    if (!attempt.cleanup) attempt.cleanup = this.track(release());
    return attempt.cleanup;
  }

  /** Cleans up every attempt still in flight (for `close()`). */
  cleanUpAll(): void {
    for (const attempt of [...this.#inFlight]) void this.cleanUp(attempt);
  }

  /** Records a clean-up under way (it never rejects), which `close()` waits for. */
  track(done: Promise<void>): Promise<void> {
    this.#cleanups.add(done);
    void done.then(() => this.#cleanups.delete(done));
    return done;
  }

  /** The clean-ups under way now. */
  cleanups(): Promise<void>[] {
    return [...this.#cleanups];
  }

  /** Records an acquisition under way; call `end()` once it has ended. */
  begin(): void {
    this.#acquiring++;
  }

  /** An acquisition recorded by `begin()` has ended. */
  end(): void {
    if (--this.#acquiring > 0) return;
    const waiting = this.#whenNoneAcquiring;
    this.#whenNoneAcquiring = [];
    for (const resolve of waiting) resolve();
  }

  /** Resolves once no acquisition is under way, or after `ms`. */
  acquisitionsEnded(ms: number): Promise<void> {
    if (this.#acquiring === 0) return Promise.resolve();
    return boundedWait(new Promise<void>((resolve) => this.#whenNoneAcquiring.push(resolve)), ms);
  }
}
