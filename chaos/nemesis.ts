/**
 * The nemesis: what it can break (masters, proxies, client processes, keys), and one schedule of
 * rounds per fault type. Every fault is bounded in time and healed at the end of its round.
 */
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisMaster } from '../tools/redis-masters.js';
import { fakeClock, fakeClockAvailable, type FakeClock } from '../tools/fake-clock.js';
import { sharedNow } from './clock.js';
import type { MasterHistory } from './history.js';
import type { Fault, ProxyFarm } from './proxy.js';
import type { ClientPause, FaultBand, ProbeRecord, SectionRecord, FailureRecord } from './types.js';
import type { WorkloadConfig } from './workload.js';

/** Where a client's records go. */
export interface RecordSink {
  section(record: SectionRecord): void;
  failure(record: FailureRecord): void;
  stall?(record: import('./loop-lag.js').LoopStall): void;
}

/** A lock user: an OS process (`npm run chaos`) or an in-process Nest context (Jest). */
export interface ClientHandle {
  readonly id: string;
  start(config: WorkloadConfig, sink: RecordSink): Promise<void>;
  /** Stops the workers and closes the application; resolves to the number of sections run. */
  stop(): Promise<number>;
  probe(round: number, budgetMs: number): Promise<ProbeRecord>;
  /** OS-process clients: SIGSTOP / SIGCONT. */
  stopProcess?(): void;
  continueProcess?(): void;
  /** Blocks the client's event loop for `ms` (a synchronous busy wait, as a long GC pause would); resolves to when. */
  stall?(ms: number): Promise<{ start: number; end: number }>;
  /** Clients whose event loop a stall of this one blocks too (in-process clients share one loop). */
  readonly sharesLoop?: boolean;
  /** OS-process clients: SIGSTOP for `ms` when a hot section is between its signal check and its write. */
  pauseAtNextCommit?(ms: number, waitMs: number): Promise<{ start: number; end: number } | undefined>;
}

/** Direct connections to the masters (not through the proxies), for the nemesis and the final scans. */
export class Inspector {
  readonly clients: Redis[];

  constructor(urls: readonly string[]) {
    this.clients = urls.map((url) => {
      const redis = new Redis(url, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: 400,
        connectTimeout: 400,
        disconnectTimeout: 50,
        retryStrategy: () => 50,
      });
      redis.on('error', () => undefined);
      return redis;
    });
  }

  async connect(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.connect().catch(() => undefined)));
  }

  /** `{value, pttl}` of `key` on every master; undefined where the master did not answer. */
  async read(key: string): Promise<({ value: string | null; pttl: number } | undefined)[]> {
    return Promise.all(
      this.clients.map(async (c) => {
        try {
          const [[, value], [, pttl]] = (await c.multi().get(key).pttl(key).exec()) as [
            [null, string | null],
            [null, number],
          ];
          return { value, pttl };
        } catch {
          return undefined;
        }
      }),
    );
  }

  async del(master: number, keys: readonly string[]): Promise<number> {
    if (keys.length === 0) return 0;
    try {
      return await this.clients[master].del(...keys);
    } catch {
      return 0;
    }
  }

  /** Keys matching `pattern` on master `i`, with value and PTTL; undefined if it did not answer. */
  async scan(
    i: number,
    pattern: string,
  ): Promise<{ key: string; value: string | null; pttl: number; expiresAtWall?: number }[] | undefined> {
    const c = this.clients[i];
    try {
      const keys: string[] = [];
      let cursor = '0';
      do {
        // Strings only: the handoff's queue and lease keys (sorted sets) share the lock keys' prefix,
        // and a GET on one of them failed the whole scan (so it read as "master did not answer").
        const [next, batch] = await c.scan(cursor, 'MATCH', pattern, 'COUNT', 1000, 'TYPE', 'string');
        cursor = next;
        keys.push(...batch);
      } while (cursor !== '0');
      return await Promise.all(
        keys.map(async (key) => ({
          key,
          value: await c.get(key),
          pttl: await c.pttl(key),
          // the absolute expiry, master's wall clock, ms (Redis 7): exact, whenever the scan ran
          expiresAtWall: Number(await c.call('PEXPIRETIME', key)),
        })),
      );
    } catch {
      return undefined;
    }
  }

  /** `uptime_in_seconds` of master `i`, undefined if it did not answer. */
  async uptime(i: number): Promise<number | undefined> {
    try {
      return Number(/uptime_in_seconds:(\d+)/.exec(await this.clients[i].info('server'))?.[1]);
    } catch {
      return undefined;
    }
  }

  close(): void {
    for (const c of this.clients) c.disconnect();
  }
}

/** The masters, their proxies and the inspector. */
export class Cluster {
  /**
   * Optional: watches the library's restart guard on restarted masters (see FaultBand.guardTrustedAfter).
   * Set by main.ts with a Redlock from the built package; unset under Jest.
   */
  guardObserver:
    ((masters: readonly number[], since: number) => Promise<{ master: number; ms: number | null }[]>) | undefined;
  /** The masters' history of the current phase (phase.ts sets it): told when a master is wiped, re-attached after a restart. */
  history: MasterHistory | undefined;

  constructor(
    readonly masters: readonly RedisMaster[],
    readonly farm: ProxyFarm,
    readonly inspector: Inspector,
  ) {}

  get size(): number {
    return this.masters.length;
  }

  /** Resolves to the instant the restart began (the new servers started after it). */
  async killAndRestart(indices: readonly number[], downMs: number): Promise<number> {
    // Clients reach the restarted master only once its MONITOR is attached again: otherwise the
    // commands it runs in between are missing from the history, and its votes can be neither shown
    // nor ruled out.
    for (const i of indices) this.farm.proxies[i].setDoorClosed(true);
    try {
      await Promise.all(indices.map((i) => this.masters[i].kill()));
      for (const i of indices) this.history?.wiped(i);
      if (downMs > 0) await sleep(downMs);
      const restartAt = sharedNow();
      await Promise.all(indices.map((i) => this.masters[i].restart()));
      await Promise.all(indices.map(async (i) => this.history?.attach(i)));
      return restartAt;
    } finally {
      for (const i of indices) this.farm.proxies[i].setDoorClosed(false);
    }
  }

  /**
   * Watches restarted masters for 300 ms: those whose INFO already says `uptime_in_seconds` ≥ 1.
   * (A restart guard that trusts that figure lets them vote too early.)
   */
  async watchUptime(indices: readonly number[]): Promise<{ master: number; afterMs: number }[]> {
    const from = sharedNow();
    const early = new Map<number, number>();
    while (sharedNow() - from < 300) {
      await Promise.all(
        indices.map(async (i) => {
          if (early.has(i)) return;
          const up = await this.inspector.uptime(i);
          if (up !== undefined && up >= 1) early.set(i, sharedNow() - from);
        }),
      );
      await sleep(20);
    }
    return [...early].map(([master, afterMs]) => ({ master, afterMs: Math.round(afterMs) }));
  }

