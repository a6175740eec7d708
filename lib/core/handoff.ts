import type { Redis } from 'ioredis';
import type { AcquireRequest, AcquireRoundKind } from './acquire-round.js';
import type { Master } from './master.js';
import { companionKeyOf } from './cluster-keys.js';
import { announceFlagFor, releaseChannelFor } from './release-channel.js';

/**
 * Handoff between instances (docs/handoff.md). Waiters for a single-key exclusive lock that were
 * refused once take a ticket: the same order key (arrival time, then ticket id) on every master,
 * in a per-key queue whose entries lapse unless renewed by the waiter's attempts. On each master:
 * - a release that finds live tickets hands the key over: it writes a short reservation for the
 *   first ticket instead of deleting, and publishes its id, so that only that waiter is woken and
 *   a newcomer's plain `SET NX` finds the key taken;
 * - a key that is free (no reservation) goes only to the first live ticket (bakery order), so the
 *   masters pick the same winner whoever's commands arrive first.
 * Nothing changes while nobody waits: the first attempt is the plain `SET NX`, and a release with
 * no queue deletes as before.
 */

/** A waiter's place in the masters' queue of one key. */
export interface HandoffTicket {
  /** Random id, unique per acquisition. */
  readonly id: string;
  /** The order key: the acquisition's wall-clock start (ms). Ties are ordered by `id` on every master. */
  readonly score: number;
  /** How long a master keeps the ticket after each attempt, ms: longer than the wait before the next. */
  lease: number;
}

/**
 * The masters' queue keys of a lock key: the order, and each ticket's lapse time (on a cluster
 * node, in the lock key's slot: docs/cluster.md).
 */
export function queueKeysOf(key: string, master: Pick<Master, 'cluster'> = {}): [order: string, lease: string] {
  return [companionKeyOf(master, key, ':handoff:queue'), companionKeyOf(master, key, ':handoff:lease')];
}

/** The value a reservation puts at the lock key: no lock value starts with `~` (they are base64url). */
export const RESERVED_PREFIX = '~';

const PRUNE = `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('zrangebyscore', KEYS[3], '-inf', now)
for _, m in ipairs(dead) do redis.call('zrem', KEYS[2], m) end
if #dead > 0 then redis.call('zremrangebyscore', KEYS[3], '-inf', now) end`;

export const HANDOFF_LUA = {
  /**
   * KEYS: lock key, queue, leases[, fencing counter]; ARGV: value, ttl, ticket id, score, lease ms.
   * Takes the key when it is reserved for this ticket, or free and this ticket is the first live
   * one (or none waits): {1, highest fencing counter}. Otherwise (re)queues the ticket and returns
   * {0, how many live tickets are ahead of it}. A grant leaves the ticket queued: the winner
   * withdraws it from every master once it has a quorum, so that a waiter that lost a split vote
   * keeps its place on every master and the masters' queues stay the same.
   */
  acquire: `${PRUNE}
local v = redis.pcall('get', KEYS[1])
local free = v == ('${RESERVED_PREFIX}' .. ARGV[3])
if v == false then
  local first = redis.call('zrange', KEYS[2], 0, 0)[1]
  free = first == nil or first == ARGV[3]
end
if free then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  local high = 0
  if #KEYS > 3 then high = tonumber(redis.call('get', KEYS[4]) or '0') end
  return {1, high}
end
local lease = tonumber(ARGV[5])
redis.call('zadd', KEYS[2], ARGV[4], ARGV[3])
redis.call('zadd', KEYS[3], now + lease, ARGV[3])
for i = 2, 3 do
  if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
end
return {0, redis.call('zrank', KEYS[2], ARGV[3])}`,
  /**
   * KEYS: lock key, queue, leases; ARGV: value, announce ('1', 's' for SPUBLISH, '0'), channel, reservation ms.
   * Compare-and-delete; when announcing and a live ticket waits, reserves the key for the first
   * one instead (for the reservation ms) and publishes `value\nticket`; else publishes `value`.
   * The ticket stays queued (see acquire) until its waiter withdraws it or its lease lapses.
   * Returns 1 when the key held the value, else 0.
   */
  release: `
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('del', KEYS[1])
if ARGV[2] == '0' then return 1 end
local pub = ARGV[2] == 's' and 'spublish' or 'publish'
if redis.call('exists', KEYS[2]) == 1 then${PRUNE}
  local first = redis.call('zrange', KEYS[2], 0, 0)[1]
  if first then
    redis.call('set', KEYS[1], '${RESERVED_PREFIX}' .. first, 'PX', ARGV[4])
    redis.call(pub, ARGV[3], ARGV[1] .. '\\n' .. first)
    return 1
  end
end
redis.call(pub, ARGV[3], ARGV[1])
return 1`,
  /**
   * KEYS: lock key, queue, leases; ARGV: ticket id, channel, reservation ms[, 's' to SPUBLISH]. Leaves the queue (a
   * waiter that won or gave up); a reservation still held for it passes to the next live ticket
   * (published as `~id\nnext`), or the key is freed (published as `~id`).
   */
  withdraw: `
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
local mine = '${RESERVED_PREFIX}' .. ARGV[1]
if redis.pcall('get', KEYS[1]) ~= mine then return 0 end
local pub = ARGV[4] == 's' and 'spublish' or 'publish'
redis.call('del', KEYS[1])${PRUNE}
local first = redis.call('zrange', KEYS[2], 0, 0)[1]
if first then
  redis.call('set', KEYS[1], '${RESERVED_PREFIX}' .. first, 'PX', ARGV[3])
  redis.call(pub, ARGV[2], mine .. '\\n' .. first)
else
  redis.call(pub, ARGV[2], mine)
end
return 1`,
} as const;

