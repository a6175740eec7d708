import type { Master } from '../../backend/master.js';
import { RedlockError } from '../../errors/redlock.error.js';
import { ownerOfValue } from '../../options/owner.js';
import type { Lock } from '../../lock/lock.js';
import { voteRound, type VoteRound } from '../../quorum/vote-round.js';
import type { AcquireRequest, KindAttempt, Quorum, RoundContext } from '../acquire-request.js';
import { announceFlagFor, releaseChannelFor } from '../channels.js';
import { push, type KindReader } from '../inspection.js';
import { limitMismatch, modeOf, type KindRequest, type LockKind } from '../lock-kind.js';
import { registerWriter, withdrawWriter } from '../read-write/writer-intent.js';
import { startAcquireRound } from './acquire-round.js';
import { handoffRelease, undoTicketed } from './handoff.js';

// The exclusive lock, on one key or several (all or none on each master): the default kind, and
// the write side of a read-write lock (a waiting writer holds new readers off: writer-intent.ts).

/** A vote that counts every reply: a release round waits for a quorum of answers, whatever they say. */
const accept = (): boolean => true;

/**
 * Compare-and-delete on every master (but those `skip` marks). Never rejects. With `announce`,
 * each deleted key is published on its release channel so that waiters elsewhere retry at once.
 */
function releaseKeys(
  quorum: Quorum,
  keys: readonly string[],
  value: string,
  timeout: number,
  announce: boolean,
  skip?: readonly boolean[],
): VoteRound {
  const masters = skip ? quorum.masters.filter((_, i) => !skip[i]) : quorum.masters;
  if (keys.length === 1) {
    // One key: the release hands it to the first queued waiter, if any (docs/handoff.md).
    const key = keys[0];
    const reserve = announce ? String(Math.max(1, Math.ceil(timeout))) : '0';
    const release = (m: Master): Promise<number> => handoffRelease(m, key, value, reserve);
    return voteRound(masters, quorum.quorum, timeout, release, accept, undefined, true);
  }
  return voteRound(
    masters,
    quorum.quorum,
    timeout,
    (m) =>
      m.scripts.quorumLockRelease(
        keys.length,
        ...keys,
        value,
        announceFlagFor(m, announce),
        ...(announce ? keys.map((key) => releaseChannelFor(m, key)) : []),
      ),
    accept,
  );
}

/** One attempt: the acquire round, and the undo of what it wrote. */
function acquire(context: RoundContext, request: AcquireRequest): KindAttempt {
  const started = startAcquireRound(context, request);
  return {
    result: started.result,
    outcomes: () => started.round.outcomes,
    // A master that refused wrote nothing (a ticket stays queued on purpose): undo only the others,
    // at once, so that on each connection the undo lands before this waiter's next attempt (a
    // ticket's attempts all use its one value). A ticketed attempt's undo leaves a key that a
    // release handed over (ticket-undo.lua).
    release: () => {
      const refused = started.round.outcomes.map((o) => o?.status === 'refused');
      if (refused.every(Boolean)) return Promise.resolve();
      const { ticket } = request;
      // One key: the undo frees it like a release, handing it to the first queued waiter, if any
      // (after simultaneous first attempts split the votes, the stale values go straight to the
      // first ticket instead of waiting for its next attempt).
      const announce = request.keys.length === 1;
      if (!ticket) return releaseKeys(context, request.keys, request.value, context.timeout, announce, refused).settled;
      const { masters } = context;
      return voteRound(
        masters.filter((_, i) => !refused[i]),
        context.quorum,
        context.timeout,
        (m) => undoTicketed(m, request.keys[0], request.value, ticket, started.round.replies[masters.indexOf(m)]),
        accept,
      ).settled;
    },
  };
}

/** Who holds the key as a string (the writer), master by master, for `inspect()`. */
const reader: KindReader = {
  readMaster: async (_reads, _key, seen) => {
    const present = seen.type === 'string' && seen.value !== null && seen.pttl > 0;
    if (!present) return { fields: { holder: null } };
    return { fields: { holder: seen.value }, owner: { owner: ownerOfValue(seen.value), pttl: Infinity } };
  },
  summarize: (holdings, tally) => {
    const writers = new Map<string, number[]>();
    for (const h of holdings) if (h.holder !== null && h.pttl !== null) push(writers, h.holder, h.pttl);
    let holder: string | null = null;
    let pttls: number[] = [];
    for (const [value, list] of writers) {
      if (list.length > pttls.length) {
        holder = value;
        pttls = list;
      }
    }
    const held = pttls.length >= tally.quorum;
    const fields = { held, holder, agreeing: pttls.length, validity: held ? tally.validityOf(pttls) : 0 };
    return holder === null ? { fields } : { fields, owner: { owner: ownerOfValue(holder) } };
  },
};

/**
 * The mutex. Its requests and locks carry no state. A waiter for one key may queue on the masters
 * (handoff.ts); a refused waiter that will retry registers a writer intent, holding new readers off.
 *
 * @example
 * MUTEX.release(quorum, lock, commandTimeout, true).settled;
 */
export const MUTEX: LockKind<undefined> = {
  name: 'mutex',
  exclusive: true,
  modeOf: () => ({ mode: 'write' }),
  queues: (keys) => keys.length === 1,
  acquire,
  extend: (quorum, lock, ttl, timeout) =>
    voteRound(
      quorum.masters,
      quorum.quorum,
      timeout,
      (m) => m.scripts.quorumLockExtend(lock.keys.length, ...lock.keys, lock.value, String(ttl)),
      (reply) => reply === 1,
      quorum.trusts,
    ),
  release: (quorum, lock, timeout, announce) => releaseKeys(quorum, lock.keys, lock.value, timeout, announce),
  /**
   * Quorum repair (docs/quorum-repair.md): after an extension won a quorum, re-takes the keys (same
   * value, same TTL) on the masters that answered that they no longer have them, so that one master
   * losing a key (a restart, an eviction, a clock jump) does not leave the holder on a bare quorum.
   * Only while the lock is still valid here, that is while a majority holds it, so no other holder
   * can hold a majority: the keys it re-takes are keys this holder is entitled to.
   */
  repair: (quorum, lock: Lock, ttl, timeout, replies) => {
    const lost = quorum.masters.filter((_, i) => replies[i] === 2);
    if (lost.length === 0 || !lock.isHeld) return;
    void voteRound(
      lost,
      lost.length,
      timeout,
      (m) => m.scripts.quorumLockRepair(lock.keys.length, ...lock.keys, lock.value, String(ttl)),
      (reply) => reply === 1,
    ).settled;
  },
  holdOff: registerWriter,
  stopHoldingOff: withdrawWriter,
  // A write lock covers reads and writes; a write inside a read would wait for its own reader.
  covers: (held, _requested, resource) => {
    const { mode, limit } = modeOf(held);
    if (limit !== undefined) limitMismatch(undefined, limit, resource);
    if (mode === 'read') {
      throw new RedlockError(
        `Cannot take a write lock on ${JSON.stringify(resource)} inside a read lock on it in the same call chain: the writer would wait for its own reader. Take the write lock in the outer call.`,
      );
    }
    return true;
  },
  // Alone on the key: beside nothing but permits (which use other keys).
  admits: (holders) => holders.every((h) => modeOf(h).limit !== undefined),
  reader,
};

/** A call for the mutex (the default): one request for every call, nothing per call. */
export const MUTEX_REQUEST: KindRequest<undefined> = Object.freeze({ kind: MUTEX, state: undefined });
