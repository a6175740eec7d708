import { now } from '../util/clock.js';
import { issueFencingToken } from './fencing.js';
import { ticketed } from './mutex/handoff.js';
import type { AcquireRequest, AcquireRoundKind, RoundContext } from './acquire-request.js';
import { voteRound, type VoteRound } from '../quorum/vote-round.js';

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