  pause(indices: readonly number[]): void {
    for (const i of indices) this.masters[i].pause();
  }

  resume(indices: readonly number[]): void {
    for (const i of indices) {
      try {
        this.masters[i].resume();
      } catch {
        // not running
      }
    }
  }

  /** Heals everything the nemesis can break on the masters' side: proxies, paused and dead masters. */
  async healAll(): Promise<void> {
    this.farm.healAll();
    this.resume(this.masters.map((_, i) => i));
    await Promise.all(
      this.masters.map(async (m, i) => {
        if (m.pid !== undefined) return;
        await m.restart();
        await this.history?.attach(i);
      }),
    );
  }

  /** Waits until every master has been up for `seconds` (the restart guard's window, rounded up). */
  async waitUptime(seconds: number, timeoutMs = 10_000): Promise<boolean> {
    const deadline = sharedNow() + timeoutMs;
    while (sharedNow() < deadline) {
      const ups = await Promise.all(this.masters.map((_, i) => this.inspector.uptime(i)));
      if (ups.every((u) => u !== undefined && u >= seconds)) return true;
      await sleep(100);
    }
    return false;
  }
}

/** What a schedule gets. */
export interface NemesisContext {
  readonly phase: string;
  readonly round: number;
  /** Which variant of the fault this round injects (schedules cycle through theirs). */
  readonly variant: number;
  readonly cluster: Cluster;
  readonly clients: readonly ClientHandle[];
  readonly ttl: number;
  /** Whether the clients run with the restart guard. */
  readonly guard: boolean;
  /** The Redis keys of the hot resources. */
  readonly hotKeys: readonly string[];
  /** Client pauses are appended here. */
  readonly pauses: ClientPause[];
  /** The clients' per-command bound, ms (default 200). */
  readonly commandTimeout?: number;
  /** Clients whose command connections alone a restart cuts (see the lagging-restart schedule). */
  readonly cutCommandsOf?: readonly string[];
}

export type FaultKind =
  | 'none'
  | 'kill-restart'
  | 'kill-delayed'
  | 'master-pause'
  | 'client-pause'
  | 'key-loss'
  | 'proxy-delay'
  | 'proxy-drop'
  | 'proxy-cut'
  | 'client-stall'
  | 'slow-masters'
  | 'partition'
  | 'evicting-master'
  | 'fsync-restart'
  | 'slow-waiter'
  | 'lagging-restart'
  | 'clock-step';

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];
const shuffled = <T>(items: readonly T[]): T[] => [...items].sort(() => Math.random() - 0.5);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const names = (masters: readonly number[]) => masters.map((m) => `m${m + 1}`).join(' ');

function openBand(
  ctx: NemesisContext,
  kind: FaultKind,
  variant: string,
  label: string,
  masters: number[],
  clients: string[],
  beyond?: string,
) {
  const band: FaultBand = {
    phase: ctx.phase,
    round: ctx.round,
    kind,
    variant,
    label,
    start: sharedNow(),
    end: 0,
    masters,
    clients,
    healedAt: 0,
    beyond,
    restarted: [],
  };
  return {
    band,
    /** The fault itself is over (e.g. the master is running again). */
    ended(): void {
      band.end ||= sharedNow();
    },
    /** Everything is healed; probes are timed from here. */
    healed(): FaultBand {
      band.end ||= sharedNow();
      band.healedAt = sharedNow();
      return band;
    },
  };
}

/** In the background: records which restarted masters report an uptime of 1 s too early. */
/** Applies proxy faults for chosen clients and masters, holds them for three TTLs, then heals them. */
async function holdProxyFaults(
  ctx: NemesisContext,
  kind: FaultKind,
  variant: string,
  plan: readonly { clients: string[]; masters: number[]; fault: Fault; label: string }[],
) {
  const masters = [...new Set(plan.flatMap((p) => p.masters))];
  const clients = [...new Set(plan.flatMap((p) => p.clients))];
  const b = openBand(ctx, kind, variant, plan.map((p) => p.label).join('; '), masters, clients);
  for (const p of plan) ctx.cluster.farm.set(p.clients, p.masters, p.fault);
  await sleep(ctx.ttl * 3);
  for (const p of plan) ctx.cluster.farm.set(p.clients, p.masters, undefined);
  b.ended();
  return b.healed();
}

function watchUptime(ctx: NemesisContext, band: FaultBand, masters: readonly number[], restartAt: number): void {
  void ctx.cluster.watchUptime(masters).then((early) => (band.earlyUptime = early));
  void ctx.cluster.guardObserver?.(masters, restartAt).then((trusted) => (band.guardTrustedAfter = trusted));
}

/** A hot lock held on at least `min` masters with a fresh TTL: the masters holding it. */
async function freshHolder(
  ctx: NemesisContext,
  minMasters: number,
  minPttl: number,
  waitMs: number,
  only?: (holders: number[], reads: ({ value: string | null; pttl: number } | undefined)[]) => boolean,
  keys: readonly string[] = ctx.hotKeys,
): Promise<{ key: string; holders: number[] } | undefined> {
  const deadline = sharedNow() + waitMs;
  while (sharedNow() < deadline) {
    for (const key of shuffled(keys)) {
      const reads = await ctx.cluster.inspector.read(key);
      const byValue = new Map<string, number[]>();
      reads.forEach((r, i) => {
        if (r?.value && r.pttl >= minPttl) byValue.set(r.value, [...(byValue.get(r.value) ?? []), i]);
      });
      for (const holders of byValue.values()) {
        if (holders.length >= minMasters && (!only || only(holders, reads))) return { key, holders };
      }
    }
    await sleep(15);
  }
  return undefined;
}

/**
 * A hot lock taken after this call began (its value absent from the first read) and held on at least
 * `minMasters` masters for `minAgeMs`: a long hold early in its section, whose release is still to come.
 */
async function newLongHolder(
  ctx: NemesisContext,
  minMasters: number,
  minAgeMs: number,
  waitMs: number,
): Promise<{ key: string; holders: number[]; value: string } | undefined> {
  const deadline = sharedNow() + waitMs;
  const before = new Set<string>();
  for (const key of ctx.hotKeys)
    for (const r of await ctx.cluster.inspector.read(key)) if (r?.value) before.add(`${key} ${r.value}`);
  const seen = new Map<string, number>();
  while (sharedNow() < deadline) {
    for (const key of ctx.hotKeys) {
      const reads = await ctx.cluster.inspector.read(key);
      const byValue = new Map<string, number[]>();
      reads.forEach((r, i) => {
        if (r?.value) byValue.set(r.value, [...(byValue.get(r.value) ?? []), i]);
      });
      for (const [value, holders] of byValue) {
        const id = `${key} ${value}`;
        if (holders.length < minMasters || before.has(id)) continue;
        const first = seen.get(id) ?? sharedNow();
        seen.set(id, first);
        if (sharedNow() - first >= minAgeMs) return { key, holders, value };
      }
    }
    await sleep(10);
  }
  return undefined;
}

