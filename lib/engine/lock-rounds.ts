import type { AcquireRequest, RoundContext } from '../kinds/acquire-request.js';
import { startAcquireRound } from '../kinds/acquire-round.js';
import { announceFlagFor, releaseChannelFor } from '../kinds/channels.js';
import { shapeOf, type RequestedShape, type SharedShape } from '../kinds/lock-mode.js';
import { handoffRelease, undoTicketed } from '../kinds/mutex/handoff.js';
import * as shared from '../kinds/shared-rounds.js';
import type { Lock } from '../lock/lock.js';
import { voteRound, type VoteRound } from '../quorum/vote-round.js';
import type { EngineState } from './engine-state.js';
import type { InFlight } from './in-flight.js';

// The rounds a held lock or an attempt sends, chosen by the lock's kind: the exclusive keys, a
// reader's entry, or a permit slot.

/** A vote that counts every reply: a release round waits for a quorum of answers, whatever they say. */
const accept = (): boolean => true;

/** Sends an acquire round and records it as in flight until a lock owns its keys or it is cleaned up. */
export function startAttempt(
  state: EngineState,
  context: RoundContext,
  request: AcquireRequest,
  shape: RequestedShape | undefined,
): InFlight {
  const attempt = shape ? sharedAttempt(state, context, request, shape) : exclusiveAttempt(state, context, request);
  state.attempts.add(attempt);
  return attempt;
}

function sharedAttempt(
  state: EngineState,
  context: RoundContext,
  request: AcquireRequest,
  shape: SharedShape,
): InFlight {
  const result = shared.sharedAcquireRound(context, request, shape);
  let round: VoteRound | undefined;
  void result.then(
    (r) => (round = r.round),
    () => undefined,
  );
  return {
    result,
    outcomes: () => round?.outcomes ?? state.masters.map(() => undefined),
    // A shared round knows what to undo only once it has decided; its undo still lands after it on each connection.
    release: () =>
      result
        .then((r) => Promise.all(r.cleanUp().map((c) => c.settled)))
        .then(
          () => undefined,
          () => undefined,
        ),
  };
}

function exclusiveAttempt(state: EngineState, context: RoundContext, request: AcquireRequest): InFlight {
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
      if (!ticket) return releaseKeys(state, request.keys, request.value, context.timeout, announce, refused).settled;
      return voteRound(
        state.masters.filter((_, i) => !refused[i]),
        state.quorum,
        context.timeout,
        (m) => undoTicketed(m, request.keys[0], request.value, ticket, started.round.replies[state.masters.indexOf(m)]),
        () => true,
      ).settled;
    },
  };
}

/** Releases a held lock of any kind on every master. */
export function releaseHeld(state: EngineState, lock: Lock, timeout: number, announce: boolean): VoteRound {
  const shape = shapeOf(lock);
  if (shape?.kind === 'read') return shared.releaseRead(state.roundContext(timeout), lock.keys, lock.value, announce);
  if (shape?.kind === 'permit')
    return shared.releasePermit(
      state.roundContext(timeout),
      lock.keys[0],
      shape.limit,
      shape.slot,
      lock.value,
      announce,
    );
  return releaseKeys(state, lock.keys, lock.value, timeout, announce);
}

/**
 * Compare-and-pexpire of `lock`'s keys to `ttl` on every master, by the lock's kind: a reader's
 * entry, a permit slot (with its limit record), or the exclusive keys. A quorum of trusted masters
 * that still hold this lock's value wins. Used to extend a lock and to shorten a released one to
 * its `minHold`.
 */
export function extendRound(state: EngineState, lock: Lock, ttl: number, timeout: number): VoteRound {
  const shape = shapeOf(lock);
  if (shape?.kind === 'read') return shared.extendRead(state.roundContext(timeout), lock.keys, lock.value, String(ttl));
  if (shape?.kind === 'permit')
    return shared.extendPermit(
      state.roundContext(timeout),
      lock.keys[0],
      shape.limit,
      shape.slot,
      lock.value,
      String(ttl),
    );
  return voteRound(
    state.masters,
    state.quorum,
    timeout,
    (m) => m.scripts.quorumLockExtend(lock.keys.length, ...lock.keys, lock.value, String(ttl)),
    (reply) => reply === 1,
    state.trusts,
  );
}

/**
 * Quorum repair (docs/quorum-repair.md): after an extension won a quorum, re-takes the keys (same
 * value, same TTL) on the masters that answered that they no longer have them, so that one master
 * losing a key (a restart, an eviction, a clock jump) does not leave the holder on a bare quorum.
 * Only while the lock is still valid here, that is while a majority holds it, so no other holder
 * can hold a majority: the keys it re-takes are keys this holder is entitled to.
 */
export function repairQuorum(
  state: EngineState,
  lock: Lock,
  ttl: number,
  timeout: number,
  replies: readonly unknown[],
): void {
  const lost = state.masters.filter((_, i) => replies[i] === 2);
  if (lost.length === 0 || !lock.isHeld) return;
  void voteRound(
    lost,
    lost.length,
    timeout,
    (m) => m.scripts.quorumLockRepair(lock.keys.length, ...lock.keys, lock.value, String(ttl)),
    (reply) => reply === 1,
  ).settled;
}

/**
 * Compare-and-delete on every master. Never rejects. With `announce`, each deleted key is
 * published on its release channel so that waiters elsewhere retry at once.
 */
export function releaseKeys(
  state: EngineState,
  keys: readonly string[],
  value: string,
  timeout: number,
  announce: boolean,
  skip?: readonly boolean[],
): VoteRound {
  const masters = skip ? state.masters.filter((_, i) => !skip[i]) : state.masters;
  if (keys.length === 1) {
    // One key: the release hands it to the first queued waiter, if any (docs/handoff.md).
    const key = keys[0];
    const reserve = announce ? String(Math.max(1, Math.ceil(timeout))) : '0';
    return voteRound(masters, state.quorum, timeout, (m) => handoffRelease(m, key, value, reserve), accept);
  }
  return voteRound(
    masters,
    state.quorum,
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
