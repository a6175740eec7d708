import type { AcquireRequest, AcquireCommand, HandoffTicket } from '../acquire-request.js';
import { driftOf } from '../../util/clock.js';
import type { Master } from '../../backend/master.js';
import { companionKeyOf } from '../../backend/cluster/cluster-keys.js';
import { announceFlagFor, releaseChannelFor } from '../channels.js';
import type { HandoffScripts } from '../../lua/scripts.js';
import { LUA_NAMES } from '../../lua/scripts.generated.js';
import { voteRound } from '../../quorum/vote-round.js';
import { coalesceWrites } from '../../backend/write-batcher.js';
import { batchesOn, plainRelease } from './plain-batch.js';

/**
 * Handoff between instances (docs/handoff.md). Waiters for a single-key exclusive lock that were
 * refused once take a ticket: the same order key (arrival time, then ticket id) on every master,
 * in a per-key queue whose entries lapse unless renewed by the waiter's attempts. On each master:
 * - a release that finds live tickets hands the key over instead of deleting it: to the first
 *   ticket's own value for its TTL (the waiter then holds the lock without an attempt), or, for a
 *   fenced waiter, a short reservation; it publishes the ticket's id on a channel only the
 *   waiter's instance follows (`handoverChannelOf`), so that only that waiter is
 *   woken and a newcomer's plain `SET NX` finds the key taken;
 * - a key that is free (no reservation) goes only to the first live ticket (bakery order), so the
 *   masters pick the same winner whoever's commands arrive first.
 * Nothing changes while nobody waits: the first attempt is the plain `SET NX`, and a release with
 * no queue deletes as before.
 */

/** The ticket's entry in the masters' queue: its id, or `id ttl value` for a direct handover. */
export function memberOf(ticket: HandoffTicket): string {
  return ticket.handover ? `${ticket.id} ${ticket.handover.ttl} ${ticket.handover.value}` : ticket.id;
}

/**
 * The masters' queue keys of a lock key: the order, and each ticket's lapse time (on a cluster
 * node, in the lock key's slot: docs/cluster.md).
 */
export function queueKeysOf(key: string, master: Pick<Master, 'cluster'> = {}): [order: string, lease: string] {
  return [companionKeyOf(master, key, ':handoff:queue'), companionKeyOf(master, key, ':handoff:lease')];
}

/**
 * The keys every handoff script takes: the lock key, its queue keys, and the tickets' claims on a
 * free key (a hash: `w<entry>` the claim window, `d<entry>` the master time the claim lapses,
 * `h<value>` after a direct handover: until when the waiter's attempts may renew the handed key).
 *
 * @example
 * handoffKeysOf('lock:orders'); // ['lock:orders', 'lock:orders:handoff:queue', 'lock:orders:handoff:lease', 'lock:orders:handoff:claim']
 */
export function handoffKeysOf(key: string, master: Pick<Master, 'cluster'> = {}): string[] {
  return [key, ...queueKeysOf(key, master), companionKeyOf(master, key, ':handoff:claim')];
}

/** The value a reservation puts at the lock key: no lock value starts with `~` (they are base64url). */
export const RESERVED_PREFIX = LUA_NAMES.RESERVED_PREFIX;

/** An attempt of a queued waiter: the ticket script (fenced or not), single key only. */
export const ticketed: AcquireCommand = {
  name: 'ticketed',
  applies: (r) => r.ticket !== undefined,
  send: async (m, r) => {
    const t = r.ticket!;
    // On a cluster the counter is in another slot: read after a grant (a later read can only be higher).
    const counter = r.counters && !m.cluster ? [r.counters[0]] : [];
    const keys = [...handoffKeysOf(r.keys[0], m), ...counter];
    const reply = await handoffClient(m).quorumLockTicketAcquire(
      keys.length,
      ...keys,
      r.value,
      String(r.ttl),
      memberOf(t),
      t.score,
      String(Math.ceil(t.lease)),
      String(Math.ceil(t.claim)),
      t.id, // last: the tests find an attempt's ticket by its last argument
    );
    if (!m.cluster || !r.counters || !Array.isArray(reply) || reply[0] !== 1) return reply;
    const [, , ...rest] = reply as unknown[];
    return [1, Number((await m.client.get(r.counters[0])) ?? 0), ...rest];
  },
  isGranted: (reply) => Array.isArray(reply) && reply[0] === 1,
  highestCounter: (reply) => (Array.isArray(reply) && reply[0] === 1 ? Number(reply[1]) : 0),
};

/** True when an acquisition can queue with a ticket: one key, exclusive. */
export function canQueue(request: Pick<AcquireRequest, 'keys'>, shared: boolean): boolean {
  return request.keys.length === 1 && !shared;
}

/**
 * Where a refused ticketed round left the waiter: the number of live tickets ahead of it as a
 * quorum of the refusing masters see it (the quorum-th smallest), or undefined without replies.
 */
export function rankOf(replies: readonly unknown[], quorum: number): number | undefined {
  const ranks = replies
    .filter((r): r is [number, number] => Array.isArray(r) && r[0] === 0)
    .map((r) => Number(r[1]))
    .sort((a, b) => a - b);
  if (ranks.length === 0) return undefined;
  return ranks[Math.min(ranks.length, quorum) - 1];
}

