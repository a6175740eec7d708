/**
 * The masters' own history of the lock keys, recorded without the library: a `MONITOR` connection
 * per master (every command a master executes, in its execution order, Lua-internal commands
 * included, stamped by the master), a keyspace-notification subscription for evictions, and the
 * harness's own record of when it wiped a master (kill -9 without persistence).
 *
 * `analyseHistory` replays that history into a model of each master's lock keys: which value held
 * which key on which master, from when to when, and why it stopped (expired, released, deleted by the
 * nemesis, evicted, wiped). The checker bounds each holder's window from this model and the attempt
 * start, never from the library's `validity` or `signal`.
 */
import { Redis } from 'ioredis';
import { connect, type Socket } from 'node:net';
import { sharedNow } from './clock.js';

/** How a handoff reservation's value starts (lib/kinds/mutex/handoff.ts): it keeps a key for the first waiter and is no holder. */
const RESERVED_PREFIX = '~';

/** `+1795457251.460227 [0 lua] "pexpire" "lock:a" "1000"` → time, source, args. */
export function parseMonitorLine(line: string): { time: string; source: string; args: string[] } | undefined {
  const m = /^\+(\d+\.\d+) \[\d+ ([^\]]+)\] (.*)$/.exec(line);
  if (!m) return undefined;
  const args: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"/g;
  let a: RegExpExecArray | null;
  while ((a = re.exec(m[3])))
    args.push(
      a[1].replace(/\\x([0-9a-f]{2})|\\(.)/g, (_, hex: string | undefined, c: string) =>
        hex ? String.fromCharCode(parseInt(hex, 16)) : c === 'n' ? '\n' : c === 'r' ? '\r' : c === 't' ? '\t' : c,
      ),
    );
  return { time: m[1], source: m[2], args };
}

/**
 * Whether a script's command acts for `value`: an ARGV is that value, or a handoff queue entry that
 * ends with it (`ticket ttl value`, lib/kinds/mutex/handoff.ts). A script carrying no such argument that
 * deletes or renews a key holding `value` acts on another holder's key.
 */
function carries(e: { sv?: string; sa?: string[] }, value: string): boolean {
  return [e.sv, ...(e.sa ?? [])].some((a) => a !== undefined && (a === value || a.endsWith(` ${value}`)));
}

/**
 * A call of the batched plain path's script (lib/kinds/mutex/plain-batch.lua): its entries run in
 * order, each a `SET NX` of its value ('a') or a release ('r') on its key. Its ARGV[1] is the first
 * entry's op, so each command it runs is attributed to its own entry instead, searching from the
 * entry matched last: a `SET NX` to the acquire of that value on that key; a `DEL` or a handover's
 * `SET` to the releases of that key before its next acquire (all of them: a release whose value the
 * key did not hold runs nothing, so which one ran is the replay's to tell). Commands on other keys
 * (the handoff queue's) match no entry.
 */
interface BatchCall {
  /** The value of the entry that ran the command, and of the other entries that may have. */
  entryOf(args: string[]): { value: string; also: string[] } | undefined;
}

/** The batch call of a script call's `keys` and `argv` (three per entry, the first 'a' or 'r'), or undefined for another script. */
function batchOf(keys: string[], argv: string[]): BatchCall | undefined {
  if (keys.length === 0 || argv.length !== 3 * keys.length) return undefined;
  for (let i = 0; i < argv.length; i += 3) if (argv[i] !== 'a' && argv[i] !== 'r') return undefined;
  const op = (i: number) => argv[3 * i];
  const valueOf = (i: number) => argv[3 * i + 1];
  let at = 0;
  return {
    entryOf(args) {
      const [name, key, value] = args;
      const setNx = name.toLowerCase() === 'set' && args.some((a) => a.toUpperCase() === 'NX');
      const found: number[] = [];
      for (let i = at; i < keys.length; i++) {
        if (keys[i] !== key) continue;
        if (setNx) {
          if (op(i) !== 'a' || valueOf(i) !== value) continue;
          found.push(i);
          break;
        }
        if (op(i) === 'a') {
          if (found.length > 0) break;
          continue;
        }
        found.push(i);
      }
      if (found.length === 0) return undefined;
      at = found[0];
      return { value: valueOf(found[0]), also: found.slice(1).map(valueOf) };
    },
  };
}