/** A hot key held by one value on at least `minMasters` masters, seen again `minAgeMs` later with at least `minPttl` left. */
async function longHolder(
  ctx: NemesisContext,
  minMasters: number,
  minPttl: number,
  minAgeMs: number,
  waitMs: number,
): Promise<{ key: string; holders: number[] } | undefined> {
  const deadline = sharedNow() + waitMs;
  const seen = new Map<string, number>(); // `${key} ${value}` → first seen
  while (sharedNow() < deadline) {
    for (const key of ctx.hotKeys) {
      const reads = await ctx.cluster.inspector.read(key);
      const byValue = new Map<string, number[]>();
      reads.forEach((r, i) => {
        if (r?.value && r.pttl >= minPttl) byValue.set(r.value, [...(byValue.get(r.value) ?? []), i]);
      });
      for (const [value, holders] of byValue) {
        if (holders.length < minMasters) continue;
        const id = `${key} ${value}`;
        const first = seen.get(id) ?? sharedNow();
        seen.set(id, first);
        if (sharedNow() - first >= minAgeMs) return { key, holders };
      }
    }
    await sleep(10);
  }
  return undefined;
}

/**
 * Cuts client `victim` off from two masters, then waits for one of its hot locks to be held on
 * exactly its three reachable masters (a bare quorum): Kleppmann's set-up for a single master's
 * amnesia (a restart or a clock jump) to matter.
 */
async function bareQuorumHolder(
  ctx: NemesisContext,
  victim: ClientHandle,
  cutOff: number[],
  waitMs: number,
  keys?: readonly string[],
  fault: Fault = { kind: 'cut' },
) {
  ctx.cluster.farm.set([victim.id], cutOff, fault);
  await sleep(ctx.ttl * 1.1); // the victim's older locks lapse on the cut masters
  const reachable = range(ctx.cluster.size).filter((m) => !cutOff.includes(m));
  return freshHolder(
    ctx,
    3,
    ctx.ttl * 0.75,
    waitMs,
    (holders, reads) =>
      holders.length === reachable.length &&
      holders.every((h) => reachable.includes(h)) &&
      cutOff.every((m) => reads[m] !== undefined && reads[m].value === null),
    keys,
  );
}

/**
 * Quorum repair's case (docs/quorum-repair.md): a client cut off from two masters takes a long lock
 * on its three (a bare quorum), is reconnected, and renews; then its key is deleted on one of those
 * three. The deletion comes at the first read that shows the value on four or more masters (repaired)
 * or 1.2 s after the reconnection, whichever is first, the same rule with repair on or off. On a bare
 * quorum the deletion leaves two masters, and a waiting contender can win the other three.
 */
async function keyLossAfterReconnect(ctx: NemesisContext): Promise<FaultBand> {
  const victim = pick(ctx.clients);
  const cutOff = shuffled(range(ctx.cluster.size)).slice(0, 2).sort();
  const b = openBand(
    ctx,
    'key-loss',
    'bare quorum, reconnected',
    `bare quorum, reconnected: ${victim.id} black-holed from ${names(cutOff)} while it took a long lock, reconnected, then the key deleted on one of its three`,
    cutOff,
    [victim.id],
    'a clock jump on one master of a bare quorum: without quorum repair the holder stays on three masters after it reconnects',
  );
  // Long holds go to hot resource 0 (workload.ts): a holder there outlives the reconnection. A black
  // hole rather than a cut: the victim's connections stay up (no reconnect back-off builds up), and
  // healing resets them, so it reconnects at once and its next renewal reaches all five masters.
  const found = await bareQuorumHolder(ctx, victim, cutOff, 6_000, [ctx.hotKeys[0]], {
    kind: 'drop',
    direction: 'both',
  });
  ctx.cluster.farm.set([victim.id], cutOff, undefined);
  if (!found) {
    b.band.label += ' (no bare-quorum holder seen)';
    await sleep(ctx.ttl);
    b.ended();
    return b.healed();
  }
  const value = (await ctx.cluster.inspector.read(found.key))[found.holders[0]]?.value;
  const healedAt = sharedNow();
  let holders = found.holders;
  while (sharedNow() - healedAt < 1_200) {
    const reads = await ctx.cluster.inspector.read(found.key);
    holders = range(ctx.cluster.size).filter((m) => reads[m]?.value === value);
    if (holders.length >= 4 || holders.length === 0) break;
    await sleep(20);
  }
  const still = found.holders.filter((m) => holders.includes(m));
  const master = pick(still.length ? still : found.holders);
  b.band.masters = [...cutOff, master];
  b.band.heldOn = holders.length;
  b.band.label += ` (${names([master])}; held on ${holders.length} of ${ctx.cluster.size} at the deletion)`;
  if (holders.length > 0) await ctx.cluster.inspector.del(master, [found.key]);
  await sleep(ctx.ttl);
  b.ended();
  return b.healed();
}

/** One round of each fault type. Rounds vary the fault (minority, majority, bare quorum, …). */
/** The master that runs under libfaketime in the clock-step phase, and its steppable clock. */
const FAKED: { master: number; clock: FakeClock | undefined; offsetMs: number; restartPlain: boolean } = {
  master: 1,
  clock: undefined,
  offsetMs: 0,
  restartPlain: false,
};

/** Sets the faked master's wall-clock offset (read on every clock call: `FAKETIME_NO_CACHE`), and tells the history. */
async function setFakeOffset(cluster: Cluster, offsetMs: number): Promise<void> {
  await FAKED.clock!.step(Number((offsetMs / 1_000).toFixed(3)));
  FAKED.offsetMs = offsetMs;
  cluster.history?.clockSet(FAKED.master, offsetMs);
}

/**
 * Every key of the phase on one master in one script: a point-in-time image, as an AOF or a snapshot
 * brings back. Read key by key, a hot key's queue, leases and claims came from different instants: a
 * ticket queued between the reads came back in the queue with no lease (never pruned) and no claim
 * deadline (a claim that never lapses), and held the key back from every other waiter for as long
 * as traffic kept the restored queue alive. Replies `{key, type, dump, pttl, value}` per key (the
 * value of a string, else '').
 */
const SNAPSHOT_LUA = `
local out, cursor = {}, '0'
repeat
  local r = redis.call('scan', cursor, 'match', ARGV[1], 'count', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local t = redis.call('type', k).ok
    if t ~= 'string' or ARGV[2] == '1' then
      local v = ''
      if t == 'string' then v = redis.call('get', k) end
      out[#out + 1] = {k, t, redis.call('dump', k), redis.call('pttl', k), v}
    end
  end
until cursor == '0'
return out`;