/**
 * How soon the key can be this waiter's, ms, after a refused ticketed round: the claimant's claim
 * lapses or the key expires (`wait` in the ticket script's reply), as a quorum of masters sees it
 * (a master that granted counts as at once); undefined when no quorum of masters said.
 */
export function claimWaitOf(replies: readonly unknown[], quorum: number): number | undefined {
  const waits = replies
    .filter((r): r is unknown[] => Array.isArray(r))
    .map((r) => (r[0] === 1 ? 0 : typeof r[5] === 'number' && r[5] >= 0 ? r[5] : Infinity))
    .sort((a, b) => a - b);
  const wait = waits[quorum - 1];
  return wait === undefined || wait === Infinity ? undefined : wait;
}

/**
 * Compare-and-delete of a single key that hands it to the claimant (the first live ticket whose
 * claim has not lapsed), if any: resolves to 2 when it handed the key on, 1 when it deleted it, 0
 * when the key did not hold `value`. `reserve`: the reservation for a fenced claimant, ms, as a
 * string (computed once per release round), or '0' for a silent release (a failed attempt's
 * clean-up: nothing was really free, no handover, no message).
 *
 * @example
 * await handoffRelease(master, 'lock:orders', lock.value, String(commandTimeout)); // 2, 1 or 0
 */
export function handoffRelease(master: Master, key: string, value: string, reserve: string): Promise<number> {
  const client = handoffClient(master);
  if (batchesOn(master)) return plainRelease(master, key, value, reserve);
  coalesceWrites(master);
  const keys = handoffKeysOf(key, master);
  return client.quorumLockHandoffRelease(
    keys.length,
    ...keys,
    value,
    announceFlagFor(master, reserve !== '0'),
    releaseChannelFor(master, key),
    reserve,
  );
}

/**
 * A direct ticket's value: its order (score and id, so that a master can tell a waiter ahead of
 * another) and 16 random bytes (so that no one else can release or extend it).
 */
export function handoverValue(id: string, score: number, random: string): string {
  return `${score}.${id}.${random}`;
}

/**
 * Gives the keys handed to this waiter on to the claimant of each master's queue (a split
 * handover, docs/handoff.md §6): sent on every connection before the waiter's next attempt.
 * Resolves, within `timeoutMs` (the command timeout: a master that hangs cannot hold the waiter),
 * to false when surely no master gave anything on (each answered 0), so that what the waiter knows
 * still holds.
 */
export async function yieldHandover(
  masters: readonly Master[],
  key: string,
  ticket: HandoffTicket,
  timeoutMs: number,
): Promise<boolean> {
  const round = voteRound(
    masters,
    masters.length,
    timeoutMs,
    (m) =>
      handoffClient(m).quorumLockTicketYield(
        4,
        ...handoffKeysOf(key, m),
        ticket.handover!.value,
        releaseChannelFor(m, key),
        String(Math.ceil(timeoutMs)),
        memberOf(ticket),
        ticket.id,
        announceFlagFor(m, true),
        ticket.score,
        String(Math.ceil(ticket.lease)),
        String(Math.ceil(ticket.claim)),
      ),
    () => true,
  );
  await round.settled;
  return round.replies.some((r) => r !== 0);
}

/**
 * True when a failed ticketed round holds some master for this waiter while a waiter ahead of it
 * holds or waits for another: this waiter should give its masters on (`yieldHandover`).
 */
export function shouldYield(replies: readonly unknown[]): boolean {
  const arrays = replies.filter((r): r is unknown[] => Array.isArray(r));
  return arrays.some((r) => r[0] === 1) && arrays.some((r) => r[0] === 0 && r[4] === 1);
}

/**
 * Undoes a failed ticketed attempt on one master, leaving a key a release handed over (see
 * ticket-undo.lua). `reply`: the attempt's reply from that master, if any: a grant that was not a
 * handover tells the master that the attempt set the value itself.
 */
export function undoTicketed(
  master: Master,
  key: string,
  value: string,
  ticket: HandoffTicket,
  reply?: unknown,
): Promise<number> {
  const [, queue, , claims] = handoffKeysOf(key, master);
  const took = Array.isArray(reply) && reply[0] === 1 && reply[3] === 0 ? '1' : '0';
  return handoffClient(master).quorumLockTicketUndo(3, key, queue, claims, value, memberOf(ticket), took);
}

/**
 * Removes a ticket from every master's queue. `givenUp`: the value of a waiter that did not take the
 * lock, which a release may have handed to it already (it passes to the next ticket). Resolves once
 * every master answered or `timeoutMs` (the command timeout) passed; never rejects. A waiter need
 * not wait for it (the ticket lapses anyway); `close()` does, so that nothing stays queued.
 */