/** One thing that happened on a master, on the shared clock. */
export type MasterEvent =
  /** A command as executed. `lua`: run inside a script; `sv`: the script's ARGV[1] (the lock value, for our scripts). */
  | {
      t: number;
      m: number;
      kind: 'cmd';
      args: string[];
      lua: boolean;
      sv?: string;
      /** The script's other ARGV (ARGV[2]…): the handoff's scripts carry a lock value elsewhere than ARGV[1]. */
      sa?: string[];
      reload?: boolean;
    }
  /** The master lost its whole dataset (killed without persistence). */
  | { t: number; m: number; kind: 'wipe' }
  /** The master evicted a key (maxmemory). */
  | { t: number; m: number; kind: 'evicted'; key: string }
  /** The MONITOR connection to the master answered: its commands are recorded from here on. */
  | { t: number; m: number; kind: 'attached' }
  /** The master's wall clock stepped by `stepMs` (libfaketime): its keys' expiries moved by −stepMs. */
  | { t: number; m: number; kind: 'clock'; stepMs: number };

/** Date.now() − sharedNow(), to well under a millisecond: sampled on the edge where Date.now() ticks. */
function wallMinusShared(): number {
  const start = Date.now();
  let wall = start;
  while (wall === start) wall = Date.now();
  return wall - sharedNow();
}

/** Records the masters' history of the keys that start with `prefix`. */
export class MasterHistory {
  readonly events: MasterEvent[] = [];
  /** Date.now() − sharedNow(): converts the masters' wall-clock stamps to the shared clock. */
  readonly wallOffset = wallMinusShared();
  private readonly monitors: (Socket | undefined)[];
  private readonly subscribers: (Redis | undefined)[];
  private readonly scriptValue: (string | undefined)[];
  private readonly scriptArgs: (string[] | undefined)[];
  /** The batched plain path's script call running on each master, if that is what runs. */
  private readonly batches: (BatchCall | undefined)[] = [];
  /** How far each master's wall clock is set off (libfaketime), ms: its MONITOR stamps are corrected by it. */
  private readonly clockOffset: number[];
  /** The offsets each master's clock had lately (newest first): a line in flight across a step carries the old one. */
  private readonly recentOffsets: number[][];
  private stopped = false;

  constructor(
    private readonly urls: readonly string[],
    private readonly prefix: string,
  ) {
    this.monitors = urls.map(() => undefined);
    this.subscribers = urls.map(() => undefined);
    this.scriptValue = urls.map(() => undefined);
    this.scriptArgs = urls.map(() => undefined);
    this.clockOffset = urls.map(() => 0);
    this.recentOffsets = urls.map(() => [0]);
  }

  /**
   * Master `m`'s wall clock now runs `offsetMs` off (the harness changed its libfaketime offset):
   * keys there expire earlier (or later) by the step, and its MONITOR stamps are corrected.
   */
  clockSet(m: number, offsetMs: number, at = sharedNow()): void {
    const stepMs = offsetMs - this.clockOffset[m];
    this.clockOffset[m] = offsetMs;
    this.recentOffsets[m] = [offsetMs, ...this.recentOffsets[m]].slice(0, 3);
    if (stepMs !== 0) this.events.push({ t: at, m, kind: 'clock', stepMs });
  }

  async start(): Promise<void> {
    await Promise.all(this.urls.map((_, m) => this.attach(m)));
  }

