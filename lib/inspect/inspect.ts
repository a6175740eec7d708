import { driftOf, now } from '../util/clock.js';
import { queueKeysOf } from '../kinds/mutex/handoff.js';
import type { Master } from '../backend/master.js';
import { intentKeyOf, limitKeyOf, permitKeyOf } from '../kinds/lock-mode.js';
import { ownerOfValue } from '../options/owner.js';

/**
 * One reader of a read-write lock on one master, as read by `inspect()`.
 *
 * @example
 * view.masters[0].readers?.map((r) => `${r.value}: ${r.pttl} ms`);
 * @publicApi
 */
export interface MasterReader {
  /** The reader's lock value. */
  readonly value: string;
  /** Who holds it (the `owner` option of its holder); absent when its value carries none. */
  readonly owner?: string;
  /** How long this reader has left on this master, in ms. */
  readonly pttl: number;
}

/**
 * One permit slot of a counting lock on one master, as read by `inspect()`.
 *
 * @example
 * view.masters[0].permits?.filter((p) => p.holder !== null).length; // slots taken on the first master
 * @publicApi
 */
export interface MasterPermit {
  /** The slot's index (0-based; the key is `key + ':permit:' + slot`). */
  readonly slot: number;
  /** The holder's value, or null when the slot is free on this master. */
  readonly holder: string | null;
  /** Who holds the slot (its holder's `owner` option); absent when free or its value carries none. */
  readonly owner?: string;
  /** Remaining time-to-live of the slot on this master in ms, or null when free. */
  readonly pttl: number | null;
}

/**
 * What one master holds for a resource, as read by `inspect()`.
 *
 * @example
 * view.masters.filter((m) => m.error).map((m) => m.master); // masters that did not answer
 * @publicApi
 */
export interface MasterHolding {
  /** The master, as `host:port`. */
  readonly master: string;
  /** The exclusive (write) holder's value on this master, or null when there is none (free, readers, or the master failed). */
  readonly holder: string | null;
  /**
   * Who holds the lock on this master (the holder's `owner` option): the writer's, else the reader's
   * or permit holder's with the longest time left here; null when nothing is held here or the
   * value carries no owner.
   */
  readonly owner: string | null;
  /** Remaining time-to-live of the key on this master in ms (the writer's, or the last reader's), or null when absent (or failed). */
  readonly pttl: number | null;
  /** This master's fencing counter for the resource (`fencingPrefix + resource`), or null when it has none. */
  readonly fencingCounter?: number | null;
  /** The live readers of a read-write lock on this master (`mode: 'read'`); empty when none. Absent when the master failed. */
  readonly readers?: readonly MasterReader[];
  /** True when a writer waits on this master (its intent key, or a queued writer's live ticket, holds off new readers). Absent when the master failed. */
  readonly writerWaiting?: boolean;
  /** The limit this master records for a counting lock on the resource (`limit`), or null when none. Absent when the master failed. */
  readonly limit?: number | null;
  /** The permit slots of a counting lock on this master, one per slot up to `limit`; empty when none. Absent when the master failed. */
  readonly permits?: readonly MasterPermit[];
  /** Why the master could not be read (connection down, timeout…). */
  readonly error?: Error;
}

/**
 * One holder of a shared lock (a reader, or a permit slot's holder) across the masters.
 *
 * @example
 * const quorate = view.readers.filter((r) => r.held).map((r) => r.value);
 * @publicApi
 */
export interface SharedHolderInspection {
  /** The holder's lock value. */
  readonly value: string;
  /** Who holds it (its holder's `owner` option); absent when its value carries none. */
  readonly owner?: string;
  /** How many masters hold it. */
  readonly agreeing: number;
  /** True when a quorum of masters hold it: the holder may believe it holds the lock. */
  readonly held: boolean;
  /** A conservative estimate, in ms, of how long the quorum keeps it (as `LockInspection.validity`); 0 when not held. */
  readonly validity: number;
}

/**
 * One permit slot of a counting lock across the masters.
 *
 * @example
 * view.permits?.slots.filter((s) => s.held).length; // holders with a quorum
 * @publicApi
 */
export interface PermitSlotInspection extends SharedHolderInspection {
  /** The slot's index (0-based). */
  readonly slot: number;
}

/**
 * The counting lock (`limit`) on a resource across the masters.
 *
 * @example
 * if (view.permits) console.log(`${view.permits.held} of ${view.permits.limit} permits held`);
 * @publicApi
 */
