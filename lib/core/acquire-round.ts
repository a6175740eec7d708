import { now } from './clock.js';
import { issueFencingToken } from './fencing.js';
import { ticketed, type HandoffTicket } from './handoff.js';
import type { Master } from './master.js';
import { voteRound, type TrustCheck, type VoteRound } from './votes.js';

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

/**
 * One way to ask a master for a lock: the command to send and what counts as a grant. The first
 * kind in `ROUND_KINDS` that `applies` to a request is used; a new kind of lock (read-write,
 * counting) adds its own entry, ahead of the ones it specialises.
 */
export interface AcquireRoundKind {
  readonly name: string;
  applies(request: AcquireRequest): boolean;
  send(master: Master, request: AcquireRequest): Promise<unknown>;
  isGranted(reply: unknown): boolean;
  /** With fencing: the highest counter a granting master reported (0 when none). */
  highestCounter?(reply: unknown): number;
}

const fenced: AcquireRoundKind = {
  name: 'fenced',
  applies: (r) => r.counters !== undefined,
  send: (m, r) =>
    m.scripts.quorumLockFencedAcquire(
      r.keys.length * 2,
      ...r.keys,
      ...r.counters!,
      r.value,
      String(r.ttl),
      r.keys.length,
    ),
  isGranted: (reply) => typeof reply === 'number' && reply >= 0,
  highestCounter: (reply) => (typeof reply === 'number' ? Math.max(0, reply) : 0),
};

/** One key: a plain `SET NX PX`, no script needed. */
const single: AcquireRoundKind = {
  name: 'single',
  applies: (r) => r.keys.length === 1,
  send: (m, r) => m.client.set(r.keys[0], r.value, 'PX', String(r.ttl), 'NX'),
  isGranted: (reply) => reply === 'OK',
};

/** Several keys: one script takes all of them or none on each master. */
const multi: AcquireRoundKind = {
  name: 'multi',
  applies: () => true,
  send: (m, r) => m.scripts.quorumLockAcquire(r.keys.length, ...r.keys, r.value, String(r.ttl)),
  isGranted: (reply) => reply === 1,
};

/** The kinds of acquire round, most specific first. */
export const ROUND_KINDS: AcquireRoundKind[] = [ticketed, fenced, single, multi];

/** The kind of round for a request. */
function roundKindOf(request: AcquireRequest): AcquireRoundKind {
  return ROUND_KINDS.find((kind) => kind.applies(request))!;
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
}

/** An acquire round under way: its first vote round is readable at once, its result comes later. */
export interface AcquireAttempt {
  /** The vote round, whose outcomes fill in as masters answer. */
  readonly round: VoteRound;
  /** The monotonic instant the round began. */
  readonly start: number;
  /** How the round ended (never rejects). */
  readonly result: Promise<RoundResult>;
}

/**
 * Sends one acquire attempt to every master at once (the command its kind picks) and, when a
 * quorum granted a fenced lock, raises the fencing counters of a fence quorum.
 */
export function startAcquireRound(context: RoundContext, request: AcquireRequest): AcquireAttempt {
  const kind = roundKindOf(request);
  const start = now();
  const round = voteRound(
    context.masters,
    context.quorum,
    context.timeout,
    (m) => kind.send(m, request),
    kind.isGranted,
    context.trusts,
  );
  const result = (async (): Promise<RoundResult> => {
    if (!(await round.decided)) return { outcome: 'votes', round, start };
    if (!request.counters) return { outcome: 'granted', round, start };
    const seen = Math.max(0, ...round.replies.map((r) => (r === undefined ? 0 : (kind.highestCounter?.(r) ?? 0))));
    const token = await issueFencingToken(
      context.masters,
      context.fencingQuorum,
      context.timeout,
      request.counters,
      seen + 1,
      context.trusts,
    );
    return token === undefined ? { outcome: 'fencing', round, start } : { outcome: 'granted', round, start, token };
  })();
  return { round, start, result };
}

/** `startAcquireRound(…).result`. */
export function acquireRound(context: RoundContext, request: AcquireRequest): Promise<RoundResult> {
  return startAcquireRound(context, request).result;
}
