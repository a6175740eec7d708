import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { randomBytes } from 'node:crypto';
import { now } from '../util/clock.js';
import type { ResolvedRetryOptions } from '../options/redlock-options.js';
import type { HandoverHeard } from '../kinds/mutex/handoff.js';
import type { Ticket, Wakeups } from './wakeups.js';
import { abortableSleep } from './sleep.js';

/**
 * The retry policy, in one place: how many attempts an acquisition makes, how long it waits
 * between them, when it gives up, and how waiters of one process take turns.
 */

/** A wait of `delay ± jitter` ms, uniformly spread, never negative. */
export function jitteredDelay(delay: number, jitter: number): number {
  return Math.max(0, delay + (Math.random() * 2 - 1) * jitter);
}

/** The wait before retry number `attempt` (1 for the first retry): `retryDelay ± retryJitter`. */
export function retryWait(policy: Pick<ResolvedRetryOptions, 'retryDelay' | 'retryJitter'>, attempt: number): number {
  const { retryDelay, retryJitter } = policy;
  if (typeof retryDelay === 'number') return jitteredDelay(retryDelay, retryJitter);
  const delay = retryDelay(attempt);
  if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) {
    throw new RedlockConfigError(
      'retryDelay',
      `\`retryDelay\` must return a finite number of milliseconds >= 0; for attempt ${attempt} it returned ${String(delay)}.`,
    );
  }
  return jitteredDelay(delay, retryJitter);
}

/** What `AttemptBudget.bound` resolves to when the deadline passed first. */
export const OUT_OF_TIME: unique symbol = Symbol('out of time');

/** Where an acquisition queues: the keys it wants, in this process's queues. */
export interface AttemptQueue {
  readonly wakeups: Wakeups;
  readonly keys: readonly string[];
  /** True while the lock on one of the keys is held in this process (its release wakes the head directly). */
  heldHere(): boolean;
}

/**
 * One acquisition's budget: its attempts (`retryCount`), its deadline (`acquireTimeout`), the
 * jittered wait between attempts, the caller's `signal` and the instance's closing signal, and its
 * place in the queue of this process's waiters for the keys.
 *
 * Waiters of one process queue per key (FIFO). While a waiter is not first in line, a wait that
 * ends without a wake-up is a turn spent queued, not an attempt: only the head polls, so waiters
 * do not split the votes of the one a release just woke; nor does the head while the lock is held
 * in this process, whose release wakes it directly. A queued turn counts toward `retryCount` only
 * when the queue did not move during it (nobody ahead was served), and so does an attempt refused
 * while queued behind others on the masters (`behind`, docs/handoff.md): `retryCount` bounds a wait
 * during which the lock is not handed on, not the length of the queue. The last turn is always a real attempt.
 *
 * @example
 * const budget = new AttemptBudget(retry, queue, signal, closing);
 * try { for (;;) { await budget.nextAttempt(); if (await tryOnce()) return; if (budget.exhausted) throw …; } }
 * finally { budget.leave(); }
 */