export interface PermitsInspection {
  /** The limit the masters record (the highest, if they disagree: see `limits`). */
  readonly limit: number;
  /** Each distinct limit recorded, when the masters disagree (a holder with another `limit` is refused, so this is rare and short-lived). */
  readonly limits?: readonly number[];
  /** How many slots are held by a quorum: the holders that may believe they hold a permit. At most `limit`. */
  readonly held: number;
  /** The slots that any master holds, each with the value held by the most masters. */
  readonly slots: readonly PermitSlotInspection[];
}

/**
 * A read-only view of one resource across the masters: `RedlockService.inspect(resource)`.
 * The exclusive lock (the default, `mode: 'write'`) is `held` / `holder` / `agreeing` / `validity`;
 * readers of a read-write lock are `readers`; a counting lock (`limit`) is `permits`.
 *
 * @example
 * const view = await redlock.inspect('order:42');
 * if (view.held) console.log(`held for at least ${view.validity} ms more by ${view.agreeing} of ${view.masters.length} masters`);
 * const readers = view.readers.filter((r) => r.held).length; // shared holders (`mode: 'read'`)
 * @publicApi
 */
export interface LockInspection {
  /** The resource (without the key prefix). */
  readonly resource: string;
  /** The Redis key (`keyPrefix + resource`). */
  readonly key: string;
  /** Each master's holding, in `nodes` order. */
  readonly masters: readonly MasterHolding[];
  /** How many masters must agree. */
  readonly quorum: number;
  /** True when one exclusive (write) holder has the key on a quorum of masters. */
  readonly held: boolean;
  /** The exclusive value held by the most masters (the quorum's holder when `held`), or null when no master holds one. */
  readonly holder: string | null;
  /**
   * Who holds the lock (its holder's `owner` option): the exclusive holder's (`holder`); for a
   * shared lock, the owner of the most agreeing reader or permit holder. Null when nothing is held
   * or the value carries no owner.
   */
  readonly owner: string | null;
  /** How many masters hold `holder`. */
  readonly agreeing: number;
  /**
   * A conservative estimate, in ms, of how long the quorum keeps holding: the quorum-th longest
   * remaining TTL among the holder's masters, less the time the reads took and the drift allowance.
   * 0 when not held.
   */
  readonly validity: number;
  /** The highest fencing counter any master reported, when fencing is in use; tokens issued so far are at most this. */
  readonly fencingCounter?: number;
  /**
   * The readers (`mode: 'read'`) that any master holds, most agreeing first; `held` on each says
   * whether a quorum agrees on it. Empty when there are none.
   */
  readonly readers: readonly SharedHolderInspection[];
  /** True when a writer waits on a quorum of masters: new readers are held off until it is done. */
  readonly writerWaiting: boolean;
  /** The counting lock (`limit`) on the resource, when any master records one. */
  readonly permits?: PermitsInspection;
}

/** The most slots `inspect()` reads per master (a limit record above it is reported, its slots beyond it are not). */
const MAX_SLOTS = 10_000;

/** Keys `inspect()` reads for a resource, beside the lock key itself. */
export interface InspectKeys {
  readonly key: string;
  readonly counterKey: string;
  readonly limitKey: string;
  readonly intentKey: string;
}

