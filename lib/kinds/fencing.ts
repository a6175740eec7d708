import type { Master } from '../backend/master.js';
import { voteRound, type TrustCheck } from '../quorum/vote-round.js';

/**
 * Fencing tokens across masters. Each resource has a counter on every master. Once a lock is won,
 * the holder proposes `token = (highest counter seen by its acquire) + 1` and raises the counters of
 * a quorum to it, but only where they are all below it (the `fence` script). It tries again with a
 * higher token while a master reports a counter at or above the proposal.
 *
 * Why tokens strictly increase: a holder A writes its token tA to a quorum QA before it gets the
 * lock. A later holder B wins the lock only after A's keys are gone, so after A's write. B's token
 * counts only once a quorum QB answered "all counters below tB". QA and QB share a master, whose
 * counter was already >= tA, so tB > tA. That needs the shared master to keep its counter. Counters
 * have no TTL, so a master that restarts without its data forgets them for good. With fence quorums
 * of W out of N masters (`fencingQuorum`), two quorums share at least 2W - N masters, so tokens keep
 * increasing while at most f = 2W - N - 1 masters lose their data between two holders: none for a
 * majority, two for 4 of 5. Beyond that, only persistence on the masters helps (docs/fencing.md).
 *
 * Returns the token, or undefined when no quorum took it within `rounds` rounds.
 */
export async function issueFencingToken(
  masters: readonly Master[],
  quorum: number,
  timeoutMs: number,
  counterKeys: readonly string[],
  proposal: number,
  trusts: TrustCheck | undefined,
  rounds = 4,
): Promise<number | undefined> {
  let token = proposal;
  for (let round = 0; round < rounds; round++) {
    const proposed = token;
    const votes = voteRound(
      masters,
      quorum,
      timeoutMs,
      (m) => m.scripts.quorumLockFence(counterKeys.length, ...counterKeys, String(proposed)),
      (reply) => typeof reply === 'number' && reply < proposed,
      trusts,
    );
    if (await votes.decided) return proposed;
    await votes.settled;
    const highest = Math.max(...votes.replies.map((r) => (typeof r === 'number' ? r : 0)));
    if (highest < proposed) return undefined; // lost on errors or timeouts, not on a stale counter
    token = highest + 1;
  }
  return undefined;
}
