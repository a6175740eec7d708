import { now } from '../util/clock.js';
import type { VoteRound } from '../quorum/vote-round.js';
import type { AcquireRequest, KindAttempt, RoundContext, RoundResult } from './acquire-request.js';
import { issueFencingToken } from './fencing.js';

/** How one attempt at a shared lock (a reader, a permit) went, before fencing. */
export interface SharedAttempt {
  /** The round whose outcomes describe the attempt (the last one tried). */
  readonly round: VoteRound;
  readonly won: boolean;
  /** The kind's state the lock carries when won (a permit's slot). */
  readonly state?: unknown;
  /** On a grant: whether another waiter may get in too. */
  readonly roomLeft?: boolean;
  /** Why to stop retrying (another `limit` than the holders'). */
  readonly refusal?: (resources: readonly string[]) => Error;
  /** Releases what this attempt may have set on any master (silently), after a failure. */
  readonly cleanUp: () => VoteRound[];
}

/**
 * An attempt at a shared lock as the engine sees any attempt: `attempt` runs its rounds; once won,
 * a fencing token is issued as for the mutex. Shared acquires do not read the counters: they
 * propose 1, and the fence script answers with the highest.
 */
export function sharedAttempt(
  context: RoundContext,
  request: AcquireRequest,
  attempt: () => Promise<SharedAttempt>,
): KindAttempt {
  const start = now();
  const tried = attempt();
  let round: VoteRound | undefined;
  const result = (async (): Promise<RoundResult> => {
    const a = await tried;
    round = a.round;
    const base = { round: a.round, start, state: a.state, roomLeft: a.roomLeft, refusal: a.refusal };
    if (!a.won) return { ...base, outcome: 'votes' };
    if (!request.counters) return { ...base, outcome: 'granted' };
    const { masters, fencingQuorum, timeout, trusts } = context;
    const token = await issueFencingToken(masters, fencingQuorum, timeout, request.counters, 1, trusts);
    return token === undefined ? { ...base, outcome: 'fencing' } : { ...base, outcome: 'granted', token };
  })();
  return {
    result,
    outcomes: () => round?.outcomes ?? context.masters.map(() => undefined),
    // A shared round knows what to undo only once it has decided; its undo still lands after it on each connection.
    release: () =>
      result
        .then(() => tried)
        .then((a) => Promise.all(a.cleanUp().map((c) => c.settled)))
        .then(
          () => undefined,
          () => undefined,
        ),
  };
}
