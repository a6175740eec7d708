import type { Redis } from 'ioredis';
import type { AcquireRequest, AcquireRoundKind } from './acquire-round.js';
import { driftOf } from './clock.js';
import type { Master } from './master.js';
import { companionKeyOf } from './cluster-keys.js';
import { announceFlagFor, handoverChannelLua, releaseChannelFor, releaseChannelOf } from './release-channel.js';
import { voteRound } from './votes.js';

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

/** A waiter's place in the masters' queue of one key. */
export interface HandoffTicket {
  /** Random id, unique per acquisition. */
  readonly id: string;
  /** The order key: the acquisition's wall-clock start (ms). Ties are ordered by `id` on every master. */
  readonly score: number;
  /** How long a master keeps the ticket after each attempt, ms: longer than the wait before the next. */
  lease: number;
  /**
   * The claim window, ms: how long after its last attempt that found the key taken the ticket may
   * keep a free key from the tickets behind it (docs/handoff.md §4). Longer than the wait before its
   * next attempt plus that attempt's round trip, so that a waiter that keeps up never loses its turn.
   */
  claim: number;
  /**
   * Direct handover (docs/handoff.md §3): the value the lock will have (every ticketed attempt uses
   * it) and its TTL, so that a release can set the key to it at once. Absent for a fenced lock,
   * whose token needs its own round: a release then reserves the key for the ticket instead.
   */
  readonly handover?: { readonly value: string; readonly ttl: number };
}

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
export const RESERVED_PREFIX = '~';

const PRUNE = `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('zrangebyscore', KEYS[3], '-inf', now)
for _, m in ipairs(dead) do
  redis.call('zrem', KEYS[2], m)
  redis.call('hdel', KEYS[4], 'w' .. m, 'd' .. m)
end
if #dead > 0 then redis.call('zremrangebyscore', KEYS[3], '-inf', now) end`;

/**
 * The ticket a free key (or a release's handover) goes to: the first in the queue whose claim has
 * not lapsed (docs/handoff.md §4), with its score and claim deadline; nil when every ticket's has
 * (only the first 16 are looked at). A ticket without a claim (queued by an older version) claims.
 * A ticket without a lease is dropped: nothing would ever prune it (an evicting master dropped the
 * leases key but not the queue's), and without a claim either it would hold the key back for good.
 */
const CLAIMANT = `
local function claimant(now)
  local q = redis.call('zrange', KEYS[2], 0, 15, 'withscores')
  for i = 1, #q, 2 do
    if redis.call('zscore', KEYS[3], q[i]) then
      local d = tonumber(redis.call('hget', KEYS[4], 'd' .. q[i]))
      if not d or d > now then return q[i], tonumber(q[i + 1]), d end
    else
      redis.call('zrem', KEYS[2], q[i])
      redis.call('hdel', KEYS[4], 'w' .. q[i], 'd' .. q[i])
    end
  end
  return nil
end`;

/**
 * Hands a key (KEYS[1]; queue KEYS[2], leases KEYS[3]) to the queue's first entry `first`: a direct
 * ticket gets its value for its TTL and leaves the queue; any other gets a reservation for `res` ms.
 * Publishes `head .. '\n' .. ticket id` (and, for a direct handover, `'\n' .. the master's time`,
 * ms) with `pub` on the handover channel of the ticket's instance (from the release channel `ch`).
 */
const HAND = `${CLAIMANT}
local function hand(first, res, now, pub, ch, head)
  local id, ttl, v = string.match(first, '^(%S+) (%d+) (%S+)$')
  local tail = first
  if v then
    redis.call('set', KEYS[1], v, 'PX', ttl)
    redis.call('zrem', KEYS[2], first)
    redis.call('zrem', KEYS[3], first)
    local w = tonumber(redis.call('hget', KEYS[4], 'w' .. first))
    redis.call('hdel', KEYS[4], 'w' .. first, 'd' .. first)
    if w then
      -- its attempts may renew the handed key for two claim windows (see the ticket script)
      redis.call('hset', KEYS[4], 'h' .. v, now + 2 * w)
      if redis.call('pttl', KEYS[4]) < 2 * w then redis.call('pexpire', KEYS[4], 2 * w) end
    end
    tail = id .. '\\n' .. now
  else
    id = first
    redis.call('set', KEYS[1], '${RESERVED_PREFIX}' .. first, 'PX', res)
  end
  redis.call(pub, ${handoverChannelLua('ch', 'id')}, head .. '\\n' .. tail)
end`;

