import type { Master } from '../backend/master.js';
import type { MasterOutcome } from '../errors/outcomes.js';
import type { TrustCheck, VoteRound } from '../quorum/vote-round.js';

// The vocabulary of one acquire round, apart from the rounds themselves: the mutex's handoff
// queue, the shared kinds and the engine all speak it.

/** A waiter's place in the masters' queue of one key. */
export interface HandoffTicket {
  /** Random id, unique per acquisition. */
  readonly id: string;
  /** The order key: the acquisition's wall-clock start (ms). Ties are ordered by `id` on every master. */
  readonly score: number;
  /** How long a master keeps the ticket after each attempt, ms: longer than the wait before the next. */
  lease: number;
  /**
   * The claim window, ms: how long after its last attempt that found the key taken the ticket may
   * keep a free key from the tickets behind it (docs/handoff.md §4). Longer than the wait before its
   * next attempt plus that attempt's round trip, so that a waiter that keeps up never loses its turn.
   */
  claim: number;
  /**
   * Direct handover (docs/handoff.md §3): the value the lock will have (every ticketed attempt uses
   * it) and its TTL, so that a release can set the key to it at once. Absent for a fenced lock,
   * whose token needs its own round: a release then reserves the key for the ticket instead.
   */
  readonly handover?: { readonly value: string; readonly ttl: number };
}

/** What one acquire attempt asks every master for. */
export interface AcquireRequest {
  /** The Redis keys (prefix + resource). */
  readonly keys: readonly string[];
  /** With fencing: the counter keys (fencing prefix + resource), one per key. */
  readonly counters: readonly string[] | undefined;
  /** This attempt's random value. */
  readonly value: string;
  /** The TTL in ms. */
  readonly ttl: number;
  /** A queued waiter's ticket (single-key exclusive locks, after a first refusal; docs/handoff.md). */
  readonly ticket?: HandoffTicket;
}

/** The masters and bounds a round runs under. */
export interface RoundContext {
  readonly masters: readonly Master[];
  readonly quorum: number;
  /** Per-master command bound, in ms. */
  readonly timeout: number;
  /** How many masters must take a fencing token. */
  readonly fencingQuorum: number;
  /** False for a master whose vote must not count (the restart guard). */
  readonly trusts: TrustCheck | undefined;
}

/** The masters a held lock's rounds go to, and who counts among them (an engine's state is one). */
export interface Quorum {
  readonly masters: readonly Master[];
  readonly quorum: number;
  /** False for a master whose vote must not count (the restart guard). */
  readonly trusts: TrustCheck | undefined;
}

/**
 * One way to ask a master for a lock: the command to send and what counts as a grant. The mutex
 * picks the first of its commands that `applies` to a request (acquire-round.ts).
 */
export interface AcquireCommand {
  readonly name: string;
  applies(request: AcquireRequest): boolean;
  send(master: Master, request: AcquireRequest): Promise<unknown>;
  /** True when `send` batches its call with others of the loop turn (lib/backend/write-batcher.ts). */
  readonly batched?: boolean;
  isGranted(reply: unknown): boolean;
  /** With fencing: the highest counter a granting master reported (0 when none). */
  highestCounter?(reply: unknown): number;
}

/** How an acquire round ended. */
export interface RoundResult {
  /** `granted`: a quorum took the lock (and its fencing token); `votes`: no quorum; `fencing`: won, but no quorum took the token. */
  readonly outcome: 'granted' | 'votes' | 'fencing';
  /** The vote round, whose outcomes and replies fill in as masters answer. */
  readonly round: VoteRound;
  /** The monotonic instant the round began: validity counts from here. */
  readonly start: number;
  /** The fencing token, when one was issued. */
  readonly token?: number;
  /** The kind's state the won lock carries (a permit's slot); undefined for the mutex and readers. */
  readonly state?: unknown;
  /** On a grant: another waiter of this process may get in too (a reader; a permit with another slot free). */
  readonly roomLeft?: boolean;
  /** Why to stop at once instead of retrying (a `limit` other than the holders'), for these resources. */
  readonly refusal?: (resources: readonly string[]) => Error;
}

/** An acquire attempt under way: what it sent, how it ends, and how to undo what it wrote. */
export interface KindAttempt {
  /** How the attempt ended (never rejects). */
  readonly result: Promise<RoundResult>;
  /** Each master's outcome so far, in `nodes` order. */
  outcomes(): readonly (MasterOutcome | undefined)[];
  /** Removes what the attempt may have written, on every master; never rejects. */
  readonly release: () => Promise<void>;
}
