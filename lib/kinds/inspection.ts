import type { Master } from '../backend/master.js';
import { ownerOfValue } from '../options/owner.js';

// What `inspect()` shows of a resource (the public view types), and how each kind's reader adds
// its part: per master, then across the masters. The view itself is read in lib/inspect/.

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

/** What `inspect()` read of the lock key itself on one master, at one instant, before any kind's reader runs. */
export interface KeySeen {
  /** The key's Redis type (`string` for the mutex, `zset` for readers, `none`). */
  readonly type: string;
  /** The key's string value, or null (absent, or not a string). */
  readonly value: string | null;
  /** The key's sorted set as `[member, score, …]`, empty when it is not one. */
  readonly zset: readonly string[];
  /** The key's PTTL. */
  readonly pttl: number;
  /** The master's clock, ms. */
  readonly serverNow: number;
}

/** The bounded reads a kind's reader may make on one master. */
export interface MasterReads {
  readonly master: Master;
  /** Runs `batch` (a MULTI/EXEC) within the command timeout; per-command errors stay in the replies. */
  exec(batch: ReturnType<Master['client']['multi']>): Promise<[Error | null, unknown][]>;
}

/** Who holds the lock on one master, as one kind's reader saw it: the longest-lived wins (an exclusive holder at `Infinity`). */
export interface OwnerSeen {
  readonly owner: string | null;
  readonly pttl: number;
}

/** A kind's part of one master's holding. */
export interface MasterPart {
  readonly fields: Partial<MasterHolding>;
  readonly owner?: OwnerSeen;
}

/** A kind's part of the view across masters; `owner` when this kind names one (the first kind that does wins). */
export interface ViewPart {
  readonly fields: Partial<LockInspection>;
  readonly owner?: { readonly owner: string | null };
}

/** The arithmetic every kind's summary shares: the quorum, and how long a quorum of keys lives. */
export interface Tally {
  readonly quorum: number;
  /** How long the quorum keeps holding, from the remaining TTLs of the masters that hold one value. */
  validityOf(pttls: readonly number[]): number;
  /** Holders (value → remaining TTLs) as the view shows them, most agreeing first. */
  summarize(entries: Iterable<[string, number[]]>): SharedHolderInspection[];
}

/** How `inspect()` reads a resource of one kind. */
export interface KindReader {
  /** One master: this kind's fields of the holding, read after the lock key itself (`seen`). */
  readMaster(reads: MasterReads, key: string, seen: KeySeen): Promise<MasterPart>;
  /** Every master: this kind's fields of the view. */
  summarize(holdings: readonly MasterHolding[], tally: Tally): ViewPart;
}

/** `{ owner }` when `value` carries one, else nothing (entries of values without one keep their shape). */
export function ownerField(value: string): { owner?: string } {
  const owner = ownerOfValue(value);
  return owner === null ? {} : { owner };
}

/** Adds a master's remaining TTL for `value` to the tally. */
export function push(tally: Map<string, number[]>, value: string, pttl: number): void {
  const list = tally.get(value) ?? [];
  list.push(pttl);
  tally.set(value, list);
}

/** The reply at `i`, or the error it carries; `tolerated` names replies where WRONGTYPE just means "not this kind". */
export function replyAt(replies: [Error | null, unknown][], i: number, tolerated = false): unknown {
  const [error, value] = replies[i] ?? [new Error('no reply'), null];
  if (error) {
    if (tolerated && /WRONGTYPE/.test(error.message)) return null;
    throw error;
  }
  return value;
}