/** The lock keys' companions (the handoff's queues, leases and claims: every key of the phase that is not a string), dumped at one instant. */
async function dumpQueues(
  inspector: Inspector,
  m: number,
  pattern: string,
  withLockKeys = false,
): Promise<{ key: string; pttl: number; dump: Buffer; value?: string }[]> {
  const c = inspector.clients[m];
  const out: { key: string; pttl: number; dump: Buffer; value?: string }[] = [];
  try {
    const rows = (await c.callBuffer('EVAL', SNAPSHOT_LUA, 0, pattern, withLockKeys ? '1' : '0')) as [
      Buffer,
      Buffer,
      Buffer,
      number,
      Buffer,
    ][];
    for (const [key, type, dump, pttl, value] of rows) {
      const string = type.toString() === 'string';
      if (string && pttl <= 0) continue;
      out.push({ key: key.toString(), pttl: pttl > 0 ? pttl : 0, dump, value: string ? value.toString() : undefined });
    }
  } catch {
    // the master did not answer: nothing to restore
  }
  return out;
}

export const schedules: Record<FaultKind, (ctx: NemesisContext) => Promise<FaultBand | undefined>> = {
  /**
   * A slow first waiter (hot contention): one client's links to every master answer later than
   * `commandTimeout` (0.75 × it each way) for three TTLs. Its attempts win free keys and undo them;
   * the others must still get the keys within the waiting bound.
   */
  async 'slow-waiter'(ctx) {
    const victim = pick(ctx.clients);
    const commandTimeout = ctx.commandTimeout ?? 200;
    const delay = Math.ceil(commandTimeout * 0.75);
    const b = await holdProxyFaults(ctx, 'slow-waiter', 'links past commandTimeout', [
      {
        clients: [victim.id],
        masters: range(ctx.cluster.size),
        fault: { kind: 'delay', ms: delay },
        label: `${victim.id}↔all masters +${delay} ms each way (round trip past commandTimeout ${commandTimeout})`,
      },
    ]);
    b.delayMs = delay;
    return b;
  },

  /**
   * A lagging restart: a master holding a fresh hot lock is killed while lock writes flow and comes
   * back as an AOF with \`appendfsync everysec\` or an older snapshot would bring it: the handoff's
   * queues (ticket orders and leases) as they were, the lock keys lost. Odd variants restore queues
   * dumped one TTL before the kill (an older snapshot: tickets since withdrawn or expired come back);
   * variants 2 and 3 restart three of the holder's masters at once (the restart guard's case).
   */
  async 'lagging-restart'(ctx) {
    // Variant 4: three of the holder's masters restart and lose nothing (their lock keys come back
    // too): only the restart guard keeps their votes and handovers out for a TTL.
    const whole = ctx.variant % 5 === 4;
    const older = !whole && ctx.variant % 2 === 1;
    const majority = whole || ctx.variant % 4 >= 2;
    // Variants 5 and up: the claims hash is lost too (an evicting master dropped it, or the AOF is
    // from a version before claims): the tickets that come back claim until their leases lapse, and
    // only the pruning of lapsed tickets ends that (the `expired-tickets-never-pruned` pass).
    const claimsLost = ctx.variant >= 5;
    // Nothing lost: the kill hits a long hold early in its section, so that its release comes after
    // the clients are back on the restarted masters and inside their amnesia window (a TTL from the
    // kill, less drift): those masters hand the key to the next ticket while the guard distrusts them.
    // Phases without long holds (subscriber-restart) fall back to a fresh holder.
    const found =
      (whole ? await newLongHolder(ctx, 3, 80, 2_000) : undefined) ?? (await freshHolder(ctx, 3, ctx.ttl * 0.7, 2_000));
    const victims = (
      majority
        ? shuffled(found?.holders ?? range(ctx.cluster.size)).slice(0, 3)
        : [found ? pick(found.holders) : pick(range(ctx.cluster.size))]
    ).sort();
    const pattern = `lock:${ctx.phase}:*`;
    const dumpAll = () => Promise.all(victims.map((m) => dumpQueues(ctx.cluster.inspector, m, pattern, whole)));
    const withoutClaims = (q: Awaited<ReturnType<typeof dumpAll>>) =>
      claimsLost ? q.map((keys) => keys.filter((k) => !k.key.endsWith(':handoff:claim'))) : q;
    let queues = withoutClaims(await dumpAll());
    if (older) await sleep(ctx.ttl);
    else queues = withoutClaims(await dumpAll());
    const b = openBand(
      ctx,
      'lagging-restart',
      `${majority ? 'majority' : 'single'}, ${whole ? 'nothing lost' : older ? 'older snapshot' : 'last second lost'}${claimsLost ? ', claims lost' : ''}`,
      `${names(victims)} killed -9, back with ${queues.map((q) => q.length).join('/')} ${whole ? 'keys (lock keys too)' : 'queue keys'} ${older ? 'of one TTL before' : 'of the kill'}${whole ? '' : ' and no lock keys'}${claimsLost ? ', the claims hash lost' : ''}${found ? ` (a fresh lock there was on ${found.holders.length} of ${ctx.cluster.size})` : ''}`,
      victims,
      [],
    );
    b.band.restarted = victims;
    b.band.heldOn = found?.holders.length;
    b.band.killedAt = sharedNow();
    for (const m of victims) ctx.cluster.farm.proxies[m].setDoorClosed(true);
    // The subscriber-restart phase: these clients' command connections to the restarted masters stay
    // cut for a TTL after the door opens while their subscribers reconnect and hear the new servers'
    // handovers (the library must not count them before its command connection vetted that server).
    const cutCommands = ctx.cutCommandsOf ?? [];
    const cutsBefore = victims.map((m) => ctx.cluster.farm.proxies[m].stats.commandCuts);
    if (cutCommands.length) ctx.cluster.farm.set(cutCommands, victims, { kind: 'cut-commands' });
    let restartAt = sharedNow();
    let restored = 0;
    try {
      await Promise.all(victims.map((m) => ctx.cluster.masters[m].kill()));
      for (const m of victims) ctx.cluster.history?.wiped(m);
      restartAt = sharedNow();
      await Promise.all(victims.map((m) => ctx.cluster.masters[m].restart()));
      await Promise.all(
        victims.map(async (m, i) => {
          await ctx.cluster.history?.attach(m);
          const c = ctx.cluster.inspector.clients[m];
          for (let n = 0; n < 60; n++) {
            if ((await c.ping().catch(() => undefined)) === 'PONG') break;
            await sleep(10);
          }
          for (const q of queues[i]) {
            // Queue keys live a ticket lease (under a second) and the clients need up to a second to
            // reconnect: restored with the dump's TTL they would expire before any client came back,
            // where a quick AOF load keeps them. They get the time the master was away, and a second.
            const pttl = Math.round(q.value === undefined ? q.pttl + (sharedNow() - b.band.killedAt!) + 1_000 : q.pttl);
            await c.restore(q.key, pttl, q.dump, 'REPLACE').then(
              () => restored++,
              () => undefined,
            );
            // A lock key brought back: the history's model of that master starts from it.
            if (q.value !== undefined) ctx.cluster.history?.reloaded(m, q.key, q.value, q.pttl, sharedNow());
          }
        }),
      );
    } finally {
      for (const m of victims) ctx.cluster.farm.proxies[m].setDoorClosed(false);
    }
    b.band.label += ` (${restored} keys restored)`;
    if (cutCommands.length) {
      await sleep(ctx.ttl);
      ctx.cluster.farm.set(cutCommands, victims, undefined);
      const cuts = victims.reduce((n, m, i) => n + ctx.cluster.farm.proxies[m].stats.commandCuts - cutsBefore[i], 0);
      b.band.label += `; ${cutCommands.join(' ')}: command connections cut (${cuts} resets), subscribers let through, for a TTL after`;
    }
    b.ended();
    watchUptime(ctx, b.band, victims, restartAt);
    return b.healed();
  },

  /**
   * Wall-clock steps on one master (it runs under libfaketime, set up by \`setUpMasters\`): forward
   * 1.5 s (every key there expires at once: a TTL is 1 s), back 1.5 s, forward 0.4 s, back 0.4 s.
   * Redlock assumes no such step; a holder left on a bare quorum loses exclusivity (excused by cause).
   */
  async 'clock-step'(ctx) {
    const steps = [1_500, -1_500, 400, -400];
    const step = steps[ctx.variant % steps.length];
    const m = FAKED.master;
    const b = openBand(
      ctx,
      'clock-step',
      step > 0 ? 'forward' : 'back',
      `${names([m])} wall clock stepped ${step > 0 ? 'forward' : 'back'} ${Math.abs(step)} ms (libfaketime)`,
      [m],
      [],
      'a clock step on one master: Redlock assumes none; a holder left with a bare quorum loses exclusivity',
    );
    await setFakeOffset(ctx.cluster, FAKED.offsetMs + step);
    await sleep(ctx.ttl * 2);
    b.ended();
    return b.healed();
  },

  async none(ctx) {
    await sleep(ctx.ttl * 2);
    return undefined;
  },

  /** kill -9 and restart at once, without persistence. */
  async 'kill-restart'(ctx) {
    const variant = ctx.variant % 4;
    if (variant === 3) {
      // Four of the masters of a LONG holder (the same value for 80 ms, so not a 2–40 ms hold about
      // to release) crash at once, its key fresh (renewed): its contenders retry every ~60 ms, so a guard
      // that trusts the restarted masters at once hands them a quorum inside its window.
      const found = await longHolder(ctx, 4, ctx.ttl * 0.75, 80, 4_000);
      const victims = found ? shuffled(found.holders).slice(0, 4).sort() : [0, 1, 2, 3];
      const b = openBand(
        ctx,
        'kill-restart',
        'majority of a long holder',
        `majority of a long holder: ${names(victims)} restarted empty${found ? '' : ' (no long holder found)'}`,
        victims,
        [],
        ctx.guard ? undefined : 'plain Redlock: a majority of masters forgot the lock at once and vote again at once',
      );
      b.band.restarted = victims;
      b.band.heldOn = found?.holders.length;
      b.band.killedAt = sharedNow();
      const restartAt = await ctx.cluster.killAndRestart(victims, 0);
      b.ended();
      watchUptime(ctx, b.band, victims, restartAt);
      return b.healed();
    }
    if (variant === 0) {
      // A majority crashes at once, timed to hit a holder that has just taken or renewed its lock.
      const found = await freshHolder(ctx, 3, ctx.ttl * 0.85, 3_000);
      const victims = found ? shuffled(found.holders).slice(0, 3).sort() : [0, 1, 2];
      const b = openBand(
        ctx,
        'kill-restart',
        'majority',
        `majority: ${names(victims)} restarted empty`,
        victims,
        [],
        ctx.guard ? undefined : 'plain Redlock: a majority of masters forgot the lock at once and vote again at once',
      );
      b.band.restarted = victims;
      b.band.killedAt = sharedNow();
      const restartAt = await ctx.cluster.killAndRestart(victims, 0);
      b.ended();
      watchUptime(ctx, b.band, victims, restartAt);
      return b.healed();
    }
    if (variant === 1) {
      // One master restarts empty while a client holds a bare quorum that includes it.
      const victim = pick(ctx.clients);
      const cutOff = shuffled(range(ctx.cluster.size)).slice(0, 2).sort();
      const b = openBand(
        ctx,
        'kill-restart',
        'bare quorum',
        `bare quorum: ${victim.id} cut from ${names(cutOff)}, one of its masters restarted empty`,
        cutOff,
        [victim.id],
        ctx.guard
          ? undefined
          : 'plain Redlock: the holder had a bare quorum and one of its masters forgot the lock and votes again at once',
      );
      const found = await bareQuorumHolder(ctx, victim, cutOff, 2_500);
      const target = found ? [pick(found.holders)] : [pick(range(ctx.cluster.size).filter((m) => !cutOff.includes(m)))];
      b.band.masters = [...cutOff, ...target];
      b.band.restarted = target;
      b.band.label += ` (${names(target)}${found ? '' : ', no bare-quorum holder seen'})`;
      b.band.killedAt = sharedNow();
      const restartAt = await ctx.cluster.killAndRestart(target, 0);
      watchUptime(ctx, b.band, target, restartAt);
      await sleep(ctx.ttl * 1.2);
      ctx.cluster.farm.set([victim.id], cutOff, undefined);
      b.ended();
      return b.healed();
    }
    // A single master restarts empty, one that holds a fresh hot lock. A holder usually keeps 4 of 5,
    // unless it won with a bare quorum (split votes under contention leave it 3).
    const found = await freshHolder(ctx, 3, ctx.ttl * 0.85, 2_000);
    const victims = [found ? pick(found.holders) : pick(range(ctx.cluster.size))];
    const held = found ? ` (that lock was on ${found.holders.length} of ${ctx.cluster.size})` : '';
    const b = openBand(
      ctx,
      'kill-restart',
      'single',
      `single: ${names(victims)} restarted empty${held}`,
      victims,
      [],
      ctx.guard
        ? undefined
        : 'plain Redlock: a master forgot the lock and votes again at once (harmless only while every holder has more than a bare quorum)',
    );
    b.band.restarted = victims;
    b.band.heldOn = found?.holders.length;
    b.band.killedAt = sharedNow();
    const restartAt = await ctx.cluster.killAndRestart(victims, 0);
    b.ended();
    watchUptime(ctx, b.band, victims, restartAt);
    return b.healed();
  },

  /** kill -9, stay down longer than the largest TTL, restart empty. */
  async 'kill-delayed'(ctx) {
    const k = [1, 3, 2][ctx.variant % 3];
    const victims = shuffled(range(ctx.cluster.size)).slice(0, k).sort();
    const b = openBand(
      ctx,
      'kill-delayed',
      `${k} down`,
      `${k} down ${Math.round(ctx.ttl * 1.5)} ms: ${names(victims)}`,
      victims,
      [],
    );
    b.band.restarted = victims;
    b.band.killedAt = sharedNow();
    const restartAt = await ctx.cluster.killAndRestart(victims, ctx.ttl * 1.5);
    b.ended();
    watchUptime(ctx, b.band, victims, restartAt);
    return b.healed();
  },

  /** SIGSTOP masters past the TTL, then SIGCONT. */
  async 'master-pause'(ctx) {
    const k = [1, 2, 3][ctx.variant % 3];
    const victims = shuffled(range(ctx.cluster.size)).slice(0, k).sort();
    const ms = Math.round(ctx.ttl * (1.2 + Math.random() * 0.8));
    const b = openBand(ctx, 'master-pause', `${k} paused`, `${k} paused ${ms} ms: ${names(victims)}`, victims, []);
    ctx.cluster.pause(victims);
    try {
      await sleep(ms);
    } finally {
      ctx.cluster.resume(victims);
    }
    b.ended();
    return b.healed();
  },

  /** SIGSTOP a client process past its validity: at a random instant, or between a check and a write. */
  async 'client-pause'(ctx) {
    const victim = pick(ctx.clients.filter((c) => c.stopProcess));
    if (!victim) {
      await sleep(ctx.ttl);
      return undefined;
    }
    const ms = Math.round(ctx.ttl * (1.5 + Math.random()));
    if (ctx.variant % 2 === 0 && victim.pauseAtNextCommit) {
      const b = openBand(
        ctx,
        'client-pause',
        'between check and write',
        `${victim.id} stopped ${ms} ms between its check and its write`,
        [],
        [victim.id],
      );
      const pause = await victim.pauseAtNextCommit(ms, 3_000);
      if (pause) {
        b.band.start = pause.start;
        ctx.pauses.push({ phase: ctx.phase, client: victim.id, start: pause.start, end: pause.end, targeted: true });
        b.ended();
        return b.healed();
      }
      b.band.label += ' (no commit seen; stopped at random)';
    }
    const b = openBand(
      ctx,
      'client-pause',
      'random instant',
      `${victim.id} stopped ${ms} ms at a random instant`,
      [],
      [victim.id],
    );
    const start = sharedNow();
    victim.stopProcess!();
    try {
      await sleep(ms);
    } finally {
      victim.continueProcess!();
    }
    ctx.pauses.push({ phase: ctx.phase, client: victim.id, start, end: sharedNow(), targeted: false });
    b.ended();
    return b.healed();
  },

  /** DEL a held lock key on one master: stands in for that master's clock jumping forward. */
  async 'key-loss'(ctx) {
    if (ctx.variant % 3 === 2) return keyLossAfterReconnect(ctx);
    if (ctx.variant % 3 === 0) {
      const found = await freshHolder(ctx, 3, ctx.ttl * 0.6, 2_000);
      const master = found ? pick(found.holders) : pick(range(ctx.cluster.size));
      const held = found ? ` (a fresh lock there was on ${found.holders.length} of ${ctx.cluster.size})` : '';
      const b = openBand(
        ctx,
        'key-loss',
        'minority',
        `minority: hot lock keys deleted on ${names([master])}${held}`,
        [master],
        [],
        'a clock jump on one master: Redlock assumes none; a holder left with a bare quorum (split votes under contention) loses exclusivity',
      );
      b.band.heldOn = found?.holders.length;
      await ctx.cluster.inspector.del(master, ctx.hotKeys);
      await sleep(ctx.ttl);
      b.ended();
      return b.healed();
    }
    const victim = pick(ctx.clients);
    const cutOff = shuffled(range(ctx.cluster.size)).slice(0, 2).sort();
    const b = openBand(
      ctx,
      'key-loss',
      'bare quorum',
      `bare quorum: ${victim.id} cut from ${names(cutOff)}, its key deleted on one master`,
      cutOff,
      [victim.id],
      'a clock jump on one master of a bare quorum: no Redlock client can see it (fencing is the only protection)',
    );
    const found = await bareQuorumHolder(ctx, victim, cutOff, 2_500);
    const master = found ? pick(found.holders) : pick(range(ctx.cluster.size).filter((m) => !cutOff.includes(m)));
    b.band.masters = [...cutOff, master];
    b.band.label += ` (${names([master])}${found ? '' : ', no bare-quorum holder seen'})`;
    if (found) await ctx.cluster.inspector.del(master, [found.key]);
    await sleep(ctx.ttl * 1.2);
    ctx.cluster.farm.set([victim.id], cutOff, undefined);
    b.ended();
    return b.healed();
  },

  /**
   * Event-loop stalls in a client: a synchronous busy wait (a GC pause) longer than the renewal
   * interval (a third of the TTL), in turn about half and nine tenths of the TTL, and, to make an
   * acquisition finish after its validity, a third of a TTL beyond it.
   */
  async 'client-stall'(ctx) {
    const victim = pick(ctx.clients.filter((c) => c.stall));
    if (!victim) {
      await sleep(ctx.ttl);
      return undefined;
    }
    const factor = [0.5, 0.9, 1.3][ctx.variant % 3];
    const ms = Math.round(ctx.ttl * factor);
    const b = openBand(
      ctx,
      'client-stall',
      `${factor} × TTL`,
      `${victim.id} event loop blocked ${ms} ms`,
      [],
      [victim.id],
    );
    const { start, end } = await victim.stall!(ms);
    const stalled = victim.sharesLoop ? ctx.clients.filter((c) => c.sharesLoop) : [victim];
    for (const c of stalled)
      ctx.pauses.push({ phase: ctx.phase, client: c.id, start, end, targeted: false, kind: 'stall' });
    b.band.start = start;
    b.ended();
    return b.healed();
  },

  /** Masters answering just under `commandTimeout`: one, two, then all of them, for every client. */
  async 'slow-masters'(ctx) {
    const k = [1, 2, 5][ctx.variant % 3];
    const ms = shuffled(range(ctx.cluster.size)).slice(0, k).sort();
    const commandTimeout = ctx.commandTimeout ?? 200;
    const delay = Math.floor(commandTimeout * 0.45); // each way: a round trip just under commandTimeout
    const ids = ctx.clients.map((c) => c.id);
    const b = await holdProxyFaults(ctx, 'slow-masters', `${k} slow`, [
      {
        clients: ids,
        masters: ms,
        fault: { kind: 'delay', ms: delay },
        label: `${names(ms)} answer in ~${2 * delay} ms (commandTimeout ${commandTimeout})`,
      },
    ]);
    b.delayMs = delay;
    return b;
  },

  /**
   * Partitions that split the clients into groups: a bridge (two groups share one master), a
   * majority ring (each client sees a different majority), a minority island (half the clients see
   * only two masters).
   */
  async partition(ctx) {
    const variant = ctx.variant % 3;
    const ids = shuffled(ctx.clients.map((c) => c.id));
    const half = Math.ceil(ids.length / 2);
    const [a, b] = [ids.slice(0, half), ids.slice(half)];
    const n = ctx.cluster.size;
    const plan: { clients: string[]; masters: number[]; fault: Fault; label: string }[] = [];
    const drop: Fault = { kind: 'drop', direction: 'both' };
    if (variant === 0) {
      plan.push({ clients: a, masters: [3, 4], fault: drop, label: `${a.join(' ')} see m1 m2 m3` });
      plan.push({ clients: b, masters: [0, 1], fault: drop, label: `${b.join(' ')} see m3 m4 m5` });
    } else if (variant === 1) {
      ids.forEach((c, i) => {
        const seen = [i % n, (i + 1) % n, (i + 2) % n];
        plan.push({
          clients: [c],
          masters: range(n).filter((m) => !seen.includes(m)),
          fault: drop,
          label: `${c} sees ${names(seen.sort())}`,
        });
      });
    } else {
      plan.push({ clients: a, masters: [2, 3, 4], fault: drop, label: `${a.join(' ')} see only m1 m2` });
    }
    return holdProxyFaults(ctx, 'partition', ['bridge', 'majority ring', 'minority island'][variant], plan);
  },

  /**
   * Memory pressure on a master with `maxmemory` and `volatile-lru` (set up by phase.ts): filler
   * values without a TTL until the master evicts, so that the lock keys (the only keys with a TTL)
   * go first.
   */
  async 'evicting-master'(ctx) {
    const m = 0;
    const b = openBand(
      ctx,
      'evicting-master',
      'volatile-lru',
      `m1 under memory pressure (maxmemory, volatile-lru): filler written for ${ctx.ttl * 3} ms`,
      [m],
      [],
    );
    const client = ctx.cluster.inspector.clients[m];
    const filler = 'x'.repeat(32 * 1024);
    const until = sharedNow() + ctx.ttl * 3;
    let n = 0;
    while (sharedNow() < until) {
      await client.set(`junk:${ctx.phase}:${ctx.round}:${n++}`, filler).catch(() => undefined);
      if (n % 8 === 0) await sleep(5);
    }
    await deleteJunk(client, `junk:${ctx.phase}:${ctx.round}:*`);
    b.ended();
    return b.healed();
  },

  /**
   * kill -9 of a master that runs with `appendonly yes` and `appendfsync everysec` (set up by
   * phase.ts), one holding a fresh hot lock; it restarts from its AOF, missing up to its last second.
   */
  async 'fsync-restart'(ctx) {
    const found = await freshHolder(ctx, 3, ctx.ttl * 0.85, 2_000);
    const victim = found ? pick(found.holders) : pick(range(ctx.cluster.size));
    const b = openBand(
      ctx,
      'fsync-restart',
      'everysec',
      `${names([victim])} killed -9 and restarted from its AOF (appendfsync everysec)${found ? ` (a fresh lock there was on ${found.holders.length} of ${ctx.cluster.size})` : ''}`,
      [victim],
      [],
    );
    b.band.restarted = [victim]; // its last second is gone: counters written then included
    b.band.heldOn = found?.holders.length;
    b.band.killedAt = sharedNow();
    const restartAt = await ctx.cluster.killAndRestart([victim], 0);
    // What the AOF brought back: the history's model of that master starts from it. A reloaded key
    // keeps its absolute expiry, read exactly with PEXPIRETIME (a PTTL stamped at the restart or at
    // the scan is off by the scan's own duration, and the model then misjudged the next SET NX).
    // The inspector reconnects to the restarted master on its own: retry until the scan answers.
    let reloaded = await ctx.cluster.inspector.scan(victim, `lock:${ctx.phase}:*`);
    while (reloaded === undefined && sharedNow() - restartAt < 3_000) {
      await sleep(10);
      reloaded = await ctx.cluster.inspector.scan(victim, `lock:${ctx.phase}:*`);
    }
    if (reloaded === undefined) b.band.label += ' (the AOF reload was not scanned: master did not answer)';
    const history = ctx.cluster.history;
    for (const k of reloaded ?? []) {
      if (!history || k.value === null || !(k.pttl > 0) || !(k.expiresAtWall! > 0)) continue;
      history.reloaded(victim, k.key, k.value, k.expiresAtWall! - history.wallOffset - restartAt, restartAt);
    }
    b.ended();
    watchUptime(ctx, b.band, [victim], restartAt);
    return b.healed();
  },

  async 'proxy-delay'(ctx) {
    const variant = ctx.variant % 3;
    const ids = ctx.clients.map((c) => c.id);
    const plan: { clients: string[]; masters: number[]; fault: Fault; label: string }[] = [];
    if (variant === 0) {
      const c = pick(ids);
      const ms = shuffled(range(ctx.cluster.size)).slice(0, 2).sort();
      plan.push({
        clients: [c],
        masters: ms,
        fault: { kind: 'delay', ms: 80 },
        label: `${c}↔${names(ms)} +80 ms each way`,
      });
    } else if (variant === 1) {
      for (const c of shuffled(ids).slice(0, 2)) {
        const ms = shuffled(range(ctx.cluster.size)).slice(0, 2).sort();
        plan.push({
          clients: [c],
          masters: ms,
          fault: { kind: 'delay', ms: 400 },
          label: `${c}↔${names(ms)} +400 ms (beyond commandTimeout)`,
        });
      }
    } else {
      plan.push({
        clients: ids,
        masters: range(ctx.cluster.size),
        fault: { kind: 'delay', ms: 40 },
        label: 'everyone↔all masters +40 ms each way',
      });
    }
    return holdProxyFaults(
      ctx,
      'proxy-delay',
      ['2 links +80 ms', '4 links +400 ms', 'all links +40 ms'][variant],
      plan,
    );
  },

  async 'proxy-drop'(ctx) {
    const variant = ctx.variant % 3;
    const ids = shuffled(ctx.clients.map((c) => c.id));
    const plan: { clients: string[]; masters: number[]; fault: Fault; label: string }[] = [];
    if (variant === 0) {
      // Asymmetric partition: two clients each see a different majority (they share one master).
      plan.push({
        clients: [ids[0]],
        masters: [3, 4],
        fault: { kind: 'drop', direction: 'both' },
        label: `${ids[0]} sees m1 m2 m3 only`,
      });
      plan.push({
        clients: [ids[1]],
        masters: [0, 1],
        fault: { kind: 'drop', direction: 'both' },
        label: `${ids[1]} sees m3 m4 m5 only`,
      });
    } else if (variant === 1) {
      const ms = shuffled(range(ctx.cluster.size)).slice(0, 3).sort();
      plan.push({
        clients: [ids[0]],
        masters: ms,
        fault: { kind: 'drop', direction: 'both' },
        label: `${ids[0]} black-holed from a majority (${names(ms)})`,
      });
    } else {
      const ms = shuffled(range(ctx.cluster.size)).slice(0, 2).sort();
      plan.push({
        clients: [ids[0], ids[1]],
        masters: ms,
        fault: { kind: 'drop', direction: 'replies' },
        label: `${ids[0]} ${ids[1]}: replies from ${names(ms)} lost (commands still run)`,
      });
    }
    return holdProxyFaults(
      ctx,
      'proxy-drop',
      ['asymmetric partition', 'black hole from a majority', 'replies lost'][variant],
      plan,
    );
  },

  async 'proxy-cut'(ctx) {
    const variant = ctx.variant % 3;
    const ids = shuffled(ctx.clients.map((c) => c.id));
    const plan: { clients: string[]; masters: number[]; label: string }[] = [];
    if (variant === 0) {
      const ms = shuffled(range(ctx.cluster.size)).slice(0, 3).sort();
      plan.push({ clients: [ids[0]], masters: ms, label: `${ids[0]} cut from a majority (${names(ms)})` });
    } else if (variant === 1) {
      plan.push({ clients: [ids[0]], masters: [0, 1], label: `${ids[0]} cut from m1 m2` });
      plan.push({ clients: [ids[1]], masters: [3, 4], label: `${ids[1]} cut from m4 m5` });
    } else {
      const m = pick(range(ctx.cluster.size));
      plan.push({ clients: ids, masters: [m], label: `everyone cut from ${names([m])}` });
    }
    const b = openBand(
      ctx,
      'proxy-cut',
      ['cut from a majority', 'cut from minorities', 'everyone cut from one'][variant],
      plan.map((p) => p.label).join('; '),
      [...new Set(plan.flatMap((p) => p.masters))],
      [...new Set(plan.flatMap((p) => p.clients))],
    );
    for (const p of plan) ctx.cluster.farm.set(p.clients, p.masters, { kind: 'cut' });
    await sleep(ctx.ttl * 3);
    for (const p of plan) ctx.cluster.farm.set(p.clients, p.masters, undefined);
    b.ended();
    return b.healed();
  },
};