export function withdrawTicket(
  masters: readonly Master[],
  key: string,
  ticket: HandoffTicket,
  timeoutMs: number,
  givenUp = '',
): Promise<void> {
  return voteRound(
    masters,
    masters.length,
    timeoutMs,
    (m) =>
      handoffClient(m).quorumLockTicketWithdraw(
        4,
        ...handoffKeysOf(key, m),
        memberOf(ticket),
        releaseChannelFor(m, key),
        String(Math.ceil(timeoutMs)),
        ticket.id,
        givenUp,
        announceFlagFor(m, true),
      ),
    () => true,
  ).settled;
}

/**
 * Splits a release message: `value`; `value\nticket` when the key was reserved for that ticket;
 * `value\nticket\ntime` when it was handed to it directly, at that master time (ms).
 */
export function parseReleaseMessage(message: string): { value: string; ticket?: string; at?: number } {
  const [value, ticket, at] = message.split('\n');
  return { value, ticket, at: at === undefined ? undefined : Number(at) };
}

/** A direct handover heard in a release message: that master's time of it (ms) and the message's local arrival (monotonic ms). */
export interface HandoverHeard {
  readonly at: number;
  readonly arrived: number;
}

/**
 * What a waiter knows of direct handovers to its ticket (docs/handoff.md §3, *Safety*). Per master,
 * an instant on this process's monotonic clock surely no later than the moment that master last set
 * the waiter's value for the full TTL, so that the key lives at least `ttl` past it:
 * - a ticketed reply that found the value there (it restarted the TTL): the start of its round;
 * - a release message: dated from the anchor (the ticketed round whose reply carried that master's
 *   latest time, `sent + (T − at)`), and never later than the message's arrival here, so that a
 *   master's clock stepping forward between the anchor and the handover cannot date it late.
 */
export class HandoverLedger {
  /** Ticketed rounds since the last reset: their replies fill in as masters answer. */
  #rounds: { start: number; replies: readonly unknown[] }[] = [];
  #messagesCount = true;
  /** The replies of the last ticketed round (kept across `reset`). */
  #last: readonly unknown[] = [];

  /** Notes a ticketed round that began at `start` (monotonic ms); its replies are read when needed. */
  note(start: number, replies: readonly unknown[]): void {
    this.#rounds.push({ start, replies });
    if (this.#rounds.length > 8) this.#rounds.shift();
    this.#last = replies;
  }

  /**
   * Per master (of `count`), false when the ticket has surely left that master's queue: the last
   * ticketed round found the key handed to it there, or that master's handover message (in `seen`)
   * is later than its reply to that round. Only this waiter's attempts (and its giving
   * on, after which this knows nothing until its next round) queue its ticket, so nothing else puts it
   * back. A winner withdraws its ticket only where this is true.
   */
  mayBeQueued(seen: ReadonlyMap<number, HandoverHeard> | undefined, count: number): boolean[] {
    return Array.from({ length: count }, (_, i) => {
      const reply = this.#last[i];
      if (!Array.isArray(reply) || reply.length < 4) return true;
      if (reply[0] === 1 && reply[3] === 1) return false;
      return !((seen?.get(i)?.at ?? -Infinity) > Number(reply[2]));
    });
  }

  /**
   * After this waiter gave its masters on: what it knew no longer holds. Rounds before it are
   * forgotten, and release messages no longer count (one sent before could arrive after); only
   * later attempts' replies do.
   */
  reset(): void {
    this.#rounds = [];
    this.#messagesCount = false;
    this.#last = []; // giving on queued the ticket again where it gave: see `mayBeQueued`
  }

  /**
   * The monotonic instant before which a quorum of trusted masters surely holds the value (the
   * TTL counted from each one's handover, less drift), when a quorum has handed it over; else
   * undefined.
   */
  validUntil(
    seen: ReadonlyMap<number, HandoverHeard> | undefined,
    quorum: number,
    trusted: (index: number) => boolean,
    ttl: number,
    driftFactor: number,
  ): number | undefined {
    const anchors = new Map<number, { sent: number; at: number }>();
    const since = new Map<number, number>();
    const later = (i: number, instant: number): void => {
      if (!(instant <= (since.get(i) ?? -Infinity))) since.set(i, instant);
    };
    for (const { start, replies } of this.#rounds) {
      replies.forEach((reply, i) => {
        if (!Array.isArray(reply) || reply.length < 4) return;
        const at = Number(reply[2]);
        if (!(at <= (anchors.get(i)?.at ?? -Infinity))) anchors.set(i, { sent: start, at });
        if (reply[0] === 1 && reply[3] === 1) later(i, start); // this round's script restarted the TTL
      });
    }
    if (this.#messagesCount)
      for (const [i, { at, arrived }] of seen ?? []) {
        const anchor = anchors.get(i);
        if (!anchor) continue;
        const gap = at - anchor.at; // master ms; the monotonic clock may run at another rate: allow for drift
        later(i, Math.min(anchor.sent + gap - Math.abs(gap) * driftFactor, arrived));
      }
    const bounds = [...since].filter(([i]) => trusted(i)).map(([, instant]) => instant);
    if (bounds.length < quorum) return undefined;
    bounds.sort((a, b) => b - a);
    return bounds[quorum - 1] + ttl - driftOf(ttl, driftFactor);
  }
}

function handoffClient(master: Master): HandoffScripts {
  return master.scripts;
}