/** Reads a key, its PTTL and its fencing counter on every master, writing nothing. */
export async function inspectResource(
  masters: readonly Master[],
  quorum: number,
  timeoutMs: number,
  driftFactor: number,
  resource: string,
  key: string,
  counterKey: string,
  fencing: boolean,
): Promise<LockInspection> {
  const started = now();
  const holdings = await Promise.all(
    masters.map((m) =>
      readHolding(m, { key, counterKey, limitKey: limitKeyOf(key, m), intentKey: intentKeyOf(key, m) }, timeoutMs),
    ),
  );
  const elapsed = now() - started;
  const validityOf = (pttls: number[]): number => {
    if (pttls.length < quorum) return 0;
    // The quorum holds until the quorum-th longest-lived of its keys expires.
    const kth = [...pttls].sort((a, b) => b - a)[quorum - 1];
    return Math.max(0, Math.floor(kth - elapsed - driftOf(kth, driftFactor)));
  };
  const summarize = (entries: Iterable<[string, number[]]>): SharedHolderInspection[] =>
    [...entries]
      .map(([value, pttls]) => ({
        value,
        ...ownerField(value),
        agreeing: pttls.length,
        held: pttls.length >= quorum,
        validity: validityOf(pttls),
      }))
      .sort((a, b) => b.agreeing - a.agreeing || b.validity - a.validity);

  const writers = new Map<string, number[]>();
  const readers = new Map<string, number[]>();
  const slots = new Map<number, Map<string, number[]>>();
  const limits = new Set<number>();
  let waiting = 0;
  for (const h of holdings) {
    if (h.holder !== null && h.pttl !== null) push(writers, h.holder, h.pttl);
    for (const r of h.readers ?? []) push(readers, r.value, r.pttl);
    if (typeof h.limit === 'number') limits.add(h.limit);
    for (const p of h.permits ?? []) {
      if (p.holder === null || p.pttl === null) continue;
      const tally = slots.get(p.slot) ?? new Map<string, number[]>();
      push(tally, p.holder, p.pttl);
      slots.set(p.slot, tally);
    }
    if (h.writerWaiting) waiting++;
  }
  let holder: string | null = null;
  let pttls: number[] = [];
  for (const [value, list] of writers) {
    if (list.length > pttls.length) {
      holder = value;
      pttls = list;
    }
  }
  const held = pttls.length >= quorum;
  let permits: PermitsInspection | undefined;
  if (limits.size > 0 || slots.size > 0) {
    const slotViews = [...slots]
      .sort(([a], [b]) => a - b)
      .map(([slot, tally]): PermitSlotInspection => ({ slot, ...summarize(tally)[0] }));
    const recorded = [...limits].sort((a, b) => a - b);
    permits = {
      limit: recorded.at(-1) ?? slotViews.length,
      ...(recorded.length > 1 ? { limits: recorded } : {}),
      held: slotViews.filter((s) => s.held).length,
      slots: slotViews,
    };
  }
  const counters = holdings.map((h) => h.fencingCounter).filter((c): c is number => typeof c === 'number');
  const readerViews = summarize(readers);
  const sharedHolder = readerViews[0] ?? [...(permits?.slots ?? [])].sort((a, b) => b.agreeing - a.agreeing)[0];
  return {
    resource,
    key,
    masters: holdings,
    quorum,
    held,
    holder,
    owner: holder !== null ? ownerOfValue(holder) : (sharedHolder?.owner ?? null),
    agreeing: pttls.length,
    validity: held ? validityOf(pttls) : 0,
    ...(fencing || counters.length > 0 ? { fencingCounter: counters.length ? Math.max(...counters) : 0 } : {}),
    readers: readerViews,
    writerWaiting: waiting >= quorum,
    ...(permits ? { permits } : {}),
  };
}

/** `{ owner }` when `value` carries one, else nothing (entries of values without one keep their shape). */
function ownerField(value: string): { owner?: string } {
  const owner = ownerOfValue(value);
  return owner === null ? {} : { owner };
}

function push(tally: Map<string, number[]>, value: string, pttl: number): void {
  const list = tally.get(value) ?? [];
  list.push(pttl);
  tally.set(value, list);
}

/** Runs `batch` (a MULTI/EXEC) within `timeoutMs`; per-command errors stay in the replies. */
async function execWithin(
  batch: ReturnType<Master['client']['multi']>,
  timeoutMs: number,
): Promise<[Error | null, unknown][]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    return (await Promise.race([batch.exec(), timeout])) ?? [];
  } finally {
    clearTimeout(timer);
  }
}

/** The reply at `i`, or the error it carries; `tolerated` names replies where WRONGTYPE just means "not this kind". */
function replyAt(replies: [Error | null, unknown][], i: number, tolerated = false): unknown {
  const [error, value] = replies[i] ?? [new Error('no reply'), null];
  if (error) {
    if (tolerated && /WRONGTYPE/.test(error.message)) return null;
    throw error;
  }
  return value;
}

/**
 * Reads, in one MULTI/EXEC per master (so at one instant, and with nothing but reads: no script):
 * the key's type and holder (a string for the writer, a sorted set of readers scored by their
 * server-time expiry), its PTTL, the server's clock, the fencing counter, the waiting-writer intent
 * and the limit record; then, when a limit is recorded, every permit slot in a second MULTI/EXEC.
 */