/** Ports of masters that run with an AOF (`appendfsync everysec`): their restarts load it. */
export const PERSISTENT_PORTS = new Set<number>();

/** Extra redis-server arguments for the chaos masters (pass to `startRedisMasters`). */
export const chaosMasterArgs = (port: number): string[] =>
  PERSISTENT_PORTS.has(port) ? ['--appendonly', 'yes', '--appendfsync', 'everysec'] : [];

/** Per-phase set-up of the masters for the fault types that need it (undone by `tearDownMasters`). */
export async function setUpMasters(fault: FaultKind, cluster: Cluster): Promise<void> {
  if (FAKED.restartPlain) {
    // The master that ran under libfaketime in an earlier phase runs plain again (before this phase's history starts).
    FAKED.restartPlain = false;
    await cluster.masters[FAKED.master].kill();
    await cluster.masters[FAKED.master].restart();
    await FAKED.clock?.dispose();
    FAKED.clock = undefined;
  }
  if (fault === 'clock-step') {
    // One master restarted under libfaketime (tools/fake-clock.ts, as the tests use it): its wall
    // clock is read from a file on every call, so the nemesis can step it while it runs. The
    // monotonic clock is left alone (an NTP step does not move it either). The environment is the
    // harness's only while that server starts.
    if (!fakeClockAvailable()) throw new Error('the clock-step phase needs libfaketime (Debian package `faketime`)');
    FAKED.clock = await fakeClock();
    FAKED.offsetMs = 0;
    const env = FAKED.clock.env;
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    const m = cluster.masters[FAKED.master];
    await m.kill();
    Object.assign(process.env, env);
    try {
      await m.restart();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    await cluster.inspector.clients[FAKED.master].ping().catch(() => undefined);
  }
  if (fault === 'fsync-restart') {
    for (const [i, m] of cluster.masters.entries()) {
      PERSISTENT_PORTS.add(m.port);
      await cluster.inspector.clients[i].config('SET', 'appendfsync', 'everysec');
      await cluster.inspector.clients[i].config('SET', 'appendonly', 'yes');
    }
    await sleep(500); // the initial AOF rewrite
  }
  if (fault === 'evicting-master') {
    const c = cluster.inspector.clients[0];
    const used = Number(/used_memory:(\d+)/.exec(await c.info('memory'))?.[1] ?? 0);
    await c.config('SET', 'maxmemory', String(used + 2 * 1024 * 1024));
    await c.config('SET', 'maxmemory-policy', 'volatile-lru');
  }
}

export async function tearDownMasters(fault: FaultKind, cluster: Cluster): Promise<void> {
  if (fault === 'clock-step' && FAKED.clock) {
    // Back to the real time (a last step, told to the history); the next phase restarts it plain.
    await setFakeOffset(cluster, 0);
    FAKED.restartPlain = true;
  }
  if (fault === 'fsync-restart') {
    for (const [i, m] of cluster.masters.entries()) {
      PERSISTENT_PORTS.delete(m.port);
      await cluster.inspector.clients[i].config('SET', 'appendonly', 'no').catch(() => undefined);
    }
  }
  if (fault === 'evicting-master') {
    const c = cluster.inspector.clients[0];
    await c.config('SET', 'maxmemory', '0').catch(() => undefined);
    await c.config('SET', 'maxmemory-policy', 'noeviction').catch(() => undefined);
    await deleteJunk(c, 'junk:*');
  }
}

async function deleteJunk(client: Redis, pattern: string): Promise<void> {
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await client.unlink(...keys);
    } while (cursor !== '0');
  } catch {
    // the master did not answer: the phase's tear-down flushes the filler
  }
}

/** How long after a round the run stays quiet before the next one (ms), so that its effects are seen. */
export function quietAfter(kind: FaultKind, ttl: number, guard: boolean, variant = 0): number {
  // Nothing lost (variant 4): the restart guard's window. Else long enough after it (about two TTLs
  // and a second) for a key the restored queues strand to show as a waiter idle past its bound.
  if (kind === 'lagging-restart') return variant % 5 === 4 ? 2_000 + ttl : 3_000 + 4 * ttl;
  if ((kind === 'kill-restart' || kind === 'kill-delayed') && guard) return 2_000 + ttl; // the guard's window (uptime is counted in whole seconds)
  return Math.round(ttl * 1.5);
}