export const HANDOFF_LUA = {
  /**
   * KEYS: lock key, queue, leases, claims[, fencing counter]; ARGV: value, ttl, queue entry, score,
   * lease ms, claim window ms, ticket id. Replies {granted, highest fencing counter or rank, master
   * time ms, handed}.
   * Grants when the key already holds this value (`handed` is 1 when the ticket has left the
   * queue: only a release's handover does that; the TTL starts again), when it is reserved for this
   * ticket, or when it is free and this ticket is the claimant: the first live one whose claim has
   * not lapsed (or none). Otherwise replies {0, how many live tickets are ahead of it, time, 0, ahead,
   * wait}, `ahead` 1 when a live ticket ahead of it waits or a waiter ahead of it holds the key (a
   * handed value names its ticket's order: see `handoverValue`), `wait` the ms until the key can be
   * this waiter's at the soonest (the claimant's claim lapses, or the key expires), -1 if unknown.
   * Either way the ticket is (re)queued:
   * the winner withdraws it from every master once it has a quorum, so that a waiter that lost a
   * split vote keeps its place on every master and the masters' queues stay the same.
   * A ticket's claim lapses `window` ms after its last attempt that found the key taken: taking a
   * free key (and failing to keep it) does not renew it, nor does a refusal once it has lapsed, so a
   * waiter that cannot finish holds a free key back for one window at most.
   */
  acquire: `${PRUNE}${CLAIMANT}
local v = redis.pcall('get', KEYS[1])
if type(v) == 'table' then v = '' end -- readers or permits hold the key: taken, by nobody queued
if v == ARGV[1] then
  local handed = 1
  if redis.call('zscore', KEYS[2], ARGV[3]) then handed = 0 end
  local renewable = tonumber(redis.call('hget', KEYS[4], 'h' .. ARGV[1]))
  if handed == 1 and renewable and renewable <= now then
    -- handed over two claim windows ago and still not counted (its replies and messages are lost or
    -- late): no longer renewed, the key lives out its TTL and then goes to the claimant
    return {0, 0, now, 0, 0, redis.call('pttl', KEYS[1])}
  end
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, 0, now, handed}
end
local free = v == ('${RESERVED_PREFIX}' .. ARGV[7])
local first, score, deadline
if v == false then
  first, score, deadline = claimant(now)
  free = first == nil or first == ARGV[3]
end
local lease = tonumber(ARGV[5])
local function queue()
  redis.call('zadd', KEYS[2], ARGV[4], ARGV[3])
  redis.call('zadd', KEYS[3], now + lease, ARGV[3])
  redis.call('hset', KEYS[4], 'w' .. ARGV[3], ARGV[6])
  local d = tonumber(redis.call('hget', KEYS[4], 'd' .. ARGV[3]))
  if v or d == nil or (not free and d > now) then
    redis.call('hset', KEYS[4], 'd' .. ARGV[3], now + tonumber(ARGV[6]))
  end
  for i = 2, 4 do
    if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
  end
end
if free then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  queue()
  local high = 0
  if #KEYS > 4 then high = tonumber(redis.call('get', KEYS[5]) or '0') end
  return {1, high, now, 0}
end
queue()
local rank = redis.call('zrank', KEYS[2], ARGV[3])
local ahead = 0
if rank > 0 then ahead = 1 end
if v then
  local score, id = string.match(v, '^(%d+)%.([%w_%-]+)%.')
  if score and (tonumber(score) < tonumber(ARGV[4]) or (tonumber(score) == tonumber(ARGV[4]) and id < ARGV[7])) then ahead = 1 end
end
local wait = -1
if v then wait = redis.call('pttl', KEYS[1]) elseif deadline then wait = deadline - now end
return {0, rank, now, 0, ahead, wait}`,
  /**
   * KEYS: lock key, queue, leases, claims; ARGV: value, announce ('1', 's' for SPUBLISH, '0'), channel,
   * reservation ms. Compare-and-delete; when announcing and a live ticket waits, hands the key to
   * the claimant (the first whose claim has not lapsed) instead (see HAND: `value\nticket[\nmaster time]` to the ticket's instance); else
   * publishes `value` on the release channel.
   * Returns 2 when it handed the key on, 1 when it deleted it, 0 when the key did not hold the value.
   */
  release: `${HAND}
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('del', KEYS[1])
redis.call('hdel', KEYS[4], 'h' .. ARGV[1]) -- a handover's renewal limit (see HAND): the lock is over
if ARGV[2] == '0' then return 1 end
local pub = ARGV[2] == 's' and 'spublish' or 'publish'
if redis.call('exists', KEYS[2]) == 1 then${PRUNE}
  local first = claimant(now)
  if first and string.match(first, ' (%S+)$') == ARGV[1] then
    -- the holder's own ticket: its withdrawal did not land before this release
    redis.call('zrem', KEYS[2], first)
    redis.call('zrem', KEYS[3], first)
    redis.call('hdel', KEYS[4], 'w' .. first, 'd' .. first)
    first = claimant(now)
  end
  if first then
    hand(first, ARGV[4], now, pub, ARGV[3], ARGV[1])
    return 2
  end
end
redis.call(pub, ARGV[3], ARGV[1])
return 1`,
  /**
   * KEYS: lock key, queue, leases, claims; ARGV: value, channel, reservation ms, queue entry, ticket
   * id, announce ('1', or 's' to SPUBLISH), the ticket's score, its lease ms, its claim window ms.
   * Gives a key handed to this waiter on to the claimant (see HAND), or frees it when none waits, unless that ticket is
   * not ahead of this waiter in the masters' order (the waiter ahead, not queued here yet, will be:
   * giving the key to one behind would serve it out of turn); `~id\nnext[\ntime]` goes to the next
   * ticket's instance. The waiter, still waiting, takes its place in the queue again. Returns 1 when
   * it gave the key on.
   */
  yield: `${HAND}
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then return 0 end${PRUNE}
local first, score = claimant(now)
if first and (score > tonumber(ARGV[7]) or (score == tonumber(ARGV[7]) and first >= ARGV[4])) then return 0 end
local pub = ARGV[6] == 's' and 'spublish' or 'publish'
redis.call('del', KEYS[1])
if first then
  hand(first, ARGV[3], now, pub, ARGV[2], '${RESERVED_PREFIX}' .. ARGV[5])
else
  redis.call(pub, ARGV[2], '${RESERVED_PREFIX}' .. ARGV[5])
end
local lease = tonumber(ARGV[8])
redis.call('zadd', KEYS[2], ARGV[7], ARGV[4])
redis.call('zadd', KEYS[3], now + lease, ARGV[4])
redis.call('hset', KEYS[4], 'w' .. ARGV[4], ARGV[9], 'd' .. ARGV[4], now + tonumber(ARGV[9]))
for i = 2, 4 do
  if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
end
return 1`,
  /**
   * KEYS: lock key, queue, claims; ARGV: value, queue entry, took ('1' when this attempt's reply from
   * this master said it set the value itself: granted, not handed). Undoes a failed ticketed attempt:
   * deletes the value while the ticket is still queued (a grant of this attempt). A key handed over
   * by a release (the ticket has left the queue) stays: the waiter counts it (docs/handoff.md §3).
   * Only a direct ticket (`id ttl value`) is ever handed its value: a fenced ticket's entry is its
   * id, a release gives it a reservation, so its value is always this attempt's and goes even when
   * the ticket left the queue otherwise (its lease lapsed while the waiter stalled, and another
   * script pruned it). So does a direct ticket's value that this attempt set itself, unless a release
   * has handed the value over since (a handover leaves `h<value>` in the claims: see HAND).
   */
  undo: `
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('zscore', KEYS[2], ARGV[2]) or not string.find(ARGV[2], ' ', 1, true)
  or (ARGV[3] == '1' and redis.call('hexists', KEYS[3], 'h' .. ARGV[1]) == 0) then
  redis.call('del', KEYS[1])
  return 1
end
return 0`,
  /**
   * KEYS: lock key, queue, leases, claims; ARGV: queue entry, channel, reservation ms, ticket id, value
   * given up ('' when the waiter won)[, 's' to SPUBLISH]. Leaves the queue; a reservation for the ticket, or the value
   * given up, passes to the claimant (`~id\nnext[\ntime]` to its instance), or the key is
   * freed (`~id` on the release channel).
   */
  withdraw: `${HAND}
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
redis.call('hdel', KEYS[4], 'w' .. ARGV[1], 'd' .. ARGV[1])
if ARGV[5] ~= '' then redis.call('hdel', KEYS[4], 'h' .. ARGV[5]) end
local mine = '${RESERVED_PREFIX}' .. ARGV[4]
local v = redis.pcall('get', KEYS[1])
if v ~= mine and (ARGV[5] == '' or v ~= ARGV[5]) then return 0 end
local pub = ARGV[6] == 's' and 'spublish' or 'publish'
redis.call('del', KEYS[1])${PRUNE}
local first = claimant(now)
if first then
  hand(first, ARGV[3], now, pub, ARGV[2], mine)
else
  redis.call(pub, ARGV[2], mine)
end
return 1`,
} as const;