  /** (Re)attaches to master `m` (after a restart: the old connections died with the server). */
  async attach(m: number): Promise<void> {
    if (this.stopped) return;
    this.monitors[m]?.destroy();
    this.subscribers[m]?.disconnect();
    const { hostname, port } = new URL(this.urls[m]);
    // MONITOR over a plain socket: its output is one status line per command, simple to parse.
    const socket = connect(Number(port), hostname);
    socket.on('error', () => undefined);
    this.monitors[m] = socket;
    let buffer = '';
    let ok = false;
    const ready = new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
      socket.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('latin1');
        let nl: number;
        while ((nl = buffer.indexOf('\r\n')) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 2);
          if (!ok) {
            ok = line === '+OK';
            resolve();
            continue;
          }
          const parsed = parseMonitorLine(line);
          if (parsed) this.onCommand(m, parsed.time, parsed.args, parsed.source);
        }
      });
    });
    socket.write('MONITOR\r\n');
    await Promise.race([ready, new Promise((r) => setTimeout(r, 1_000))]);
    // From here on this master's commands are recorded (after a restart: not before).
    if (ok) this.events.push({ t: sharedNow(), m, kind: 'attached' });
    const opts = {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
      connectTimeout: 1_000,
    } as const;
    const sub = new Redis(this.urls[m], opts);
    sub.on('error', () => undefined);
    const admin = new Redis(this.urls[m], opts);
    admin.on('error', () => undefined);
    try {
      await Promise.all([sub.connect(), admin.connect()]);
      await admin.config('SET', 'notify-keyspace-events', 'Ee');
      sub.on('message', (_channel: string, key: string) => {
        if (key.startsWith(this.prefix)) this.events.push({ t: sharedNow(), m, kind: 'evicted', key });
      });
      await sub.subscribe('__keyevent@0__:evicted');
      this.subscribers[m] = sub;
    } catch {
      sub.disconnect();
    } finally {
      admin.disconnect();
    }
  }

  private onCommand(m: number, time: string, args: string[], source: string): void {
    const name = args[0]?.toLowerCase();
    const lua = source === 'lua';
    if (!lua && (name === 'evalsha' || name === 'eval')) {
      const numKeys = Number(args[2]);
      this.scriptValue[m] = args[3 + numKeys];
      this.scriptArgs[m] = args.slice(4 + numKeys);
      this.batches[m] = batchOf(args.slice(3, 3 + numKeys), args.slice(3 + numKeys));
      return;
    }
    if (name !== 'set' && name !== 'pexpire' && name !== 'del') return;
    if (!args.slice(1).some((a) => a.startsWith(this.prefix))) return;
    const entry = lua ? this.batches[m]?.entryOf(args) : undefined;
    // A line cannot describe a command run after it arrived. Across a clock step the line may carry
    // the old offset or the new: of the offsets lately in force, the one that puts the command latest
    // but not after its arrival (a stamp read with the wrong one lands a whole step away).
    const arrived = sharedNow();
    const raw = Number(time) * 1_000 - this.wallOffset;
    const fits = this.recentOffsets[m].map((o) => raw - o).filter((t) => t <= arrived + 1);
    this.events.push({
      t: Math.min(fits.length ? Math.max(...fits) : raw - this.clockOffset[m], arrived),
      m,
      kind: 'cmd',
      args,
      lua,
      sv: entry ? entry.value : lua ? this.scriptValue[m] : undefined,
      sa: entry
        ? entry.also.length
          ? entry.also
          : undefined
        : lua && this.scriptArgs[m]?.length
          ? this.scriptArgs[m]
          : undefined,
    });
  }

  /** The harness is about to wipe master `m` (kill -9, no persistence): every key there is gone from now. */
  wiped(m: number, at = sharedNow()): void {
    this.events.push({ t: at, m, kind: 'wipe' });
  }

  /** Master `m` restarted from its AOF holding `key` = `value` for `pttl` more ms (read by the harness at `at`). */
  reloaded(m: number, key: string, value: string, pttl: number, at: number): void {
    this.events.push({
      t: at,
      m,
      kind: 'cmd',
      args: ['set', key, value, 'PX', String(pttl)],
      lua: false,
      reload: true,
    });
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.monitors) c?.destroy();
    for (const c of this.subscribers) c?.disconnect();
  }
}

/** Why a value stopped holding a key on a master. */
export type EndCause =
  'expired' | 'released' | 'foreign-release' | 'nemesis-del' | 'evicted' | 'wiped' | 'clock-step' | 'open';

/** A value holding a key on one master. */
export interface Holding {
  key: string;
  value: string;
  m: number;
  from: number;
  /** When it stopped (for 'open': +Infinity). */
  to: number;
  end: EndCause;
  /** Times the TTL was renewed (PEXPIRE, or SET of the same value, inside a script). */
  renewals: number[];
}

