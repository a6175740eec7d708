import type { Master } from '../../backend/master.js';
import { quote } from '../../errors/quote.js';
import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { voteRound, type VoteRound } from '../../quorum/vote-round.js';
import type { Quorum, RoundContext } from '../acquire-request.js';
import { announceFlagFor, releaseChannelFor } from '../channels.js';
import { limitMismatch, modeOf, type KindRequest, type LockKind } from '../lock-kind.js';
import { sharedAttempt, type SharedAttempt } from '../shared-attempt.js';
import { limitKeyOf, permitKeyOf } from './permit-keys.js';
import { permitReader } from './permit-reader.js';

// The counting lock: at most `limit` holders, each holding one of `limit` permit slots as an
// ordinary Redlock mutex (docs/read-write-and-counting-locks.md: a majority of per-master counters
// is not safe).

/** A permit: the limit every holder of the resource uses, and the slot this holder won (-1 while asked for). */
export interface PermitState {
  readonly limit: number;
  readonly slot: number;
}

/** The permit slot keys of a counting lock on `key`, on `master` (in the lock key's slot on a cluster). */
const permitKeysOf = (key: string, limit: number, master: Master): string[] =>
  Array.from({ length: limit }, (_, i) => permitKeyOf(key, i, master));

/** Another `limit` than the one the holders of `resources` use: refused, naming both. */
function holdersUseAnother(wanted: number, held: number, resources: readonly string[]): RedlockConfigError {
  return new RedlockConfigError(
    'limit',
    `\`limit\` ${wanted} differs from the limit ${held} that the holders of ${quote(resources)} use; every holder of a counting lock must use the same limit.`,
  );
}

/**
 * One attempt at a counting lock: tries slot `first`; when the masters refuse it, tries at once the
 * slot most masters reported free (if a quorum did), each slot at most once. Every slot is an
 * ordinary mutex; what makes it safe is that a holder counts only with a quorum on ONE slot.
 */
async function permitAttempt(
  ctx: RoundContext,
  key: string,
  limit: number,
  first: number,
  value: string,
  ttl: string,
): Promise<SharedAttempt> {
  const tried: number[] = [];
  const cleanUp = (): VoteRound[] =>
    tried.map((slot) => releasePermit(ctx, key, limit, slot, value, ctx.timeout, false));
  for (let slot = first; ;) {
    tried.push(slot);
    const round = voteRound(
      ctx.masters,
      ctx.quorum,
      ctx.timeout,
      (m) =>
        m.scripts.quorumLockPermitAcquire(
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
    const state: PermitState = { limit, slot };
    // Wake the next waiter only if it may get a slot: waking it for nothing would spend its retries.
    if (won) return { round, won, state, cleanUp, roomLeft: free.some((n, i) => i !== slot && n >= ctx.quorum) };
    const mismatch = replies.find((r) => r[0] === -1);
    if (mismatch) {
      const refusal = (resources: readonly string[]): Error => holdersUseAnother(limit, Number(mismatch[1]), resources);
      return { round, won, state, refusal, cleanUp };
    }
    let next = -1;
    for (let i = 0; i < limit; i++)
      if (!tried.includes(i) && free[i] >= ctx.quorum && (next < 0 || free[i] > free[next])) next = i;
    if (next < 0) return { round, won, state, cleanUp };
    releasePermit(ctx, key, limit, slot, value, ctx.timeout, false); // a minority may hold it for us: free it now
    slot = next;
  }
}

/** Frees a permit slot on all masters (compare-and-delete); the limit record goes with the last slot. */
function releasePermit(
  quorum: Quorum,
  key: string,
  limit: number,
  slot: number,
  value: string,
  timeout: number,
  announce: boolean,
): VoteRound {
  return voteRound(
    quorum.masters,
    quorum.quorum,
    timeout,
    (m) =>
      m.scripts.quorumLockPermitRelease(
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

/**
 * The counting lock: one resource, `limit` permit slots. Its state is the limit and the slot won.
 *
 * @example
 * PERMIT.acquire(context, request, { limit: 3, slot: -1 });
 */
export const PERMIT: LockKind<PermitState> = {
  name: 'permit',
  exclusive: false,
  modeOf: ({ limit }) => ({ mode: 'write', limit }),
  queues: () => false,
  // A random first slot, to spread contention.
  acquire: (context, request, { limit }) =>
    sharedAttempt(context, request, () =>
      permitAttempt(
        context,
        request.keys[0],
        limit,
        Math.floor(Math.random() * limit),
        request.value,
        String(request.ttl),
      ),
    ),
  // Extends the slot and the limit record beside it.
  extend: (quorum, lock, ttl, timeout) => {
    const { limit, slot } = lock.kindState as PermitState;
    const key = lock.keys[0];
    return voteRound(
      quorum.masters,
      quorum.quorum,
      timeout,
      (m) =>
        m.scripts.quorumLockPermitExtend(
          2,
          permitKeyOf(key, slot, m),
          limitKeyOf(key, m),
          lock.value,
          String(ttl),
          limit,
        ),
      (r) => r === 1,
      quorum.trusts,
    );
  },
  release: (quorum, lock, timeout, announce) => {
    const { limit, slot } = lock.kindState as PermitState;
    return releasePermit(quorum, lock.keys[0], limit, slot, lock.value, timeout, announce);
  },
  // A permit covers a request of the same `limit`; any other limit (none included) is the mismatch.
  covers: (held, { limit }, resource) => {
    const heldLimit = modeOf(held).limit;
    return heldLimit === limit || limitMismatch(limit, heldLimit, resource);
  },
  // Up to `limit` permit holders; a holder with another limit is refused, naming both.
  admits: (holders, { limit }, resource) => {
    let permits = 0;
    for (const h of holders) {
      const held = modeOf(h).limit;
      if (held === undefined) continue;
      if (held !== limit) throw holdersUseAnother(limit, held, [resource]);
      permits++;
    }
    return permits < limit;
  },
  // The lowest slot no holder here has.
  placeAmong: (holders, { limit }) => {
    const taken = new Set(holders.filter((h) => h.kind === PERMIT).map((h) => (h.kindState as PermitState).slot));
    let slot = 0;
    while (taken.has(slot)) slot++;
    return { limit, slot };
  },
  reader: permitReader,
};

/** A call for a permit of a counting lock of `limit`. */
export function permitRequest(limit: number): KindRequest<PermitState> {
  return { kind: PERMIT, state: { limit, slot: -1 } };
}
