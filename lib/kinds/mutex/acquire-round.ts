import { now } from '../../util/clock.js';
import { issueFencingToken } from '../fencing.js';
import { ticketed } from './handoff.js';
import { isSet, plainAcquire } from './plain-batch.js';
import type { AcquireCommand, AcquireRequest, RoundContext, RoundResult } from '../acquire-request.js';
import { voteRound, type VoteRound } from '../../quorum/vote-round.js';

// The mutex's acquire round: one key by `SET NX PX`, several keys all or none, fenced, or a queued
// waiter's ticketed attempt (handoff.ts).

const fenced: AcquireCommand = {
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

/** One key: a plain `SET NX PX`, no script needed (on a plain master, batched with the loop turn's). */
const single: AcquireCommand = {
  name: 'single',
  applies: (r) => r.keys.length === 1,
  send: (m, r) => plainAcquire(m, r.keys[0], r.value, String(r.ttl)),
  batched: true,
  isGranted: isSet,
};

/** Several keys: one script takes all of them or none on each master. */
const multi: AcquireCommand = {
  name: 'multi',
  applies: () => true,
  send: (m, r) => m.scripts.quorumLockAcquire(r.keys.length, ...r.keys, r.value, String(r.ttl)),
  isGranted: (reply) => reply === 1,
};

/** The mutex's acquire commands, most specific first. */
const COMMANDS: AcquireCommand[] = [ticketed, fenced, single, multi];

/** The command for a request. */
function commandOf(request: AcquireRequest): AcquireCommand {
  return COMMANDS.find((command) => command.applies(request))!;
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
 * Sends one acquire attempt to every master at once (the command that fits the request) and, when a
 * quorum granted a fenced lock, raises the fencing counters of a fence quorum.
 */
export function startAcquireRound(context: RoundContext, request: AcquireRequest): AcquireAttempt {
  const command = commandOf(request);
  const start = now();
  const round = voteRound(
    context.masters,
    context.quorum,
    context.timeout,
    (m) => command.send(m, request),
    command.isGranted,
    context.trusts,
    command.batched,
  );
  const result = (async (): Promise<RoundResult> => {
    if (!(await round.decided)) return { outcome: 'votes', round, start };
    if (!request.counters) return { outcome: 'granted', round, start };
    const seen = Math.max(0, ...round.replies.map((r) => (r === undefined ? 0 : (command.highestCounter?.(r) ?? 0))));
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