/** A key taken from a value by something other than its expiry or its owner's release. */
export interface Removal {
  t: number;
  m: number;
  key: string;
  value: string;
  cause: 'nemesis-del' | 'evicted' | 'wiped' | 'foreign-release' | 'clock-step';
  /** On how many masters the value held the key just before (this master included). */
  heldOnBefore: number;
}

/** A client's SET NX the replay takes as refused: the key held another value (or a reservation) there. */
export interface RefusedSetNx {
  t: number;
  m: number;
  key: string;
  value: string;
  /** The holding that refused it (none for a reservation). */
  heldBy?: Holding;
}

export interface HistoryAnalysis {
  /** First time any master executed a command carrying the value. */
  firstSeen: Map<string, number>;
  /** Every SET NX taken as refused. One whose refusing holder an eviction notice ended after it may have succeeded. */
  refusedNx: RefusedSetNx[];
  /** All holdings, by value. */
  byValue: Map<string, Holding[]>;
  removals: Removal[];
  /** Lua DEL or PEXPIRE applied to a key holding another value than the script's (a release or extend without the value check). */
  /** Lua writes to a key held by another value; `scriptArgs`: the script's arguments after its keys. */
  foreignWrites: {
    t: number;
    m: number;
    key: string;
    value: string;
    scriptValue: string;
    op: string;
    scriptArgs?: string[];
  }[];
}

const TOLERANCE_MS = 2; // a key whose PX ran out within this much is treated as gone (Redis's own expiry granularity)

/** How late an eviction notice (pub/sub, stamped on receipt) may come after the eviction, ms. */
export const NOTICE_LATENESS_MS = 250;

/**
 * How far a notice's stamp may fall before the write whose key it evicted, ms: the write is stamped by
 * the master (MONITOR), the notice by the harness when it reads it, and the two clocks meet to about
 * a millisecond.
 */
const NOTICE_CLOCK_SLACK_MS = 2;

