import { now } from '../util/clock.js';
import { issueFencingToken } from './fencing.js';
import type { AcquireRequest, RoundContext } from './acquire-request.js';
import type { RoundResult } from './acquire-round.js';
import { limitKeyOf, permitKeyOf, type SharedShape } from './lock-mode.js';
import type { Master } from '../backend/master.js';
import { readAcquireOn, readExtendOn, readReleaseOn, writerDoneOn, writerWaitingOn } from './read-write/read-calls.js';
import { announceFlagFor, releaseChannelFor } from './channels.js';
import { defineScripts } from '../lua/scripts.js';
import { voteRound, type VoteRound } from '../quorum/vote-round.js';

/** The permit slot keys of a counting lock on `key`, on `master` (in the lock key's slot on a cluster). */
const permitKeysOf = (key: string, limit: number, master: Master): string[] =>
  Array.from({ length: limit }, (_, i) => permitKeyOf(key, i, master));

export type { RoundContext };

/** The result of one acquisition attempt of a shared lock. */
export interface SharedAttempt {
  /** The round whose outcomes describe the attempt (the last one tried). */
  readonly round: VoteRound;
  readonly won: boolean;
  /** The permit slot won (counting locks). */
  readonly slot: number;
  /** Another `limit` the holders of the resource use (counting locks), when a master reported one. */
  readonly heldLimit?: number;
  /** On a grant: whether another waiter may get in too (a reader; a permit when another slot looked free on a quorum). */
  readonly roomLeft?: boolean;
  /** Releases what this attempt may have set on any master (silently), after a failure. */
  readonly cleanUp: () => VoteRound[];
}

/** A shared acquire round's result: an acquire round's, plus what only shared locks have. */
export interface SharedRoundResult extends RoundResult {
  readonly slot: number;
  readonly heldLimit?: number;
  readonly roomLeft?: boolean;
  readonly cleanUp: () => VoteRound[];
}

/**
 * One attempt at a read lock or a permit: the shared counterpart of `acquireRound` (same result,
 * same fencing), as one round for a reader and up to `limit` rounds (one per slot) for a permit.
 */
export async function sharedAcquireRound(
  context: RoundContext,
  request: AcquireRequest,
  shape: SharedShape,
): Promise<SharedRoundResult> {
  const start = now();
  const { keys, value } = request;
  const ttl = String(request.ttl);
  let attempt: SharedAttempt;
  if (shape.kind === 'read') {
    attempt = readAttempt(context, keys, value, ttl);
    attempt = { ...attempt, won: await attempt.round.decided, roomLeft: true };
  } else {
    attempt = await permitAttempt(context, keys[0], shape.limit, Math.floor(Math.random() * shape.limit), value, ttl);
  }
  const base = {
    round: attempt.round,
    start,
    slot: attempt.slot,
    heldLimit: attempt.heldLimit,
    roomLeft: attempt.roomLeft,
    cleanUp: attempt.cleanUp,
  };
  if (!attempt.won) return { ...base, outcome: 'votes' };
  if (!request.counters) return { ...base, outcome: 'granted' };
  // Shared acquires do not read the counters: propose 1, the fence script answers with the highest.
  const token = await issueFencingToken(
    context.masters,
    context.fencingQuorum,
    context.timeout,
    request.counters,
    1,
    context.trusts,
  );
  return token === undefined ? { ...base, outcome: 'fencing' } : { ...base, outcome: 'granted', token };
}

/** Reader acquire on all masters: granted where no writer holds and no writer waits. */
export function readAttempt(ctx: RoundContext, keys: readonly string[], value: string, ttl: string): SharedAttempt {
  const round = voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) => readAcquireOn(m, keys, value, ttl),
    (reply) => reply === 1,
    ctx.trusts,
  );
  return { round, won: false, slot: -1, cleanUp: () => [releaseRead(ctx, keys, value, false)] };
}

/**
 * One attempt at a counting lock: tries slot `first`; when the masters refuse it, tries at once the
 * slot most masters reported free (if a quorum did), each slot at most once. Every slot is an
 * ordinary mutex; what makes it safe is that a holder counts only with a quorum on ONE slot.
 */