export class AttemptBudget {
  /** Tries counted so far toward `retryCount` (turns during which the queue moved are not). */
  attempts = 0;
  /**
   * The id of this acquisition's ticket on the masters (docs/handoff.md): the handoff names it. It
   * begins with the instance's tag (`Wakeups.tag`), which picks the channel the handoff is sent on.
   */
  get remoteId(): string {
    // Drawn when first needed (a ticket, after a refusal): a lock nobody waits for never needs one.
    return (this.#remoteId ??= this.queue.wakeups.tag + randomBytes(12).toString('base64url'));
  }
  #remoteId: string | undefined;
  /** The acquisition's arrival, wall-clock ms: its place in the masters' queues. */
  readonly arrival = Date.now();
  #immediate: number | undefined;
  #atLeast = 0;
  /** The monotonic instant at which `acquireTimeout` runs out (Infinity without one). */
  readonly deadline: number;
  #ticket: Ticket | undefined;
  #started = false;
  /** The deadline timer of `bound` fired (see there). */
  #expired = false;
  /** The rank on the masters at the last refusal behind other tickets (see `behind`). */
  #rank: number | undefined;

  constructor(
    readonly policy: ResolvedRetryOptions,
    private readonly queue: AttemptQueue,
    private readonly signal: AbortSignal | undefined,
    private readonly closing: AbortSignal,
  ) {
    this.deadline = policy.acquireTimeout === undefined ? Infinity : now() + policy.acquireTimeout;
  }

  /**
   * The first attempt when it is due at once (no ticket, nobody of this process queued ahead, not
   * stopped): counted, and true with no promise made; false when `nextAttempt()` must be awaited.
   */
  startNow(): boolean {
    if (this.#started || this.#ticket || this.stopped) return false;
    if (this.policy.retryCount > 0 && this.queue.wakeups.isQueued(this.queue.keys)) return false;
    this.#started = true;
    this.attempts++;
    return true;
  }

  /**
   * Resolves when the next attempt is due: at once for a first attempt with nobody queued ahead,
   * otherwise after the jittered wait or a wake-up by a release. Rejects with the reason of the
   * caller's signal or of the closing instance.
   */
  async nextAttempt(): Promise<void> {
    const { policy, queue } = this;
    if (!this.#started) {
      this.#started = true;
      const ahead = this.#ticket ? !this.#ticket.isHead : queue.wakeups.isQueued(queue.keys);
      if (policy.retryCount > 0 && ahead) {
        if (!(await this.waitTurn(this.join()))) {
          this.throwIfStopped();
          return;
        }
      }
    } else {
      const ticket = this.join();
      if (this.#immediate !== undefined) {
        // a registration attempt, or the retry of a split vote: (nearly) at once, not counted
        const pause = Math.min(this.#immediate, Math.max(0, this.deadline - now()));
        this.#immediate = undefined;
        if (pause > 0) await abortableSleep(pause, [this.signal, this.closing]);
        this.throwIfStopped();
        return;
      }
      if (!(await this.waitTurn(ticket))) {
        this.throwIfStopped();
        return;
      }
    }
    this.throwIfStopped();
    this.attempts++;
  }

  /**
   * Takes this acquisition's place in the process's queue now, before an attempt that queues it on
   * the masters: a release that hands it the key right away names a waiter this process knows.
   * Returns that place (the same one on every call).
   */
  join(): Ticket {
    return (this.#ticket ??= this.queue.wakeups.join(this.queue.keys, this.arrival, this.remoteId));
  }

  /** Makes the next attempt at once (or after `pause` ms) and does not count it. */
  again(pause = 0): void {
    this.#immediate = pause;
  }

  /**
   * Makes the next wait last at least `ms` (unless a release wakes the waiter): for a waiter queued
   * behind others, whom a release will name when its turn comes.
   */
  waitAtLeast(ms: number): void {
    this.#atLeast = ms;
  }

  /** The attempt just made was a queued turn: the queue moved during it, so it does not count. */
  uncount(): void {
    if (this.attempts > 0) this.attempts--;
  }

  /**
   * The attempt just made was refused with `rank` live tickets ahead of this waiter on the masters
   * (docs/handoff.md). Like a queued turn it counts toward `retryCount` only when the queue did not
   * move since the previous such attempt (nobody ahead was served), so that every waiter's wait
   * ends after `retryCount` attempts during which the lock is not handed on.
   *
   * @example
   * if (rank > 0) budget.behind(rank); // 2 then 2: the second counts; 2 then 1: it does not
   */
  behind(rank: number): void {
    const moved = this.#rank !== undefined && rank < this.#rank;
    this.#rank = rank;
    if (moved) this.uncount();
  }

  /**
   * Sleeps until a wake-up or the jittered delay; a delay that ends while others are ahead is a
   * queued turn. Resolves to false when the attempt that follows does not count: a check after a
   * wake-up that may have been missed (`Ticket.wake`).
   */
  private async waitTurn(ticket: Ticket): Promise<boolean> {
    const { policy, queue } = this;
    let position = ticket.position;
    for (;;) {
      const delay = Math.max(retryWait(policy, Math.max(1, this.attempts)), this.#atLeast);
      this.#atLeast = 0;
      const wait = Math.min(delay, Math.max(0, this.deadline - now()));
      const woken = await ticket.wait(wait, this.signal, this.closing);
      if (woken && ticket.takeCheck()) {
        if (queue.heldHere()) continue; // held in this process: its release wakes this waiter
        return false;
      }
      if (woken || (ticket.isHead && !queue.heldHere()) || this.attempts >= policy.retryCount || now() >= this.deadline)
        return true;
      const moved = ticket.position < position; // somebody ahead was served: a turn of a moving queue
      position = ticket.position;
      if (!moved) this.attempts++;
    }
  }

  /**
   * Settles with `work`, or as soon as the caller's signal aborts or the instance closes (rejecting
   * with that reason) or the deadline passes (resolving to `OUT_OF_TIME`), whichever comes first:
   * a master that hangs cannot hold the caller past the budget. `work` itself goes on.
   */
  bound<T>(work: Promise<T>): Promise<T | typeof OUT_OF_TIME> {
    const { signal, closing } = this;
    const left = this.deadline - now();
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      if (closing.aborted) return reject(closing.reason);
      let timer: NodeJS.Timeout | undefined;
      const stop = (reason: unknown): void => {
        end();
        reject(reason);
      };
      const end = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        unwatch(closing, stop);
        if (signal) unwatch(signal, stop);
      };
      watch(closing, stop);
      if (signal) watch(signal, stop);
      const expire = (): void => {
        // A timer can fire up to a millisecond before the monotonic deadline (it counts whole ms):
        // the budget is out of time from here all the same, and its error names acquireTimeout.
        this.#expired = true;
        end();
        resolve(OUT_OF_TIME);
      };
      if (left !== Infinity) timer = setTimeout(expire, Math.max(0, left));
      work.then(
        (value) => (end(), resolve(value)),
        (error: unknown) => (end(), reject(error)),
      );
    });
  }

  /** True when the caller aborted or the instance is closing. */
  get stopped(): boolean {
    return this.signal?.aborted === true || this.closing.aborted;
  }

  /** Throws the caller's abort reason, or the closing instance's error. */
  throwIfStopped(): void {
    this.signal?.throwIfAborted();
    if (this.closing.aborted) throw this.closing.reason;
  }

  /** True when `acquireTimeout` has run out. */
  get outOfTime(): boolean {
    return this.#expired || this.deadline - now() <= 0;
  }

  /** True when no further attempt may be made: attempts, time or signals are used up. */
  get exhausted(): boolean {
    return this.attempts > this.policy.retryCount || this.outOfTime || this.stopped;
  }

  /** What ended the retries, for the error message: the timeout, or the retry count. */
  get spent(): { acquireTimeout: number } | { retryCount: number } {
    return this.outOfTime && this.policy.acquireTimeout !== undefined
      ? { acquireTimeout: this.policy.acquireTimeout }
      : { retryCount: this.policy.retryCount };
  }

  /** Direct handovers to this acquisition's ticket heard in release messages, per master index. */
  get handedAt(): ReadonlyMap<number, HandoverHeard> | undefined {
    return this.#ticket?.handedAt;
  }

  /** Gives up the place in the queue. */
  leave(): void {
    this.#ticket?.leave();
    this.#ticket = undefined;
  }
}

/**
 * The waits bound to each signal. One 'abort' listener per signal serves them all: an attempt adds
 * itself to a set instead of adding and removing an event listener, which costs more.
 */
const watchers = new WeakMap<AbortSignal, Set<(reason: unknown) => void>>();

function watch(signal: AbortSignal, stop: (reason: unknown) => void): void {
  let waits = watchers.get(signal);
  if (!waits) {
    const set = (waits = new Set());
    watchers.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        for (const wait of [...set]) wait(signal.reason);
        set.clear();
      },
      { once: true },
    );
  }
  waits.add(stop);
}

function unwatch(signal: AbortSignal, stop: (reason: unknown) => void): void {
  watchers.get(signal)?.delete(stop);
}