/** Replays the recorded history (see MasterHistory) into holdings per value and master. */
export function analyseHistory(events: readonly MasterEvent[], masterCount: number): HistoryAnalysis {
  const sorted = [...events].sort((a, b) => a.t - b.t);
  const firstSeen = new Map<string, number>();
  const byValue = new Map<string, Holding[]>();
  const removals: Removal[] = [];
  const foreignWrites: HistoryAnalysis['foreignWrites'] = [];
  const state: Map<string, { h: Holding; expiresAt: number }>[] = Array.from({ length: masterCount }, () => new Map());
  // Handoff reservations (`~ticket`): no holder, but the key is taken, so a SET NX meanwhile failed,
  // unless an eviction notice since the reservation (notices come late) says it may have been evicted.
  const reserved: Map<string, { from: number; until: number }>[] = Array.from({ length: masterCount }, () => new Map());
  const isReserved = (m: number, key: string, t: number) => {
    const r = reserved[m].get(key);
    if (!r || r.until <= t + TOLERANCE_MS) return false;
    return !(pendingEvictions.get(`${m} ${key}`) ?? []).some((x) => x.t >= r.from && x.t <= t + NOTICE_LATENESS_MS);
  };
  const pendingRemovals: { r: Omit<Removal, 'heldOnBefore'> }[] = [];
  /** The holding that last ended on each master's key (`m key`). */
  const lastClosed = new Map<string, Holding>();

  const close = (m: number, key: string, t: number, end: EndCause) => {
    const cur = state[m].get(key);
    if (!cur) return undefined;
    state[m].delete(key);
    lastClosed.set(`${m} ${key}`, cur.h);
    if (cur.expiresAt <= t + TOLERANCE_MS && end !== 'expired') {
      cur.h.to = cur.expiresAt;
      cur.h.end = 'expired';
      return undefined;
    }
    cur.h.to = t;
    cur.h.end = end;
    return cur.h;
  };
  const live = (m: number, key: string, t: number) => {
    const cur = state[m].get(key);
    if (cur && cur.expiresAt <= t + TOLERANCE_MS) {
      close(m, key, cur.expiresAt, 'expired');
      return undefined;
    }
    return cur;
  };
  /** Records a Lua write (`op`) to `key` while it held `value`, by a script that does not carry it. */
  const foreign = (e: MasterEvent & { kind: 'cmd' }, key: string, value: string, op: string) =>
    foreignWrites.push({ t: e.t, m: e.m, key, value, scriptArgs: e.sa, scriptValue: e.sv ?? '', op });
  const seen = (value: string | undefined, t: number) => {
    if (value !== undefined && !firstSeen.has(value)) firstSeen.set(value, t);
  };

  // Eviction events arrive by pub/sub, after the fact: the eviction itself happened while the master
  // ran a write (often the very SET that then found the key free). A write that finds the key still
  // held in the model applies a pending eviction of that key on that master first.
  const pendingEvictions = new Map<string, MasterEvent[]>();
  for (const e of sorted)
    if (e.kind === 'evicted')
      pendingEvictions.set(`${e.m} ${e.key}`, [...(pendingEvictions.get(`${e.m} ${e.key}`) ?? []), e]);
  const consumed = new Set<MasterEvent>();
  const refusedNx = new Map<string, { t: number; value: string; px: number }[]>();
  const refusals: RefusedSetNx[] = [];
  /**
   * A script acting for a value the model has not on this key (scripts compare before they act, so
   * the key held that value): if a SET NX of that value was taken as refused, and the key was evicted
   * on that master since the kept holder's write, the kept holder had been evicted and that SET NX
   * succeeded. Returns the corrected state.
   */
  const provenNx = (e: MasterEvent & { kind: 'cmd' }, key: string, cur: { h: Holding; expiresAt: number }) => {
    const nx = (refusedNx.get(`${e.m} ${key}`) ?? []).findLast(
      (r) => r.t >= cur.h.from && r.t <= e.t && carries(e, r.value),
    );
    if (!nx) return cur;
    // The eviction is proven by a notice for this key since the kept holder's write (its notice may
    // have been taken early by another write: notices carry no value).
    const notices = (pendingEvictions.get(`${e.m} ${key}`) ?? []).filter(
      (x) => x.t >= cur.h.from - NOTICE_CLOCK_SLACK_MS && x.t <= e.t + NOTICE_LATENESS_MS,
    );
    if (notices.length === 0) return cur;
    const unused = notices.find((x) => !consumed.has(x));
    if (unused) consumed.add(unused);
    const old = close(e.m, key, nx.t, 'evicted');
    if (old) pendingRemovals.push({ r: { t: nx.t, m: e.m, key, value: old.value, cause: 'evicted' } });
    const h: Holding = { key, value: nx.value, m: e.m, from: nx.t, to: Infinity, end: 'open', renewals: [] };
    const next = { h, expiresAt: nx.t + nx.px };
    state[e.m].set(key, next);
    byValue.set(nx.value, [...(byValue.get(nx.value) ?? []), h]);
    return next.expiresAt > e.t ? next : undefined;
  };
  /**
   * A script acting for a value on a key the model has free: if a SET NX of that value was taken as
   * refused because the key's last holder was still live in the model, and that holder ended by an
   * eviction notice since, the eviction came first on the master (it runs before the command that
   * needs the memory; the notice is stamped when the harness reads it) and the SET NX found the key
   * free. Scripts compare before they act, so the script proves it. Returns the corrected state.
   */
  const provenNxAfterNotice = (e: MasterEvent & { kind: 'cmd' }, key: string) => {
    const prev = lastClosed.get(`${e.m} ${key}`);
    if (!prev || prev.end !== 'evicted') return undefined;
    const nx = (refusedNx.get(`${e.m} ${key}`) ?? []).findLast(
      (r) => r.t >= prev.from && r.t <= prev.to && carries(e, r.value),
    );
    if (!nx || nx.t + nx.px <= e.t + TOLERANCE_MS) return undefined;
    // A reservation written since then found the key free: the SET NX did not hold it.
    const r = reserved[e.m].get(key);
    if (r && r.from >= nx.t) return undefined;
    const removal = pendingRemovals.find(
      (p) =>
        p.r.m === e.m && p.r.key === key && p.r.value === prev.value && p.r.cause === 'evicted' && p.r.t === prev.to,
    );
    if (removal) removal.r.t = nx.t;
    prev.to = nx.t;
    const h: Holding = { key, value: nx.value, m: e.m, from: nx.t, to: Infinity, end: 'open', renewals: [] };
    const next = { h, expiresAt: nx.t + nx.px };
    state[e.m].set(key, next);
    byValue.set(nx.value, [...(byValue.get(nx.value) ?? []), h]);
    return next;
  };
  const evictEarly = (m: number, key: string, t: number) => {
    const next = pendingEvictions
      .get(`${m} ${key}`)
      ?.find((x) => !consumed.has(x) && x.t >= t && x.t <= t + NOTICE_LATENESS_MS);
    if (!next) return;
    consumed.add(next);
    const h = close(m, key, t, 'evicted');
    if (h) pendingRemovals.push({ r: { t, m, key, value: h.value, cause: 'evicted' } });
  };

  for (const e of sorted) {
    if (consumed.has(e)) continue;
    if (e.kind === 'attached') continue;
    if (e.kind === 'clock') {
      // A forward step ends the master's keys early (Redis expires on its wall clock); a backward one
      // lengthens them. Reservations move alike.
      for (const [key, cur] of [...state[e.m]]) {
        if (cur.expiresAt <= e.t + TOLERANCE_MS) continue;
        if (cur.expiresAt - e.stepMs <= e.t) {
          const h = close(e.m, key, e.t, 'clock-step');
          if (h) pendingRemovals.push({ r: { t: e.t, m: e.m, key, value: h.value, cause: 'clock-step' } });
        } else cur.expiresAt -= e.stepMs;
      }
      for (const r of reserved[e.m].values()) r.until -= e.stepMs;
      continue;
    }
    if (e.kind === 'wipe') {
      reserved[e.m].clear();
      for (const key of [...state[e.m].keys()]) {
        const h = live(e.m, key, e.t) && close(e.m, key, e.t, 'wiped');
        if (h) pendingRemovals.push({ r: { t: e.t, m: e.m, key, value: h.value, cause: 'wiped' } });
      }
      continue;
    }
    if (e.kind === 'evicted') {
      if (!state[e.m].has(e.key)) reserved[e.m].delete(e.key);
      const h = live(e.m, e.key, e.t) && close(e.m, e.key, e.t, 'evicted');
      if (h) pendingRemovals.push({ r: { t: e.t, m: e.m, key: e.key, value: h.value, cause: 'evicted' } });
      continue;
    }
    const [name, ...rest] = e.args;
    const op = name.toLowerCase();
    // The harness scans a restarted master after it answers again, when clients may already have
    // written to it: a value no master had seen before the restart cannot have come from the AOF (its
    // own SET is in the history), so only values seen earlier are reloads.
    if (e.reload && !firstSeen.has(rest[1])) continue;
    if (e.lua) seen(e.sv, e.t);
    if (op === 'set') {
      const [key, value] = rest;
      seen(value, e.t);
      const upper = rest.map((a) => a.toUpperCase());
      const nx = upper.includes('NX');
      const pxAt = upper.indexOf('PX');
      const px = pxAt >= 0 ? Number(rest[pxAt + 1]) : Infinity;
      let cur = live(e.m, key, e.t);
      // Only a write that certainly ran takes a late eviction notice early: a SET without NX (a
      // script's handover, a ticket's grant, a client's plain SET). MONITOR logs a SET NX whether it
      // succeeded or not, a client's or a script's alike (the batched plain path's acquire): one that
      // found the key held is kept aside, and a later script carrying its value proves it.
      if (cur && cur.h.value !== value && !nx) {
        evictEarly(e.m, key, e.t);
        cur = live(e.m, key, e.t);
      }
      if (nx && (cur || isReserved(e.m, key, e.t))) {
        refusedNx.set(`${e.m} ${key}`, [...(refusedNx.get(`${e.m} ${key}`) ?? []), { t: e.t, value, px }]);
        refusals.push({ t: e.t, m: e.m, key, value, heldBy: cur?.h });
        continue; // SET NX refused: the key is held (or reserved for a waiter)
      }
      if (value.startsWith(RESERVED_PREFIX)) reserved[e.m].set(key, { from: e.t, until: e.t + px });
      else reserved[e.m].delete(key);
      if (value.startsWith(RESERVED_PREFIX)) {
        // A handoff reservation (lib/kinds/mutex/handoff.ts) holds the key for the first waiter; it is no
        // holder. Written by a release script over the releasing holder's own value, it ends that
        // holding as a release; over anyone else's value it is a foreign write.
        if (cur) {
          const own = e.lua && carries(e, cur.h.value);
          if (!own) foreign(e, key, cur.h.value, 'set');
          const h = close(e.m, key, e.t, own ? 'released' : 'foreign-release');
          if (h && !own) pendingRemovals.push({ r: { t: e.t, m: e.m, key, value: h.value, cause: 'foreign-release' } });
        }
        continue;
      }
      if (cur && cur.h.value === value) {
        cur.expiresAt = e.t + px;
        cur.h.renewals.push(e.t);
        continue;
      }
      if (cur) close(e.m, key, e.t, 'foreign-release');
      const h: Holding = { key, value, m: e.m, from: e.t, to: Infinity, end: 'open', renewals: [] };
      state[e.m].set(key, { h, expiresAt: e.t + px });
      byValue.set(value, [...(byValue.get(value) ?? []), h]);
    } else if (op === 'pexpire') {
      const [key, ms] = rest;
      let cur = live(e.m, key, e.t);
      if (cur && e.lua && !carries(e, cur.h.value)) cur = provenNx(e, key, cur);
      else if (!cur && e.lua) cur = provenNxAfterNotice(e, key);
      if (!cur) continue;
      if (e.sv !== undefined && !carries(e, cur.h.value)) foreign(e, key, cur.h.value, 'pexpire');
      cur.expiresAt = e.t + Number(ms);
      cur.h.renewals.push(e.t);
    } else if (op === 'del') {
      for (const key of rest) {
        reserved[e.m].delete(key);
        let cur = live(e.m, key, e.t);
        if (cur && e.lua && !carries(e, cur.h.value)) cur = provenNx(e, key, cur);
        else if (!cur && e.lua) cur = provenNxAfterNotice(e, key);
        if (!cur) continue;
        const other = e.lua && e.sv !== undefined && !carries(e, cur.h.value);
        if (other) foreign(e, key, cur.h.value, 'del');
        const cause = !e.lua ? 'nemesis-del' : other ? 'foreign-release' : 'released';
        const h = close(e.m, key, e.t, cause);
        if (h && cause !== 'released') pendingRemovals.push({ r: { t: e.t, m: e.m, key, value: h.value, cause } });
      }
    }
  }
  for (const m of state)
    for (const [, cur] of m) {
      if (cur.expiresAt < Infinity) {
        cur.h.to = cur.expiresAt;
        cur.h.end = 'expired';
      }
    }

  for (const { r } of pendingRemovals) {
    const holders = new Set(
      (byValue.get(r.value) ?? []).filter((h) => h.key === r.key && h.from <= r.t && h.to >= r.t).map((h) => h.m),
    );
    holders.add(r.m);
    removals.push({ ...r, heldOnBefore: holders.size });
  }
  return { firstSeen, refusedNx: refusals, byValue, removals, foreignWrites };
}

/** Distinct masters on which `value` held `key` at some time within [from, to]. */
export function mastersHolding(a: HistoryAnalysis, key: string, value: string, from: number, to: number): Set<number> {
  return new Set(
    (a.byValue.get(value) ?? []).filter((h) => h.key === key && h.from <= to && h.to >= from).map((h) => h.m),
  );
}

/** Distinct masters that renewed `value` on `key` within [from, to]. */
export function mastersRenewing(a: HistoryAnalysis, key: string, value: string, from: number, to: number): Set<number> {
  const out = new Set<number>();
  for (const h of a.byValue.get(value) ?? []) {
    if (h.key !== key) continue;
    if (h.from >= from && h.from <= to) out.add(h.m); // re-taken (quorum repair) counts as renewed there
    if (h.renewals.some((t) => t >= from && t <= to)) out.add(h.m);
  }
  return out;
}
