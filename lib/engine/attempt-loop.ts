import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import type { HandoffTicket, RoundContext, RoundResult } from '../kinds/acquire-request.js';
import type { KindRequest } from '../kinds/lock-kind.js';
import {
  claimWaitOf,
  HandoverLedger,
  handoverValue,
  rankOf,
  shouldYield,
  withdrawTicket,
  yieldHandover,
} from '../kinds/mutex/handoff.js';
import { Lock, type LockIssuer } from '../lock/lock.js';
import { checkFencingPrefix, type ResolvedRetryOptions } from '../options/redlock-options.js';
import { noteAttempt } from '../ops/diagnostics.js';
import { cachedOwnerSuffix, ownerIn } from '../options/owner.js';
import type { VoteRound } from '../quorum/vote-round.js';
import { commandTimeoutFor, now, validUntilOf } from '../util/clock.js';
import { randomToken } from '../util/random-token.js';
import { AttemptBudget, OUT_OF_TIME, type AttemptQueue } from '../waiting/attempt-budget.js';
import type { Wakeups } from '../waiting/wakeups.js';
import type { EngineState } from './engine-state.js';
import { settledOutcomes, type InFlight } from './in-flight.js';

/** How an acquisition is to acquire. */
export interface AttemptOptions {
  /** The retry policy in force (module options merged with the call's). */
  readonly retry: ResolvedRetryOptions;
  /** The caller's signal. */
  readonly signal?: AbortSignal;
  /** Issue a fencing token. */
  readonly fencing: boolean;
  /** The kind of lock and the state it asks for (the mutex, a read lock, a permit of `limit`). */
  readonly kind: KindRequest;
  /** The per-call `owner`, if any (else the `owner` option). */
  readonly owner?: string;
}

/** Split votes in a row retried at once (after a short random pause) before the normal retry delay. */
const MAX_SPLIT_RETRIES = 5;
/** The longest random pause before retrying a split vote, ms: a few round trips on a LAN. */
const SPLIT_PAUSE_MS = 5;

/**
 * The attempt loop: an acquire round per attempt, under the attempt budget (retry policy,
 * deadline, signals, queue), until a lock is won with validity left or the budget is spent.
 * `connect` connects the instance when it was not yet (within the budget).
 */
export function acquireLock(
  state: EngineState,
  issuer: LockIssuer,
  connect: () => Promise<void>,
  resources: string[],
  ttl: number,
  options: AttemptOptions,
): Promise<Lock> {
  return new Acquisition(state, issuer, resources, ttl, options).run(connect);
}

/**
 * One acquisition: its keys, its budget, and what it knows of its place in the masters' queues. It is
 * its budget's queue too (`AttemptQueue`): no object per acquisition for that.
 */
class Acquisition implements AttemptQueue {
  readonly #keys: string[];
  /** This process's waiters and release messages (`AttemptQueue`). */
  readonly wakeups: Wakeups;
  /** The keys it acquires (`AttemptQueue`). */
  readonly keys: readonly string[];
  readonly #counters: string[] | undefined;
  readonly #context: RoundContext;
  readonly #budget: AttemptBudget;
  /** Handoff between instances (docs/handoff.md): after a first refusal, queue with a ticket on the masters. */
  readonly #queues: boolean;
  /** A waiting writer's id: it holds off new readers while it waits. */
  #writer: string | undefined;
  #ticket: HandoffTicket | undefined;
  /** What the waiter knows of handovers to its ticket: built with the ticket, so a key nobody waits for pays nothing. */
  #ledger: HandoverLedger | undefined;
  #splits = 0;
  #won = false;
  #lastRound: VoteRound | undefined;
  /** The end of every value this acquisition writes: the owner rides in the value (options/owner.ts). */
  readonly #owned: string;