async function readHolding(master: Master, keys: InspectKeys, timeoutMs: number): Promise<MasterHolding> {
  try {
    const { key } = keys;
    // On a cluster the companion keys may be in other slots than the lock key: read them apart.
    const first = await execWithin(
      (master.cluster ? clusterReads(master, keys) : master.client)
        .multi()
        .type(key)
        .get(key)
        .zrange(key, '0', '-1', 'WITHSCORES')
        .pttl(key)
        .time()
        .get(keys.counterKey)
        .exists(keys.intentKey)
        .get(keys.limitKey),
      timeoutMs,
    );
    const kind = replyAt(first, 0) as string;
    const value = replyAt(first, 1, true) as string | null;
    const zset = (replyAt(first, 2, true) as string[] | null) ?? [];
    const pttl = replyAt(first, 3) as number;
    const [seconds, micros] = (replyAt(first, 4) as [string, string]).map(Number);
    const serverNow = seconds * 1000 + Math.floor(micros / 1000);
    const rawCounter = replyAt(first, 5, true) as string | null;
    const waiting = replyAt(first, 6) as number;
    const rawLimit = replyAt(first, 7, true) as string | null;
    // A queued writer's live ticket holds new readers off as an intent key does (docs/handoff.md §10).
    const leases = queueKeysOf(key, master)[1];
    const live = await execWithin(master.client.multi().zcount(leases, `(${serverNow}`, '+inf'), timeoutMs);
    const tickets = replyAt(live, 0) as number;

    const readers: MasterReader[] = [];
    if (kind === 'zset') {
      for (let i = 0; i + 1 < zset.length; i += 2) {
        const left = Math.floor(Number(zset[i + 1]) - serverNow);
        if (left > 0) readers.push({ value: zset[i], ...ownerField(zset[i]), pttl: left });
      }
    }
    const limit = rawLimit === null ? null : Number(rawLimit);
    const permits: MasterPermit[] = [];
    if (limit !== null && Number.isSafeInteger(limit) && limit >= 1) {
      const slots = Math.min(limit, MAX_SLOTS);
      let batch = master.client.multi();
      for (let i = 0; i < slots; i++) batch = batch.get(permitKeyOf(key, i, master)).pttl(permitKeyOf(key, i, master));
      const replies = await execWithin(batch, timeoutMs);
      for (let i = 0; i < slots; i++) {
        const holder = replyAt(replies, 2 * i, true) as string | null;
        const left = replyAt(replies, 2 * i + 1) as number;
        const taken = holder !== null && left > 0;
        permits.push({
          slot: i,
          holder: taken ? holder : null,
          ...(taken ? ownerField(holder) : {}),
          pttl: taken ? left : null,
        });
      }
    }
    const present = kind === 'string' && value !== null && pttl > 0;
    const longest = [...readers, ...permits].sort((a, b) => (b.pttl ?? 0) - (a.pttl ?? 0))[0];
    return {
      master: master.label,
      holder: present ? value : null,
      owner: present ? ownerOfValue(value) : (longest?.owner ?? null),
      pttl: pttl > 0 ? pttl : null,
      fencingCounter: rawCounter === null ? null : Number(rawCounter),
      readers,
      writerWaiting: waiting === 1 || tickets > 0,
      limit: limit !== null && Number.isFinite(limit) ? limit : null,
      permits,
    };
  } catch (error) {
    return {
      master: master.label,
      holder: null,
      owner: null,
      pttl: null,
      error: error instanceof Error ? error : new Error(String(error)),
    };
  }
}

/**
 * For a cluster node: a stand-in for `client.multi()` taking the same eight reads, where the lock
 * key's reads (type, holder, readers, PTTL, server time) stay one MULTI/EXEC in its slot and the
 * counter (another slot), intent and limit keys are read on their own.
 */
function clusterReads(master: Master, keys: InspectKeys): { multi(): ReturnType<Master['client']['multi']> } {
  const client = master.cluster!;
  const batch = {
    exec: async (): Promise<[Error | null, unknown][]> => {
      const { key } = keys;
      const settle = (p: Promise<unknown>): Promise<[Error | null, unknown]> =>
        p.then(
          (v): [Error | null, unknown] => [null, v],
          (e: unknown): [Error | null, unknown] => [e instanceof Error ? e : new Error(String(e)), null],
        );
      const [own, ...rest] = await Promise.all([
        client.multi().type(key).get(key).zrange(key, '0', '-1', 'WITHSCORES').pttl(key).time().exec(),
        settle(client.get(keys.counterKey)),
        settle(client.exists(keys.intentKey)),
        settle(client.get(keys.limitKey)),
      ]);
      return [...(own ?? []), ...rest];
    },
  };
  const chain = new Proxy(batch, { get: (target, name) => (name === 'exec' ? target.exec : () => chain) });
  return { multi: () => chain as unknown as ReturnType<Master['client']['multi']> };
}