/**
 * `HANDOFF_LUA.release` for a plain (non-cluster) master, in the shape of a compare-and-delete:
 * KEYS: the lock key only; ARGV: value, reservation ms ('0': silent, no handover, no message).
 * The queue keys and the release channel are named on the master from the lock key, as
 * `queueKeysOf` and `releaseChannelOf` name them there, so an uncontended release encodes and sends
 * one key and two short arguments instead of four keys and four arguments. A standalone master
 * runs a script that touches undeclared keys; a cluster node needs them declared for routing, so
 * clusters keep the declared form (and so does a connection with an ioredis `keyPrefix`, which
 * would prefix the derived channel).
 */
export const PLAIN_RELEASE_LUA = plainFormOf(HANDOFF_LUA.release);

function plainFormOf(lua: string): string {
  const names: Record<string, string> = {
    'KEYS[2]': 'queueKey',
    'KEYS[3]': 'leaseKey',
    'KEYS[4]': 'claimKey',
    'ARGV[2]': 'announce',
    'ARGV[3]': 'channel',
    'ARGV[4]': 'reserve',
  };
  const body = lua.replace(/KEYS\[[234]\]|ARGV\[[234]\]/g, (ref) => names[ref]);
  if (/KEYS\[(?!1\])|ARGV\[(?!1\])/.test(body))
    throw new Error('the plain release script reads an argument it is not sent');
  return `
local queueKey, leaseKey, claimKey = KEYS[1] .. ':handoff:queue', KEYS[1] .. ':handoff:lease', KEYS[1] .. ':handoff:claim'
local reserve = ARGV[2]
local announce = reserve == '0' and '0' or '1'
local channel = '${releaseChannelOf('')}' .. KEYS[1]${body}`;
}