  constructor(
    private readonly state: EngineState,
    private readonly issuer: LockIssuer,
    private readonly resources: string[],
    private readonly ttl: number,
    private readonly options: AttemptOptions,
  ) {
    const { keyPrefix, fencingPrefix } = state.options;
    this.#keys = resources.map((r) => keyPrefix + r);
    if (options.fencing && !state.options.fencing) checkFencingPrefix(keyPrefix, fencingPrefix);
    this.#counters = options.fencing ? resources.map((r) => fencingPrefix + r) : undefined;
    state.noteTtl(ttl);
    this.#owned = cachedOwnerSuffix(ownerIn(state.options, options.owner));
    this.#context = state.roundContext(commandTimeoutFor(ttl, state.options.commandTimeout));
    const keys = this.#keys;
    this.wakeups = state.wakeups;
    this.keys = keys;
    this.#budget = new AttemptBudget(options.retry, this, options.signal, state.closing.signal);
    this.#queues = options.kind.kind.queues(keys) && options.retry.retryCount > 0;
    // Waiters are queued on the masters already: take a place with the first attempt.
    if (this.#queues && state.wakeups.contended(keys[0])) this.takeTicket();
  }

  /** True while the lock on one of the keys is held in this process (`AttemptQueue`). */
  heldHere(): boolean {
    return this.state.holdings.heldHere(this.#keys);
  }

  async run(connect: () => Promise<void>): Promise<Lock> {
    // close() waits for this acquisition's end (its withdrawal is then under way) before it closes connections.
    this.state.attempts.begin();
    try {
      // Used before connect(): connect now, within the budget (masters still down keep reconnecting).
      if (!this.state.connected) await this.#budget.bound(connect());
      for (;;) {
        if (!this.#budget.startNow()) await this.#budget.nextAttempt();
        const lock = this.handedOver() ?? (await this.attempt());
        if (lock) return lock;
      }
    } finally {
      this.leave();
      this.state.attempts.end();
    }
  }

  /** One attempt: the lock when it was won (or handed over meanwhile), else undefined to try again. */
  private async attempt(): Promise<Lock | undefined> {
    const ticket = this.#ticket;
    const value = ticket?.handover?.value ?? randomToken() + this.#owned;
    if (ticket) {
      ticket.lease = ticketLease(this.options.retry, this.#context.timeout);
      // A waiter that did not hear back in time from a quorum in its last round claims nothing
      // (docs/handoff.md §4): else, slower than commandTimeout, it regained its claim at every
      // attempt that found the key taken and held the key back from the others again and again.
      const late = this.#lastRound && heardLate(this.#lastRound, this.state.masters.length, this.state.quorum);
      ticket.claim = late ? 0 : claimWindow(this.options.retry, this.#context.timeout);
    }
    const { resources, ttl } = this;
    const request = { keys: this.#keys, counters: this.#counters, value, ttl, ticket };
    const { kind, state } = this.options.kind;
    const attempt = kind.acquire(this.#context, request, state);
    this.state.attempts.add(attempt);
    // The caller's signal, close() and acquireTimeout end the wait at once, even while masters
    // hang; the attempt's keys are then removed in the background (close() waits for that).
    const result = await this.#budget.bound(attempt.result).catch((stop: unknown) => {
      void this.state.attempts.cleanUp(attempt);
      throw stop;
    });
    if (result === OUT_OF_TIME) {
      void this.state.attempts.cleanUp(attempt);
      // The deadline cut this round short: masters not heard yet did not time out, so the last round
      // every master answered says why (a holder, or Redis trouble), and `busy` reads it.
      const current = attempt.outcomes();
      const cut = current.some((o) => o === undefined) && this.#lastRound !== undefined;
      throw LockAcquisitionError.of({
        resources,
        attempts: this.#budget.attempts,
        outcomes: settledOutcomes(cut ? this.#lastRound!.outcomes : current, this.state.masters),
        reason: 'timeout',
        budget: this.#budget.spent,
      });
    }
    this.#lastRound = result.round;
    noteAttempt(this.#budget.attempts, result.start, result.round.outcomes);
    const validUntil = validUntilOf(result.start, ttl, this.state.options.driftFactor);
    if (result.outcome === 'granted' && validUntil > now()) return this.win(attempt, result, value, validUntil);
    // Failed: release on ALL masters, the ones that said no or timed out included (silently: nothing was free).
    const released = this.state.attempts.cleanUp(attempt);
    return (await this.afterFailure(result)) ?? (await this.giveUpOrContinue(result, released));
  }

  /** A quorum granted in time: the lock, tracked; others of this process queued on a shared lock are told. */
  private win(attempt: InFlight, result: RoundResult, value: string, validUntil: number): Lock {
    const { kind } = this.options.kind;
    const lock = this.newLock(value, result.state, validUntil, result.token);
    if (this.#budget.stopped) {
      void this.state.attempts.cleanUp(
        attempt,
        () => kind.release(this.state, lock, this.#context.timeout, true).settled,
      );
      this.#budget.throwIfStopped();
    }
    this.state.attempts.owned(attempt);
    this.state.holdings.track(lock);
    this.#won = true;
    this.#ledger?.note(result.start, result.round.replies);
    // Others of this process queued behind a shared lock may share it too: pass the wake-up on
    // (not with the value: the holder's own release must still wake).
    if (result.roomLeft) for (const key of this.#keys) this.state.wakeups.released(key, `${value}:granted`);
    return lock;
  }

  /** The `Lock` of a grant: this acquisition's kind, with the state the grant gave (a permit's slot). */
  private newLock(value: string, state: unknown, validUntil: number, token?: number): Lock {
    const { issuer, resources, ttl } = this;
    return Lock.create(issuer, this.options.kind.kind, state, resources, this.#keys, value, ttl, validUntil, token);
  }

  /** After a failed attempt: a handover heard meanwhile wins; else the waiter's place in the queue is updated. */
  private async afterFailure(result: RoundResult): Promise<Lock | undefined> {
    const ticket = this.#ticket;
    if (ticket?.handover && this.#ledger) {
      this.#ledger.note(result.start, result.round.replies);
      const handed = this.handedOver();
      if (handed) return handed;
      if (shouldYield(result.round.replies)) {
        // A split handover: the masters' queues differed for a moment (a ticket registered while
        // the release ran). The waiter behind gives its masters on to the first ticket.
        // What it knew no longer holds where a master gave its key on (late messages could be stale).
        const gave = await this.#budget.bound(
          yieldHandover(this.state.masters, this.#keys[0], ticket, this.#context.timeout),
        );
        if (gave !== false) this.#ledger.reset();
      }
    }
    if (this.#queues && result.outcome === 'votes' && !this.#budget.exhausted) await this.queueAfterRefusal(result);
    return undefined;
  }

  /** Refused: take a ticket, retry a split vote soon, or wait behind the live waiters ahead. */
  private async queueAfterRefusal(result: RoundResult): Promise<void> {
    const ticket = this.#ticket;
    if (!ticket) {
      // Refused by a plain SET NX: take a place in the masters' queue at once (not counted).
      this.takeTicket();
      this.#budget.again();
    } else if (this.#splits < MAX_SPLIT_RETRIES && (await this.splitVote(result.round))) {
      // A split vote (some masters granted, others refused, no quorum): nobody holds the lock,
      // so retry after a short random pause instead of a full retryDelay. The retry is not
      // counted; the attempt that split was, so that splits alone can never retry forever.
      this.#splits++;
      this.#budget.again(Math.random() * SPLIT_PAUSE_MS);
    } else {
      // Refused while queued behind other live waiters: counted only while the queue does not
      // move, so that `retryCount` bounds the time the lock is not handed on, for every waiter.
      this.#splits = 0;
      const rank = rankOf(result.round.replies, this.state.quorum);
      if (rank !== undefined && rank > 0) {
        this.#budget.behind(rank);
        // Releases hand the key on in ticket order and name the ticket (docs/handoff.md §3):
        // a waiter behind others need not poll, only renew its ticket before the lease lapses,
        // or come back when the key can be its own (the key expires, or the claim ahead lapses).
        // Not without pub/sub (nothing would name it), nor while it holds part of a split (§6).
        const granted = result.round.outcomes.some((o) => o?.status === 'granted');
        const soonest = claimWaitOf(result.round.replies, this.state.quorum) ?? Infinity;
        if (this.state.options.wakeOnRelease && !granted)
          this.#budget.waitAtLeast(Math.min(ticket.lease / 3, soonest + 5));
      }
    }
  }

  /** A permit limit that differs from the holders', writer preference, and the end of the budget. */
  private async giveUpOrContinue(result: RoundResult, released: Promise<void>): Promise<undefined> {
    if (result.refusal) {
      await released;
      throw result.refusal(this.resources);
    }
    const { kind } = this.options.kind;
    if (
      kind.holdOff &&
      !this.#ticket &&
      !this.#budget.exhausted &&
      !heardLate(result.round, this.state.masters.length, this.state.quorum)
    ) {
      // Writer preference: a waiting writer holds off new readers, for a little longer than its
      // next attempt. A queued writer's live ticket does that already (read-acquire.lua). A writer
      // that did not hear back in time from a quorum cannot win: it holds nobody off (as a late
      // ticket claims nothing), else readers waited for as long as it retried.
      this.#writer ??= randomToken();
      const { retryDelay, retryJitter } = this.options.retry;
      const between = typeof retryDelay === 'number' ? retryDelay : 1_000;
      const { timeout } = this.#context;
      kind.holdOff(this.#context, this.#keys, this.#writer, 2 * (between + retryJitter) + 2 * timeout + 50);
    }
    if (!this.#budget.exhausted) return undefined;
    const spent = this.#budget.spent;
    await this.#budget.bound(Promise.all([released, result.round.settled])); // every outcome, unless time is up
    this.#budget.throwIfStopped();
    throw LockAcquisitionError.of({
      resources: this.resources,
      attempts: this.#budget.attempts,
      outcomes: settledOutcomes(result.round.outcomes, this.state.masters),
      reason: result.outcome === 'granted' ? 'too-late' : result.outcome,
      budget: spent,
    });
  }

  /** Takes a place in the masters' queue (not counted as an attempt). */
  private takeTicket(): void {
    const budget = this.#budget;
    // Not fenced: the release may hand the key straight to this ticket's value (docs/handoff.md §3).
    const random = randomToken() + this.#owned;
    const handover = this.#counters
      ? undefined
      : { value: handoverValue(budget.remoteId, budget.arrival, random), ttl: this.ttl };
    if (handover) this.#ledger = new HandoverLedger();
    this.#ticket = { id: budget.remoteId, score: budget.arrival, lease: 0, claim: 0, handover };
    budget.join();
  }

  /**
   * A quorum of masters handed the key to this waiter's ticket in their release (docs/handoff.md §3):
   * the lock is held without an attempt of its own.
   */
  private handedOver(): Lock | undefined {
    const ticket = this.#ticket;
    if (!ticket?.handover || !this.#ledger) return undefined;
    const { state, ttl } = this;
    const trusted = (i: number): boolean => state.trusts(i) === true;
    const until = this.#ledger.validUntil(this.#budget.handedAt, state.quorum, trusted, ttl, state.options.driftFactor);
    if (until === undefined || until <= now()) return undefined;
    const { kind, state: kindState } = this.options.kind;
    const lock = this.newLock(ticket.handover.value, kindState, until);
    if (this.#budget.stopped) {
      void kind.release(state, lock, this.#context.timeout, true).settled;
      this.#budget.throwIfStopped();
    }
    state.holdings.track(lock);
    this.#won = true;
    return lock;
  }

  /**
   * True when, once every master answered (within the budget), some granted and some refused but
   * fewer than a quorum granted: contenders split the votes. Masters that failed or timed out are
   * Redis trouble, not a split, and wait a full retry delay.
   */
  private async splitVote(round: VoteRound): Promise<boolean> {
    if ((await this.#budget.bound(round.settled)) === OUT_OF_TIME) return false;
    return (
      round.outcomes.some((o) => o?.status === 'granted') &&
      round.outcomes.some((o) => o?.status === 'refused') &&
      round.outcomes.every((o) => o?.status === 'granted' || o?.status === 'refused')
    );
  }

  /** Won or gave up: stop holding readers off, and leave every master's queue. */
  private leave(): void {
    const { state } = this;
    const handedAt = this.#budget.handedAt;
    this.#budget.leave();
    if (this.#writer) this.options.kind.kind.stopHoldingOff?.(this.#context, this.#keys, this.#writer);
    const ticket = this.#ticket;
    if (!ticket) return;
    // Sent before this holder's release on each connection; a waiter that gave up also drops its
    // value where a release already handed it over.
    const givenUp = this.#won ? '' : (ticket.handover?.value ?? '');
    // A winner's ticket has left the queue of each master that handed it the key: not sent there.
    const queued = this.#won && this.#ledger ? this.#ledger.mayBeQueued(handedAt, state.masters.length) : undefined;
    const masters = queued ? state.masters.filter((_, i) => queued[i]) : state.masters;
    if (masters.length > 0)
      void state.attempts.track(withdrawTicket(masters, this.#keys[0], ticket, this.#context.timeout, givenUp));
  }
}

/** How long the masters keep a waiter's ticket after each attempt: past its next attempt. */
function ticketLease(retry: ResolvedRetryOptions, timeout: number): number {
  const between = typeof retry.retryDelay === 'number' ? retry.retryDelay : 1_000;
  return 2 * (between + retry.retryJitter) + 2 * timeout + 100;
}

/**
 * How long a ticket's claim on a free key lasts after its last attempt that found the key taken
 * (docs/handoff.md §4): one wait before its next attempt and that attempt's round trip, plus a
 * margin. A first waiter that cannot finish holds a free key back no longer than this.
 */
function claimWindow(retry: ResolvedRetryOptions, timeout: number): number {
  const between = typeof retry.retryDelay === 'number' ? retry.retryDelay : 1_000;
  return between + retry.retryJitter + timeout + 100;
}

/**
 * True when more masters than a quorum can spare did not answer `round` within the command timeout
 * (so far): the waiter's replies come too late to win, whatever the masters grant.
 */
function heardLate(round: VoteRound, masters: number, quorum: number): boolean {
  const late = round.outcomes.filter((o) => o?.status === 'timeout').length;
  return late > masters - quorum;
}
