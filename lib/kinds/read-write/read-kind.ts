import { voteRound, type VoteRound } from '../../quorum/vote-round.js';
import type { Quorum } from '../acquire-request.js';
import { ownerField, push, replyAt, type KindReader, type MasterReader } from '../inspection.js';
import { limitMismatch, modeOf, type KindRequest, type LockKind } from '../lock-kind.js';
import { handoffKeysOf, queueKeysOf } from '../mutex/handoff.js';
import { sharedAttempt } from '../shared-attempt.js';
import { intentKeyOf, readAcquireOn, readExtendOn, readReleaseOn } from './read-calls.js';

// The read side of a read-write lock: readers share the lock key as a sorted set (scored by each
// reader's expiry), never beside a writer (the mutex on the same key) nor while a writer waits.

/** Removes a reader on all masters; with `announce`, publishes on each key's release channel. */
function releaseRead(
  quorum: Quorum,
  keys: readonly string[],
  value: string,
  timeout: number,
  announce: boolean,
): VoteRound {
  return voteRound(
    quorum.masters,
    quorum.quorum,
    timeout,
    (m) => readReleaseOn(m, keys, value, announce),
    () => true,
  );
}

/** The readers of the key and whether a writer waits, master by master, for `inspect()`. */
const reader: KindReader = {
  readMaster: async ({ master, exec }, key, seen) => {
    const readers: MasterReader[] = [];
    if (seen.type === 'zset') {
      for (let i = 0; i + 1 < seen.zset.length; i += 2) {
        const left = Math.floor(Number(seen.zset[i + 1]) - seen.serverNow);
        if (left > 0) readers.push({ value: seen.zset[i], ...ownerField(seen.zset[i]), pttl: left });
      }
    }
    // A queued writer's live ticket holds new readers off as an intent key does, while its claim
    // has not lapsed (docs/handoff.md §10; read-acquire.lua reads the same).
    const claims = handoffKeysOf(key, master)[3];
    const replies = await exec(
      master.client
        .multi()
        .exists(intentKeyOf(key, master))
        .zrangebyscore(queueKeysOf(key, master)[1], `(${seen.serverNow}`, '+inf', 'LIMIT', 0, 16),
    );
    const live = replyAt(replies, 1) as string[];
    let writerWaiting = replyAt(replies, 0) === 1;
    if (!writerWaiting && live.length > 0) {
      const deadlines = replyAt(await exec(master.client.multi().hmget(claims, ...live.map((e) => `d${e}`))), 0);
      writerWaiting = (deadlines as (string | null)[]).some((d) => d === null || Number(d) > seen.serverNow);
    }
    const longest = [...readers].sort((a, b) => b.pttl - a.pttl)[0];
    const fields = { readers, writerWaiting };
    return longest ? { fields, owner: { owner: longest.owner ?? null, pttl: longest.pttl } } : { fields };
  },
  summarize: (holdings, tally) => {
    const readers = new Map<string, number[]>();
    let waiting = 0;
    for (const h of holdings) {
      for (const r of h.readers ?? []) push(readers, r.value, r.pttl);
      if (h.writerWaiting) waiting++;
    }
    const views = tally.summarize(readers);
    const fields = { readers: views, writerWaiting: waiting >= tally.quorum };
    return views.length > 0 ? { fields, owner: { owner: views[0].owner ?? null } } : { fields };
  },
};

/**
 * The read lock: a reader on one key or several (all or none on each master). It carries no state.
 *
 * @example
 * READ.extend(quorum, lock, 5_000, commandTimeout);
 */
export const READ: LockKind<undefined> = {
  name: 'read',
  exclusive: false,
  modeOf: () => ({ mode: 'read' }),
  queues: () => false,
  // Granted where no writer holds and no writer waits.
  acquire: (context, request) =>
    sharedAttempt(context, request, async () => {
      const { keys, value } = request;
      const round = voteRound(
        context.masters,
        context.quorum,
        context.timeout,
        (m) => readAcquireOn(m, keys, value, String(request.ttl)),
        (reply) => reply === 1,
        context.trusts,
      );
      const cleanUp = (): VoteRound[] => [releaseRead(context, keys, value, context.timeout, false)];
      return { round, won: await round.decided, roomLeft: true, cleanUp };
    }),
  extend: (quorum, lock, ttl, timeout) =>
    voteRound(
      quorum.masters,
      quorum.quorum,
      timeout,
      (m) => readExtendOn(m, lock.keys, lock.value, String(ttl)),
      (r) => r === 1,
      quorum.trusts,
    ),
  release: (quorum, lock, timeout, announce) => releaseRead(quorum, lock.keys, lock.value, timeout, announce),
  // A read inside a read or a write runs on the outer lock; a permit is another lock.
  covers: (held, _requested, resource) => {
    const { limit } = modeOf(held);
    if (limit !== undefined) limitMismatch(undefined, limit, resource);
    return true;
  },
  // Beside other readers (and permits, on other keys), never beside a writer.
  admits: (holders) =>
    holders.every((h) => {
      const { mode, limit } = modeOf(h);
      return mode === 'read' || limit !== undefined;
    }),
  reader,
};

/** A call for a read lock: one request for every such call. */
export const READ_REQUEST: KindRequest<undefined> = Object.freeze({ kind: READ, state: undefined });