/** A client with the handoff scripts registered (EVALSHA, with EVAL on NOSCRIPT). */
export interface HandoffClient {
  quorumLockTicketAcquire(
    numKeys: number,
    ...keysThenArgs: (string | number)[]
  ): Promise<[granted: number, counterOrRank: number, masterTime: number, handed: number]>;
  quorumLockTicketUndo(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockTicketYield(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockHandoffRelease(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumLockPlainRelease(key: string, value: string, reserveOrSilent: string): Promise<number>;
  quorumLockWithdraw(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number>;
}

function handoffClient(master: Master): HandoffClient {
  const client = master.client as Redis & Partial<HandoffClient>;
  if (typeof client.quorumLockPlainRelease !== 'function') {
    client.defineCommand('quorumLockTicketAcquire', { lua: HANDOFF_LUA.acquire });
    client.defineCommand('quorumLockHandoffRelease', { lua: HANDOFF_LUA.release });
    client.defineCommand('quorumLockPlainRelease', { lua: PLAIN_RELEASE_LUA, numberOfKeys: 1 });
    client.defineCommand('quorumLockWithdraw', { lua: HANDOFF_LUA.withdraw });
    client.defineCommand('quorumLockTicketUndo', { lua: HANDOFF_LUA.undo });
    client.defineCommand('quorumLockTicketYield', { lua: HANDOFF_LUA.yield });
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
  if (namesCompanionsOnMaster(master)) return client.quorumLockPlainRelease(key, value, reserve);
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

/** True when the plain release script (`PLAIN_RELEASE_LUA`) can name the key's companions on `master`. */
function namesCompanionsOnMaster(master: Master): boolean {
  return !master.cluster && !master.client.options?.keyPrefix;
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
 * Undoes a failed ticketed attempt on one master, leaving a key a release handed over (see `undo`).
 * `reply`: the attempt's reply from that master, if any: a grant that was not a handover tells the
 * master that the attempt set the value itself.
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
      handoffClient(m).quorumLockWithdraw(
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