/** A client with the handoff scripts registered (EVALSHA, with EVAL on NOSCRIPT). */
export interface HandoffClient {
  quorumLockTicketAcquire(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<[number, number]>;
  quorumLockHandoffRelease(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockWithdraw(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
}

function handoffClient(master: Master): HandoffClient {
  const client = master.client as Redis & Partial<HandoffClient>;
  if (typeof client.quorumLockWithdraw !== 'function') {
    client.defineCommand('quorumLockTicketAcquire', { lua: HANDOFF_LUA.acquire });
    client.defineCommand('quorumLockHandoffRelease', { lua: HANDOFF_LUA.release });
    client.defineCommand('quorumLockWithdraw', { lua: HANDOFF_LUA.withdraw });
  }
  return client as unknown as HandoffClient;
}

/** An attempt of a queued waiter: the ticket script (fenced or not), single key only. */
export const ticketed: AcquireRoundKind = {
  name: 'ticketed',
  applies: (r) => r.ticket !== undefined,
  send: async (m, r) => {
    const t = r.ticket!;
    // On a cluster the counter is in another slot: read after a grant (a later read can only be higher).
    const counter = r.counters && !m.cluster ? [r.counters[0]] : [];
    const keys = [r.keys[0], ...queueKeysOf(r.keys[0], m), ...counter];
    const reply = await handoffClient(m).quorumLockTicketAcquire(
      keys.length,
      ...keys,
      r.value,
      String(r.ttl),
      t.id,
      t.score,
      String(Math.ceil(t.lease)),
    );
    if (!m.cluster || !r.counters || !Array.isArray(reply) || reply[0] !== 1) return reply;
    return [1, Number((await m.client.get(r.counters[0])) ?? 0)];
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

/** Compare-and-delete of a single key that hands it to the first live ticket, if any. */
export function handoffRelease(
  master: Master,
  key: string,
  value: string,
  announce: boolean,
  channel: string,
  reserveMs: number,
): Promise<number> {
  const keys = [key, ...queueKeysOf(key, master)];
  return handoffClient(master).quorumLockHandoffRelease(
    keys.length,
    ...keys,
    value,
    announceFlagFor(master, announce),
    channel,
    String(Math.ceil(reserveMs)),
  );
}

/** Removes a ticket from every master's queue (fire and forget: it lapses anyway). */
export function withdrawTicket(
  masters: readonly Master[],
  key: string,
  ticket: HandoffTicket,
  reserveMs: number,
): void {
  for (const m of masters)
    void handoffClient(m)
      .quorumLockWithdraw(
        3,
        key,
        ...queueKeysOf(key, m),
        ticket.id,
        releaseChannelFor(m, key),
        String(Math.ceil(reserveMs)),
        announceFlagFor(m, true),
      )
      .catch(() => undefined);
}

/** Splits a release message: `value`, or `value\nticket` when the key was handed to that ticket. */
export function parseReleaseMessage(message: string): { value: string; ticket?: string } {
  const at = message.indexOf('\n');
  return at < 0 ? { value: message } : { value: message.slice(0, at), ticket: message.slice(at + 1) };
}
