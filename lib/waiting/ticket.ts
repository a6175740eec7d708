import type { HandoverHeard } from '../kinds/mutex/handoff.js';
import { abortableSleep } from './sleep.js';

/** What a ticket asks of the queues it stands in (`KeyQueues`). */
export interface TicketQueues {
  positionOf(ticket: Ticket): number;
  isHead(ticket: Ticket): boolean;
  leave(ticket: Ticket): void;
}

/**
 * One waiter's place in the queues of the keys it wants. It keeps its place across attempts, so
 * wake-ups go to waiters in arrival order (FIFO) instead of to whoever polls first.
 */
export class Ticket {
  #resume: (() => void) | undefined;
  #wokenEarly = false;
  #check = false;
  /** Direct handovers to this waiter's ticket heard so far: master index -> the latest one's master time and arrival. */
  readonly handedAt = new Map<number, HandoverHeard>();

  constructor(
    private readonly queues: TicketQueues,
    readonly keys: readonly string[],
    /** The acquisition's arrival (wall-clock ms) and ticket id: the order of the masters' queues (docs/handoff.md). */
    readonly score = 0,
    readonly remoteId = '',
  ) {}

  /**
   * Sleeps until a release of one of the keys reaches this waiter, `ms` pass (the fallback, should
   * a message be lost), or a signal aborts (then rejects with its reason). Resolves to true when a
   * release woke it, false when the time ran out.
   */
  async wait(ms: number, ...signals: (AbortSignal | undefined)[]): Promise<boolean> {
    if (this.#wokenEarly) {
      this.#wokenEarly = false;
      await abortableSleep(0, signals);
      return true;
    }
    let woken = false;
    await abortableSleep(ms, signals, (wake) => {
      this.#resume = wake && (() => ((woken = true), wake()));
    });
    return woken;
  }

  /** This waiter's place in this process's queue (0 = first), the best over its keys. */
  get position(): number {
    return this.queues.positionOf(this);
  }

  /** True when this waiter is first in line for one of its keys. */
  get isHead(): boolean {
    return this.queues.isHead(this);
  }

  /**
   * Wakes the waiter now, or at its next `wait()` if it is busy with an attempt. A `check` is a
   * wake-up without a release seen (one may have been missed): it neither replaces a pending real
   * one nor counts as an attempt (`takeCheck`). @internal
   */
  wake(check = false): void {
    this.#check = check && !(this.#wokenEarly && !this.#check);
    if (this.#resume) this.#resume();
    else this.#wokenEarly = true;
  }

  /** True once after a wake-up that was only a check (see `wake`). @internal */
  takeCheck(): boolean {
    const check = this.#check;
    this.#check = false;
    return check;
  }

  /** True when a wake-up arrived while the waiter was busy and has not been used yet. @internal */
  get hasPendingWake(): boolean {
    return this.#wokenEarly;
  }

  /** Gives up the place in every queue. */
  leave(): void {
    this.queues.leave(this);
  }
}