export async function permitAttempt(
  ctx: RoundContext,
  key: string,
  limit: number,
  first: number,
  value: string,
  ttl: string,
): Promise<SharedAttempt> {
  const tried: number[] = [];
  const cleanUp = (): VoteRound[] => tried.map((slot) => releasePermit(ctx, key, limit, slot, value, false));
  for (let slot = first; ;) {
    tried.push(slot);
    const round = voteRound(
      ctx.masters,
      ctx.quorum,
      ctx.timeout,
      (m) =>
        defineScripts(m.client).quorumLockPermitAcquire(
          limit + 1,
          ...permitKeysOf(key, limit, m),
          limitKeyOf(key, m),
          value,
          ttl,
          limit,
          slot + 1,
        ),
      (reply) => Array.isArray(reply) && reply[0] === 1,
      ctx.trusts,
    );
    const won = await round.decided;
    const replies = round.replies.filter((r): r is unknown[] => Array.isArray(r));
    const free = new Array<number>(limit).fill(0);
    for (const r of replies) {
      if (typeof r[1] === 'string') for (let i = 0; i < limit; i++) if (r[1][i] === '1') free[i]++;
    }
    // Wake the next waiter only if it may get a slot: waking it for nothing would spend its retries.
    if (won) return { round, won, slot, cleanUp, roomLeft: free.some((n, i) => i !== slot && n >= ctx.quorum) };
    const mismatch = replies.find((r) => r[0] === -1);
    if (mismatch) return { round, won, slot, heldLimit: Number(mismatch[1]), cleanUp };
    let next = -1;
    for (let i = 0; i < limit; i++)
      if (!tried.includes(i) && free[i] >= ctx.quorum && (next < 0 || free[i] > free[next])) next = i;
    if (next < 0) return { round, won, slot, cleanUp };
    releasePermit(ctx, key, limit, slot, value, false); // a minority may hold it for us: free it now
    slot = next;
  }
}

/** Registers a waiting writer on every master (new readers are refused while it lasts). */
export function registerWriter(ctx: RoundContext, keys: readonly string[], waiter: string, ttl: number): void {
  voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) => writerWaitingOn(m, keys, waiter, String(ttl)),
    () => true,
  );
}

/** Withdraws a writer's intent (it got the lock or gave up). */
export function withdrawWriter(ctx: RoundContext, keys: readonly string[], waiter: string): void {
  voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) => writerDoneOn(m, keys, waiter),
    () => true,
  );
}

/** Extends a reader on all masters. */
export function extendRead(ctx: RoundContext, keys: readonly string[], value: string, ttl: string): VoteRound {
  return voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) => readExtendOn(m, keys, value, ttl),
    (r) => r === 1,
    ctx.trusts,
  );
}

/** Extends a permit (and the limit record beside it) on all masters. */
export function extendPermit(
  ctx: RoundContext,
  key: string,
  limit: number,
  slot: number,
  value: string,
  ttl: string,
): VoteRound {
  return voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) =>
      defineScripts(m.client).quorumLockPermitExtend(
        2,
        permitKeyOf(key, slot, m),
        limitKeyOf(key, m),
        value,
        ttl,
        limit,
      ),
    (r) => r === 1,
    ctx.trusts,
  );
}

/** Removes a reader on all masters; with `announce`, publishes on each key's release channel. */
export function releaseRead(ctx: RoundContext, keys: readonly string[], value: string, announce: boolean): VoteRound {
  return voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) => readReleaseOn(m, keys, value, announce),
    () => true,
  );
}

/** Frees a permit slot on all masters (compare-and-delete); the limit record goes with the last slot. */
export function releasePermit(
  ctx: RoundContext,
  key: string,
  limit: number,
  slot: number,
  value: string,
  announce: boolean,
): VoteRound {
  return voteRound(
    ctx.masters,
    ctx.quorum,
    ctx.timeout,
    (m) =>
      defineScripts(m.client).quorumLockPermitRelease(
        limit + 1,
        ...permitKeysOf(key, limit, m),
        limitKeyOf(key, m),
        value,
        slot + 1,
        announceFlagFor(m, announce),
        releaseChannelFor(m, key),
      ),
    () => true,
  );
}
