/**
 * The checker: pure functions over one phase's history. All times are on the shared clock.
 *
 * The oracle does not read the library's `validity` or `signal`. A holder's window is
 * [start, min(end, bound)], where `bound` comes from the masters' own history (history.ts): of the k
 * masters whose key took the holder's value by the grant, first written at w1 ≤ … ≤ wk, a quorum holds
 * it only until w(k−quorum+1) + TTL, so the holder is entitled to at most that write (less any link
 * delay the nemesis added) + TTL − drift;
 * each `extend()` call, stamped by the harness before the call, moves the bound to its stamp + TTL −
 * drift only if a quorum of masters renewed the value after that stamp. Mutual exclusion is violated
 * when two holders' windows on one resource overlap while both were running.
 *
 * A violation is excused ("beyond tolerance") only by a cause the history shows: one holder's
 * value held the key on exactly a bare quorum and the fault removed it from one of those masters
 * (deleted or evicted) before the other's section began, or the restart guard was off and a master
 * holding it was wiped. Everything
 * else fails the run, as do the other checks listed in `PhaseCheck.problems`.
 */
import {
  analyseHistory,
  mastersHolding,
  mastersRenewing,
  NOTICE_LATENESS_MS,
  type HistoryAnalysis,
  type Holding,
} from './history.js';
import { longestUnstalledMs, unstalledMs } from './loop-lag.js';
import type { PhaseResult } from './phase.js';
import type { ClientPause, FaultBand, SectionRecord } from './types.js';

/** How a key can end by a fault rather than by its holder (history.ts). */
const FAULT_ENDS = new Set(['evicted', 'nemesis-del', 'wiped', 'foreign-release', 'clock-step']);

/** The window the library itself reported (validity, signal): only for pictures, never for verdicts. */
export const windowEnd = (s: SectionRecord): number => Math.min(s.end, s.abortedAt ?? Infinity, s.deadline);

/**
 * How far a holder's believed deadline may pass the masters' window end before it fails the run:
 * two clocks meet there (the masters' stamps, converted once per phase, and the shared clock).
 */
export const CLAIM_TOLERANCE_MS = 5;

/** TTL − drift, as the docs define validity (driftFactor 0.01, plus 2 ms). */
export const validityOf = (ttl: number): number => ttl - ttl * 0.01 - 2;

/** One failed check: what fails the run (and names the check, for the mutants' report). */
export interface Problem {
  check: string;
  count: number;
  detail: string;
}

export interface Violation {
  resource: string;
  first: { id: string; start: number; windowEnd: number; token?: number };
  second: { id: string; start: number; windowEnd: number; token?: number };
  overlapMs: number;
  band?: FaultBand;
  /** The cause the masters' history shows, when it is one the docs name (then `expected`). */
  cause?: string;
  expected: boolean;
}

export interface TokenInversion {
  resource: string;
  earlier: { id: string; start: number; token?: number };
  later: { id: string; start: number; token?: number };
  band?: FaultBand;
  /** Masters that restarted empty between the earlier holder's request and the later holder's grant. */
  lostCounters: number[];
  /** A majority lost their counters in between: beyond the documented assumption. */
  expected: boolean;
}

export interface StaleWrite {
  resource: string;
  /** The writer granted earlier, whose write was accepted after a later holder's write. */
  writer: string;
  overtaken: string;
  writerToken?: number;
  overtakenToken?: number;
  band?: FaultBand;
  lostCounters: number[];
  expected: boolean;
}

export interface DeliveryCase {
  id: string;
  client: string;
  resource: string;
  deadline: number;
  abortedAt?: number;
  /** How long after the deadline the signal aborted (or the section went on without an abort). */
  lateMs: number;
  why: string;
}

export interface PhaseCheck {
  phase: string;
  cycles: { total: number; hot: number; cold: number; viaLocked: number; viaUsing: number };
  failures: { busy: number; unavailable: number; other: number; otherMessages: string[] };
  violations: Violation[];
  unexpectedViolations: number;
  /** Sections that went on working after their lock window, while another holder held the lock. */
  workedPastWindow: number;
  fencing: {
    tokensMissing: number;
    pairsChecked: number;
    inversions: TokenInversion[];
    unexpectedInversions: number;
    writesAccepted: number;
    writesRejected: number;
    /** Writes without a token (unfenced holders): only the unfenced log takes them. */
    writesWithoutToken: number;
    writesAfterWindow: number;
    writesAfterWindowRejected: number;
    writesAfterWindowAccepted: number;
    staleAcceptedFenced: StaleWrite[];
    unexpectedStaleFenced: number;
    staleAcceptedUnfenced: number;
    unknownLogEntries: number;
  };
  delivery: {
    /** Locks lost, or whose validity ran out while the holder was still in its section. */
    cases: number;
    /** Sections whose code read `signal.aborted` as false after the deadline. */
    heldReads: number;
    /** Late deliveries excused by a measured stall of that client's event loop. */
    stalled: number;
    onTime: number;
    late: DeliveryCase[];
    /** Minimum margin (deadline − abort) among on-time cases, ms. */
    tightestMarginMs: number | undefined;
    lostOutcomes: number;
  };
  unavailability: { worstGapMs: number; client?: string; from?: number; band?: FaultBand };
  /** Holders' believed deadlines (at the grant, after each extension) against the masters' window ends. */
  claims: {
    grants: number;
    extensions: number;
    /** Claims past the window end by more than CLAIM_TOLERANCE_MS: these fail the run. */
    over: number;
    /** The largest claim − window end, ms (negative: every claim fell short of its window end by that much). */
    largestOverclaimMs: number;
    /** Grants whose quorum needed a master inside its restart's amnesia window (restart guard on). */
    distrustedGrants: number;
  };
  /** Waiters on hot keys while no holder's lock held the key. */
  waiting: {
    /** The bound, ms. */
    bound: number;
    keys: number;
    /** Idle spans checked (per waiting client). */
    checked: number;
    /** The longest idle span, its measured stalls subtracted, ms. */
    longestIdleMs: number;
    /** The most idle time in spans of over half a TTL within any stretch of twice the bound, ms. */
    longestIdleShareMs: number;
    over: number;
    example: string;
    /** Hot acquisitions that gave up busy (retry budget or acquireTimeout spent). */
    giveUps: number;
  };
  liveness: {
    probes: number;
    failed: string[];
    maxLatencyMs: number;
    bound: number;
    overBound: number;
    starved: number;
  };
  keys: { afterClose: number; afterTtl: number; details: string[] };
  /** The independent oracle's own findings (history.ts). */
  oracle: {
    /** Sections whose lock value no master was ever seen to hold. */
    unconfirmed: number;
    /** Sections whose value was held by fewer than a quorum of masters between the first command and the grant. */
    noMajority: number;
    /** Of the others, sections short of a quorum in the history only by masters killed -9 during the attempt (their last MONITOR lines are lost): not counted as failures. */
    noMajorityUnverifiable: number;
    /**
     * Sections short of a quorum only by SET NX votes the replay refused because the key held a value
     * that an eviction notice, stamped after that SET NX and at most the notice lateness after the
     * grant, ended: the eviction may have come first (notices arrive late) and the SET NX found the
     * key free. Not counted as failures.
     */
    noMajorityEvicted: number;
    /** Sections that began after their bound (the library handed out a lock already expired). */
    grantedAfterWindow: number;
    /** Sections that passed their signal check after their bound: explained by a pause/stall of that client, or not. */
    checkAfterWindow: { explained: number; unexplained: number };
    /** Extensions the library reported done that no quorum of masters confirmed. */
    unconfirmedExtensions: number;
    /** Lua deletes/renewals of a key holding another value (a release or extend without the value check). */
    foreignWrites: number;
    /** Foreign writes on a master within two TTLs of its AOF reload (its keys reconstructed by a scan): reported, not failed. */
    foreignAfterReload: number;
    /** Keys of failed attempts left to expire with no cause shown (fault at release time, stall of the attempt's client). */
    orphanKeys: number;
    /** Keys of failed attempts left to expire, excused by a cause shown. */
    orphansExcused: number;
    /** Of those, direct handovers their waiter could not count, left after two claim windows to live out their TTL. */
    handedExcused: number;
    /** Locks lost with no fault and no pause of the holder to explain it. */
    unexplainedLosses: number;
    /** Of those, losses with no extend() attempted for half a TTL before (renewal gone silent): these fail the run. */
    silentLosses: number;
    /** Sections recorded vs reported by each client. */
    records: { reported: number; recorded: number; mismatched: string[] };
    /** Removals of held keys by cause, with how many were from a bare quorum. */
    removals: { cause: string; count: number; bareQuorum: number }[];
    /** Commands the history recorded for this phase's keys. */
    events: number;
  };
  /** Everything that fails the run. */
  problems: Problem[];
}

/** The band a time belongs to: the latest band that started at or before it, up to `tail` ms after it healed. */
export function bandAt(bands: readonly FaultBand[], t: number, tail = 4_000): FaultBand | undefined {
  let found: FaultBand | undefined;
  for (const b of bands) if (b.start - 50 <= t && t <= (b.healedAt || b.end) + tail) found = b;
  return found;
}

/** Masters that restarted empty (lost their data, fencing counters included) in faults that began within [from, to]. */
export function amnesiaBetween(bands: readonly FaultBand[], from: number, to: number): number[] {
  const masters = new Set<number>();
  for (const b of bands) {
    const at = b.killedAt ?? b.start;
    if (at >= from && at <= to) for (const m of b.restarted) masters.add(m);
  }
  return [...masters].sort();
}

function pauseCovering(
  pauses: readonly ClientPause[],
  client: string,
  from: number,
  to: number,
): ClientPause | undefined {
  return pauses.find((p) => p.client === client && p.start <= to && p.end >= from);
}

export function checkPhase(result: PhaseResult): PhaseCheck {
  const { sections, bands } = result;
  const quorum = Math.floor(result.masterCount / 2) + 1;
  const byId = new Map(sections.map((s) => [s.id, s]));
  const byResource = new Map<string, SectionRecord[]>();
  for (const s of sections) {
    const list = byResource.get(s.resource) ?? [];
    list.push(s);
    byResource.set(s.resource, list);
  }
  for (const list of byResource.values()) list.sort((a, b) => a.start - b.start);

  // The independent oracle: each section's bound, from the masters' history.
  const ttl = result.ttl;
  const validity = validityOf(ttl);
  const history: HistoryAnalysis = analyseHistory(result.masterEvents ?? [], result.masterCount);
  const keyOf = (s: SectionRecord) => `lock:${s.resource}`;
  const delayAt = (client: string, t: number) =>
    Math.max(
      0,
      ...bands
        .filter(
          (b) =>
            b.delayMs &&
            (b.clients.length === 0 || b.clients.includes(client)) &&
            b.start - 50 <= t &&
            t <= (b.healedAt || b.end) + 50,
        )
        .map((b) => 2 * b.delayMs!),
    );
  const stalls = result.stalls ?? [];
  // The harness's loop carries every client's traffic (the proxies are the network): a stall of it
  // holds every command in flight, so for a client's commands (not its timers) it counts as a stall
  // on that client's path.
  const clientIds = Object.keys(result.clientCycles ?? {});
  const pathStalls = [
    ...stalls,
    ...(result.harnessStalls ?? []).flatMap((h) => clientIds.map((client) => ({ ...h, client }))),
  ];
  /** The client's commands could move for at most `slack` ms within [from, to]: its or the harness's measured stalls cover the rest. */
  const stalledAcross = (client: string, from: number, to: number, slack: number) =>
    unstalledMs(pathStalls, client, from, to) <= slack;
  const bounds = new Map<string, number>();
  let unconfirmed = 0;
  let noMajority = 0;
  let noMajorityUnverifiable = 0;
  let noMajorityEvicted = 0;
  // Spans in which a master's commands may be missing from the history: from just before it was
  // killed (its last output dies with it) until the MONITOR connection to the restarted server answered.
  const unrecorded: { m: number; from: number; to: number }[] = [];
  for (const w of result.masterEvents ?? []) {
    if (w.kind !== 'wipe') continue;
    const back = (result.masterEvents ?? []).find((e) => e.kind === 'attached' && e.m === w.m && e.t >= w.t);
    unrecorded.push({ m: w.m, from: w.t - 100, to: back?.t ?? Infinity });
  }
  let unconfirmedExtensions = 0;
  // A master killed (back empty or from its AOF) is in its amnesia window from the kill until TTL −
  // drift after it: a key it forgot may live that long elsewhere. With the restart guard on, no vote
  // it casts then may count (the guard waits longer still: the largest TTL plus drift from the new
  // server's start, which comes after the kill).
  const amnesia: { m: number; from: number; to: number }[] = [];
  if (result.spec.guard)
    for (const e of result.masterEvents ?? [])
      if (e.kind === 'wipe') amnesia.push({ m: e.m, from: e.t, to: e.t + validity - CLAIM_TOLERANCE_MS });
  const distrusted = (m: number, t: number) => amnesia.some((a) => a.m === m && a.from <= t && t <= a.to);
  const claimsChecked = { grant: 0, extend: 0 };
  const claims = { over: 0, largestOverclaimMs: -Infinity, example: '' };
  let distrustedGrants = 0;
  let distrustedExample = '';
  const claimBounds = new Map<string, number>();
  for (const s of sections) {
    const first = history.firstSeen.get(s.value);
    if (first === undefined) {
      unconfirmed++;
      bounds.set(s.id, -Infinity);
      claimBounds.set(s.id, -Infinity);
      continue;
    }
    // Masters holding the value when the section began (5 ms: stamps of two clocks). Not "ever since the
    // first sighting": an acquisition retries with the same value, and failed attempts' keys on
    // different masters never made a majority together.
    // A key a fault took between the write and the section's first instruction (evicted, deleted,
    // wiped) still voted.
    const holding = mastersHolding(history, keyOf(s), s.value, s.start - 5, s.start + 5);
    for (const h of history.byValue.get(s.value) ?? [])
      if (h.key === keyOf(s) && h.from <= s.start + 5 && h.to >= s.requestedAt && FAULT_ENDS.has(h.end))
        holding.add(h.m);
    if (holding.size < quorum) {
      // A master killed -9 while the attempt ran may have executed its SET without the MONITOR line
      // ever leaving it (the kill drops the unsent output), and a restarted one runs commands before
      // the MONITOR connection is back: such a vote can be neither shown nor ruled out.
      const silenced = unrecorded.filter((g) => !holding.has(g.m) && g.from <= s.start + 5 && g.to >= s.requestedAt);
      // An evicting master runs the eviction before the command that needs the memory, and its notice
      // comes by pub/sub, stamped on receipt: a SET NX that found the key free there can look refused
      // by a holder whose notice came after it. Its own key may be evicted in turn before any script of
      // its value proves it (history.ts), so such a vote can be neither shown nor ruled out either.
      const hidden = history.refusedNx.filter(
        (r) =>
          r.value === s.value &&
          r.key === keyOf(s) &&
          !holding.has(r.m) &&
          r.t >= s.requestedAt - 5 &&
          r.t <= s.start + 5 &&
          r.heldBy?.end === 'evicted' &&
          r.heldBy.to >= r.t &&
          r.heldBy.to <= s.start + NOTICE_LATENESS_MS,
      );
      const killedVotes = new Set(silenced.map((g) => g.m)).size;
      if (holding.size + killedVotes >= quorum) noMajorityUnverifiable++;
      else if (holding.size + killedVotes + new Set(hidden.map((r) => r.m)).size >= quorum) noMajorityEvicted++;
      else noMajority++;
    }
    // The most the holder can be entitled to: TTL − drift from the write that completed its majority.
    // Of the k masters whose key took the value by the grant (the last write on each before it: an
    // acquisition retries with the same value, and a failed attempt's keys were deleted), written at
    // w1 ≤ … ≤ wk, a quorum holds it only until w(k−quorum+1) + TTL. On the plain path those writes fall
    // inside the winning attempt, after its start; a handed-over key is written by the releaser's
    // script, after the waiter's ticket scripts (which carry its value) ran: first sightings are no anchor.
    // A ticket script that finds the value already there renews it with the full TTL (`PEXPIRE`): on
    // that master the key then lives from that renewal, the latest write before the grant.
    const writes = new Map<number, number>();
    for (const h of history.byValue.get(s.value) ?? [])
      if (h.key === keyOf(s) && h.from <= s.start + 5) {
        const renewed = h.renewals.filter((t) => t <= s.start + 5);
        writes.set(h.m, Math.max(writes.get(h.m) ?? -Infinity, h.from, ...renewed));
      }
    const w = [...writes.values()].sort((a, b) => a - b);
    const anchor = w.length >= quorum ? w[w.length - quorum] : first;
    let bound = anchor - delayAt(s.client, anchor) + validity;
    for (const ext of s.extensions ?? []) {
      if (ext.at >= bound) break; // a lapsed lock is never revived
      const renewedBy = mastersRenewing(history, keyOf(s), s.value, ext.at, ext.at + ttl).size;
      if (renewedBy >= quorum) bound = Math.max(bound, ext.at + validity);
      else if (ext.ok) unconfirmedExtensions++;
    }
    bounds.set(s.id, bound);

    // The holder's claims against the masters' history (no delay allowance: a correct library counts
    // validity from before its round's writes, so its deadline is never past the write that completed
    // its quorum + TTL − drift). With the restart guard on, a vote written by a master inside its
    // amnesia window does not count (the guard keeps it out for a TTL after the restart).
    const trustedW = [...writes].filter(([m, t]) => !distrusted(m, t)).map(([, t]) => t);
    trustedW.sort((a, b) => a - b);
    let claimBound = trustedW.length >= quorum ? trustedW[trustedW.length - quorum] + validity : -Infinity;
    if (w.length >= quorum && trustedW.length < quorum) {
      distrustedGrants++;
      distrustedExample ||= `${s.id} on ${s.resource}: ${w.length} masters held its value at the grant, only ${trustedW.length} outside a restart's amnesia window`;
    }
    const judge = (kind: 'grant' | 'extend', deadline: number | undefined, at: number) => {
      if (deadline === undefined || claimBound === -Infinity) return;
      claimsChecked[kind]++;
      const over = deadline - claimBound;
      if (over > claims.largestOverclaimMs) claims.largestOverclaimMs = over;
      if (over > CLAIM_TOLERANCE_MS) {
        claims.over++;
        claims.example ||= `${s.id} on ${s.resource} (${kind}${s.value.includes('.') ? ', ticketed value' : ''}): believed its lock valid until ${(deadline - result.startedAt).toFixed(1)} ms into the phase, the masters' history gives ${(claimBound - result.startedAt).toFixed(1)} (over by ${over.toFixed(1)} ms; claimed at ${(at - result.startedAt).toFixed(1)})`;
      }
    };
    if (w.length >= quorum) judge('grant', s.claimedDeadline, s.start);
    for (const ext of s.extensions ?? []) {
      if (!ext.ok || ext.doneAt === undefined) continue;
      // Each master's renewal of the value by this call (PEXPIRE, or a repair's SET): the latest in it.
      const renewed = new Map<number, number>();
      for (const h of history.byValue.get(s.value) ?? []) {
        if (h.key !== keyOf(s)) continue;
        for (const t of [h.from, ...h.renewals])
          if (t >= ext.at - 5 && t <= ext.doneAt + 5 && !distrusted(h.m, t))
            renewed.set(h.m, Math.max(renewed.get(h.m) ?? -Infinity, t));
      }
      const r = [...renewed.values()].sort((a, b) => a - b);
      if (r.length >= quorum) claimBound = Math.max(claimBound, r[r.length - quorum] + validity);
      judge('extend', ext.deadline, ext.doneAt);
    }
    claimBounds.set(s.id, claimBound);
  }
  const oracleEnd = (s: SectionRecord) => Math.min(s.end, bounds.get(s.id)!);

  /**
   * The documented cause of a second holder, if the masters' history shows one: `a`'s value lost a key
   * by the fault before `s` began. Called both ways: the holder whose key went may be the one whose
   * section began later (a fenced grant begins after its fencing round, an unfenced one at once).
   */
  const causeOf = (a: SectionRecord, s: SectionRecord): string | undefined => {
    const from = history.firstSeen.get(a.value) ?? a.requestedAt;
    for (const r of history.removals) {
      if (r.key !== keyOf(a) || r.value !== a.value || r.t < from || r.t > s.start) continue;
      if (
        (r.cause === 'nemesis-del' || r.cause === 'evicted' || r.cause === 'clock-step') &&
        r.heldOnBefore <= quorum
      ) {
        return `${a.id} held the key on exactly ${r.heldOnBefore} of ${result.masterCount} masters (a bare quorum) and m${r.m + 1} lost it (${r.cause === 'evicted' ? 'evicted' : r.cause === 'clock-step' ? "expired early: that master's clock stepped forward" : 'deleted: clock-jump stand-in'})`;
      }
      if (r.cause === 'wiped' && !result.spec.guard)
        return `restart guard off: m${r.m + 1}, which held ${a.id}'s key, restarted empty`;
    }
    return undefined;
  };

  // Mutual exclusion: two holders' independently bounded windows overlap while both run.
  const violations: Violation[] = [];
  let workedPastWindow = 0;
  for (const [resource, list] of byResource) {
    const active: SectionRecord[] = [];
    for (const s of list) {
      for (let i = active.length - 1; i >= 0; i--) if (active[i].end <= s.start) active.splice(i, 1);
      for (const a of active) {
        const aEnd = oracleEnd(a);
        const sEnd = oracleEnd(s);
        if (aEnd > s.start && sEnd > s.start) {
          const cause = causeOf(a, s) ?? causeOf(s, a);
          violations.push({
            resource,
            first: { id: a.id, start: a.start, windowEnd: aEnd, token: a.fencingToken },
            second: { id: s.id, start: s.start, windowEnd: sEnd, token: s.fencingToken },
            overlapMs: Math.min(aEnd, sEnd) - s.start,
            band: bandAt(bands, s.start),
            cause,
            expected: cause !== undefined,
          });
        } else if (a.end > s.start) workedPastWindow++;
      }
      active.push(s);
    }
  }

  // Work past the window: a grant already expired, or a signal check passed after the bound.
  const stoppedAcross = (client: string, from: number, to: number) =>
    result.pauses.find((p) => p.client === client && p.start <= to && p.end >= from);
  let grantedAfterWindow = 0;
  let lateGrant = '';
  const checkAfterWindow = { explained: 0, unexplained: 0 };
  for (const s of sections) {
    const bound = bounds.get(s.id)!;
    if (bound === -Infinity) continue;
    if (s.start > bound + 1) {
      grantedAfterWindow++;
      lateGrant ||= `first: ${s.id} on ${s.resource}, requested at ${s.requestedAt.toFixed(1)}, granted at ${s.start.toFixed(1)}, bound ${bound.toFixed(1)} ms`;
    } else if (!s.abortedAtCheck && s.checkedAt > bound + 1) {
      if (stoppedAcross(s.client, bound - 100, s.checkedAt)) checkAfterWindow.explained++;
      else checkAfterWindow.unexplained++;
    }
  }

  // Keys of failed attempts left to expire (a correct client deletes them on every master), outside faults.
  const sectionValues = new Set(sections.map((s) => s.value));
  // Keys of the workload's resources only (shared-lock helpers such as `…:writer-waiting` share the prefix).
  const isLockKey = (key: string) => /^lock:[^:]+:(hot|cold):\d+$/.test(key);
  // A key a failed attempt left to expire is excused only by its cause, judged when the release was
  // due, not when the key was set: the master was cut off, paused or partitioned when the value was
  // deleted on the others, or the attempt's client (each client whose acquire on that resource spanned
  // the key's SET) had its event loop measured stalled for all but one command timeout of the key's life.
  const releasedAt = new Map<string, number>();
  for (const e of result.masterEvents ?? []) {
    if (e.kind === 'cmd' && e.lua && e.sv !== undefined && e.args[0].toLowerCase() === 'del')
      releasedAt.set(e.sv, Math.min(releasedAt.get(e.sv) ?? Infinity, e.t));
  }
  /** A fault on the path from one of `owners` to master `m` during [from, to]: the master itself, or that client's links. */
  // A restarted master is reached again only after each client reconnects (the library's back-off is
  // capped at 1 s; an app-supplied client re-sends commands that were in flight): a second more.
  const faultOnPath = (m: number, owners: string[], from: number, to: number) =>
    bands.some(
      (b) =>
        b.start - 50 <= to &&
        from <= (b.healedAt || b.end || Infinity) + (b.restarted.length ? 1_000 : 50) &&
        (b.clients.length === 0 ? b.masters.includes(m) : owners.some((c) => b.clients.includes(c))),
    );
  const ownersOf = (key: string, t: number): string[] => [
    ...new Set([
      ...result.failures
        .filter((f) => `lock:${f.resource}` === key && f.requestedAt - 5 <= t && t <= f.failedAt + 5)
        .map((f) => f.client),
      ...sections
        .filter((x) => `lock:${x.resource}` === key && x.requestedAt - 5 <= t && t <= x.start + 5)
        .map((x) => x.client),
    ]),
  ];
  // A direct handover that its waiter could not count (the release reached fewer than a quorum, or
  // its messages and replies were lost) is by design renewed by the waiter's attempts for at most
  // two claim windows after it, then lives out its TTL (docs/handoff.md, lib/kinds/mutex/handoff.ts
  // `acquire`). The claim window is the library's from the run's settings: retry delay + jitter +
  // commandTimeout + 100 ms. Excused only when the masters' history shows exactly that: the value
  // was set on that master by another value's script (a release, a withdrawal or a yield handing it
  // over), no renewal there came later than two claim windows after it, and no waiter that could
  // own it gave up (passing a handed value on) more than a command timeout before it expired.
  const claimWindow = (result.retryDelay ?? 0) + (result.retryJitter ?? 0) + result.commandTimeout + 100;
  const handedAt = new Map<string, number[]>();
  for (const e of result.masterEvents ?? []) {
    if (e.kind !== 'cmd' || !e.lua || e.args[0].toLowerCase() !== 'set' || e.sv === undefined) continue;
    if (e.sv === e.args[2] || e.args[2].startsWith('~')) continue;
    // A handover's SET never has NX; the batched plain path's acquire does (its script's ARGV[1] is an op).
    if (e.args.some((a) => a.toUpperCase() === 'NX')) continue;
    const at = `${e.m} ${e.args[1]} ${e.args[2]}`;
    handedAt.set(at, [...(handedAt.get(at) ?? []), e.t]);
  }
  // A direct ticket's value begins with its order and its id, whose first 8 characters are its
  // instance's tag (lib/kinds/mutex/handoff.ts `handoverValue`): the client that owns a handed value.
  const tagOf = (value: string) => /^\d+\.([\w-]{8})/.exec(value)?.[1];
  const clientOfTag = new Map<string, string>();
  for (const x of sections) {
    const tag = tagOf(x.value);
    if (tag) clientOfTag.set(tag, x.client);
  }
  const handedUncounted = (h: Holding, candidates: string[]): boolean => {
    const hand = handedAt.get(`${h.m} ${h.key} ${h.value}`)?.find((t) => Math.abs(t - h.from) < 1);
    if (hand === undefined) return false;
    const tag = tagOf(h.value);
    const owners = tag && clientOfTag.has(tag) ? [clientOfTag.get(tag)!] : candidates;
    if (h.renewals.some((t) => t > hand + 2 * claimWindow + 5)) return false;
    return !result.failures.some(
      (f) =>
        `lock:${f.resource}` === h.key &&
        owners.includes(f.client) &&
        f.requestedAt <= hand &&
        f.failedAt + result.commandTimeout < h.to,
    );
  };
  let orphanKeys = 0;
  let orphansExcused = 0;
  let handedExcused = 0;
  let orphanExample = '';
  for (const [value, holdings] of history.byValue) {
    if (sectionValues.has(value)) continue;
    for (const h of holdings) {
      if (h.end !== 'expired' || !isLockKey(h.key) || h.from >= result.runTo) continue;
      const rel = releasedAt.get(value);
      const owners = ownersOf(h.key, h.from);
      const ownerStalled =
        owners.length > 0 && owners.every((c) => stalledAcross(c, h.from, h.to, result.commandTimeout));
      const pausedOwner =
        owners.length > 0 &&
        owners.every((c) => result.pauses.some((p) => p.client === c && p.start <= h.to && p.end >= h.from));
      if (faultOnPath(h.m, owners, rel ?? h.from, rel ?? h.to) || ownerStalled || pausedOwner) {
        orphansExcused++;
        continue;
      }
      if (handedUncounted(h, owners)) {
        orphansExcused++;
        handedExcused++;
        continue;
      }
      orphanKeys++;
      orphanExample ||= `e.g. ${h.key} on m${h.m + 1}, set ${(h.from - result.startedAt).toFixed(0)} ms into the phase, on ${holdings.length} master(s) in all, ${rel === undefined ? 'released on none' : `released on the others ${(rel - result.startedAt).toFixed(0)} ms into the phase`}; attempt by ${owners.join(', ') || 'no recorded client'}`;
    }
  }

  // Locks lost with nothing to explain it. A loss with renewal attempts just before it is reported
  // (a loaded machine can starve them); a loss with no renewal attempted for half a TTL fails the run:
  // renewal must keep trying while the lock is held.
  let unexplainedLosses = 0;
  let silentLosses = 0;
  for (const s of sections) {
    if (s.outcome !== 'lost' && s.abortedAt === undefined) continue;
    if (s.settledAt > result.runTo) continue; // shutdown
    const until = s.abortedAt ?? s.settledAt;
    if (bands.some((b) => b.start - 200 <= until && s.start <= (b.healedAt || b.end || Infinity) + 2 * ttl)) continue;
    if (stoppedAcross(s.client, s.start - ttl, until)) continue;
    unexplainedLosses++;
    const lastTry = Math.max(s.start, ...(s.extensions ?? []).map((e) => e.at));
    // Time the holder's loop could run (its measured stalls subtracted): renewal is silent only if that exceeds half a TTL.
    if (unstalledMs(stalls, s.client, lastTry, until) > ttl / 2) silentLosses++;
  }

  // Every section each client ran was recorded.
  const recordedBy = new Map<string, number>();
  for (const s of sections) recordedBy.set(s.client, (recordedBy.get(s.client) ?? 0) + 1);
  const mismatched = Object.entries(result.clientCycles ?? {})
    .filter(([c, n]) => (recordedBy.get(c) ?? 0) !== n)
    .map(([c, n]) => `${c}: reported ${n}, recorded ${recordedBy.get(c) ?? 0}`);
  const removalsByCause = new Map<string, { cause: string; count: number; bareQuorum: number }>();
  for (const r of history.removals) {
    const e = removalsByCause.get(r.cause) ?? { cause: r.cause, count: 0, bareQuorum: 0 };
    e.count++;
    if (r.heldOnBefore <= quorum) e.bareQuorum++;
    removalsByCause.set(r.cause, e);
  }

  // Fencing tokens: strictly increasing in section-start order, per resource.
  let tokensMissing = 0;
  let pairsChecked = 0;
  const inversions: TokenInversion[] = [];
  for (const [resource, list] of byResource) {
    let prev: SectionRecord | undefined;
    for (const s of list) {
      if (s.fencingToken === undefined) {
        if (s.fenced) tokensMissing++;
        continue;
      }
      if (prev) {
        pairsChecked++;
        if (!(s.fencingToken > prev.fencingToken!)) {
          const lostCounters = amnesiaBetween(bands, prev.requestedAt, s.start);
          inversions.push({
            resource,
            earlier: { id: prev.id, start: prev.start, token: prev.fencingToken },
            later: { id: s.id, start: s.start, token: s.fencingToken },
            band: bandAt(bands, s.start),
            lostCounters,
            expected: lostCounters.length > 0, // docs/fencing.md: tokens need the masters to keep their counters
          });
        }
      }
      prev = s;
    }
  }

  // The register: accepted writes must follow the grant order.
  const staleAcceptedFenced: StaleWrite[] = [];
  let staleAcceptedUnfenced = 0;
  let unknownLogEntries = 0;
  for (const [resource, logs] of result.registerLogs) {
    let latest: SectionRecord | undefined;
    for (const entry of logs.fenced) {
      const s = byId.get(entry.section);
      if (!s) {
        unknownLogEntries++;
        continue;
      }
      if (latest && s.start < latest.start) {
        const lostCounters = amnesiaBetween(bands, s.requestedAt, latest.start);
        staleAcceptedFenced.push({
          resource,
          writer: s.id,
          overtaken: latest.id,
          writerToken: s.fencingToken,
          overtakenToken: latest.fencingToken,
          band: bandAt(bands, latest.start),
          lostCounters,
          expected: lostCounters.length > 0, // docs/fencing.md: tokens need the masters to keep their counters
        });
      } else latest = s;
    }
    let latestUnfenced: SectionRecord | undefined;
    for (const id of logs.unfenced) {
      const s = byId.get(id);
      if (!s) continue;
      if (latestUnfenced && s.start < latestUnfenced.start) staleAcceptedUnfenced++;
      else latestUnfenced = s;
    }
  }
  let writesAfterWindow = 0;
  let writesAfterWindowRejected = 0;
  let writesAfterWindowAccepted = 0;
  for (const s of sections) {
    if (s.wroteAt !== undefined && s.wroteAt > oracleEnd(s)) {
      writesAfterWindow++;
      if (s.commit === 'rejected') writesAfterWindowRejected++;
      if (s.commit === 'accepted') writesAfterWindowAccepted++;
    }
  }

  // Lock-loss delivery.
  const late: DeliveryCase[] = [];
  let cases = 0;
  let onTime = 0;
  let tightest: number | undefined;
  for (const s of sections) {
    const aborted = s.abortedAt !== undefined;
    const deadline = aborted ? (s.deadlineAtAbort ?? s.deadline) : s.deadline;
    const ranPast = !aborted && s.end > s.deadline + 0.5;
    if (!aborted && !ranPast) continue;
    cases++;
    if (aborted && s.abortedAt! <= deadline) {
      onTime++;
      const margin = deadline - s.abortedAt!;
      tightest = tightest === undefined ? margin : Math.min(tightest, margin);
      continue;
    }
    const until = aborted ? s.abortedAt! : s.end;
    const pause = pauseCovering(result.pauses, s.client, deadline - 50, until);
    // Its own loop stalled from the deadline to the delivery (5 ms of slack): no timer could fire sooner.
    const free = unstalledMs(stalls, s.client, deadline, until);
    const why = pause
      ? `the client process was stopped (SIGSTOP${pause.targeted ? ' between its check and its write' : ''}) from ${(pause.start - result.startedAt).toFixed(0)} to ${(pause.end - result.startedAt).toFixed(0)} ms into the phase, across the deadline: no timer can run in a stopped process`
      : free <= 5
        ? `stalled: that client's event loop was measured stalled for all but ${free.toFixed(1)} ms of the ${(until - deadline).toFixed(1)} ms between the deadline and the delivery (no timer can fire in a stalled loop)`
        : aborted
          ? `unexplained: the signal aborted ${(s.abortedAt! - deadline).toFixed(1)} ms after the deadline (timer late: event loop or CPU starvation?)`
          : 'unexplained: the section ran past the deadline and the signal never aborted';
    late.push({
      id: s.id,
      client: s.client,
      resource: s.resource,
      deadline,
      abortedAt: s.abortedAt,
      lateMs: until - deadline,
      why,
    });
  }

  // Unavailability: the longest time any client went without a grant.
  const unavailability: PhaseCheck['unavailability'] = { worstGapMs: 0 };
  const starts = new Map<string, number[]>();
  for (const s of sections) starts.set(s.client, [...(starts.get(s.client) ?? []), s.start]);
  for (const [client, list] of starts) {
    const times = [
      result.runFrom,
      ...list.filter((t) => t >= result.runFrom && t <= result.runTo).sort((a, b) => a - b),
      result.runTo,
    ];
    for (let i = 1; i < times.length; i++) {
      const gap = times[i] - times[i - 1];
      if (gap > unavailability.worstGapMs)
        Object.assign(unavailability, {
          worstGapMs: gap,
          client,
          from: times[i - 1],
          band: bandAt(bands, times[i - 1] + gap / 2),
        });
    }
  }

  // Liveness after healing.
  const failed: string[] = [];
  let maxLatencyMs = 0;
  let overBound = 0;
  // A probe that failed is excused only when its client's loop never ran long enough for one whole
  // attempt (a command timeout to decide, a retry delay, a command timeout for the next): its measured
  // stalls broke every such stretch, so the replies were read too late (CPU starvation of that process).
  const attemptSpan = 2 * result.commandTimeout + 200;
  let starvedProbes = 0;
  for (const p of result.probes) {
    if (p.grantedAt === undefined) {
      if (p.endedAt !== undefined && longestUnstalledMs(pathStalls, p.client, p.startedAt, p.endedAt) < attemptSpan)
        starvedProbes++;
      else failed.push(`${p.client} round ${p.round}: ${p.error}`);
      continue;
    }
    const healed = bands.find((b) => b.round === p.round)?.healedAt ?? p.startedAt;
    const latency = p.grantedAt - healed;
    maxLatencyMs = Math.max(maxLatencyMs, latency);
    // Over the bound only by time its path could not run: the client's or the harness's measured
    // stalls cover the excess (the bound counts time in which the library could act).
    if (latency > result.bound) {
      if (unstalledMs(pathStalls, p.client, healed, p.grantedAt) <= result.bound) starvedProbes++;
      else overBound++;
    }
  }

  const afterClose = result.keysLeft.filter((k) => k.when === 'after-close');
  const afterTtl = result.keysLeft.filter((k) => k.when === 'after-ttl');
  const owner = (value: string | null) => sections.find((s) => s.value === value);
  const details = result.keysLeft.map((k) => {
    const s = owner(k.value);
    return `${k.when}: m${k.master + 1} ${k.key} pttl ${k.pttl} ms, ${s ? `section ${s.id} (outcome ${s.outcome}, settled ${(s.settledAt - result.startedAt).toFixed(0)} ms into the phase)` : 'value of no recorded section (a failed attempt?)'}`;
  });

  // Waiting: on every hot key, the time a waiter waits while no holder's lock holds the key (free on a
  // quorum, reserved for a ticket, or held by a value whose holder has settled or whose window the
  // masters' history has ended) is bounded by the settings: a holder gone silent keeps its key a TTL,
  // then a retry delay (with jitter) and one round (commandTimeout) hand it on, plus a reconnect
  // allowance. The waiter's own measured stalls and the harness's (which carry its traffic) are
  // subtracted. A waiter is excused while a fault touches it (a band naming it, or one on a quorum of
  // the masters) and for two TTLs and a second after it healed (the restart guard's window).
  const idleBound = ttl + (result.retryDelay ?? 0) + (result.retryJitter ?? 0) + result.commandTimeout + 1_000;
  const waiting = {
    bound: idleBound,
    keys: 0,
    checked: 0,
    longestIdleMs: 0,
    longestIdleShareMs: 0,
    over: 0,
    example: '',
    giveUps: result.failures.filter((f) => f.hot && f.kind === 'busy').length,
  };
  // A fault on a minority of masters (no client named) excuses nobody: a quorum still answers, and a
  // waiter must still get a free key.
  const excusedFor = (client: string) =>
    bands
      .filter((b) =>
        b.clients.length === 0 ? b.masters.length === 0 || b.masters.length >= quorum : b.clients.includes(client),
      )
      .map((b) => [b.start - 50, (b.healedAt || b.end || Infinity) + 2 * ttl + 1_000] as const);
  for (const [resource, list] of byResource) {
    if (!list[0]?.hot) continue;
    waiting.keys++;
    const held = list.map(
      (x) => [x.start, Math.min(x.settledAt, Math.max(claimBounds.get(x.id)!, bounds.get(x.id)!))] as const,
    );
    const waits = new Map<string, [number, number][]>();
    for (const x of list) waits.set(x.client, [...(waits.get(x.client) ?? []), [x.requestedAt, x.start]]);
    for (const f of result.failures)
      if (f.resource === resource) waits.set(f.client, [...(waits.get(f.client) ?? []), [f.requestedAt, f.failedAt]]);
    for (const [client, spans] of waits) {
      // A worker that gave up asks again at once: its waits join across that instant (100 ms).
      const waited = union(
        spans.map(([a, b]) => [Math.max(a, result.runFrom), Math.min(b, result.runTo)]),
        100,
      );
      const gaps = subtract(waited, [...held, ...excusedFor(client)]);
      const idles = gaps.map(([a, b]) => ({ a, b, idle: unstalledMs(pathStalls, client, a, b) }));
      for (const { a, b, idle } of idles) {
        waiting.checked++;
        if (idle > waiting.longestIdleMs) waiting.longestIdleMs = idle;
        if (idle > idleBound) {
          waiting.over++;
          waiting.example ||= `${client} waited on ${resource} from ${(a - result.startedAt).toFixed(0)} to ${(b - result.startedAt).toFixed(0)} ms into the phase (${idle.toFixed(0)} ms unstalled) with no holder's lock on the key`;
        }
      }
      // A key stranded but granted now and then (a dead ticket served once per TTL) leaves gaps each
      // under the bound: idle spans of over half a TTL (a handover takes milliseconds, a slow first
      // waiter's claim about one round and a retry delay) may not add up to more than the bound
      // within any stretch of twice the bound.
      const long = idles.filter((g) => g.idle > ttl / 2);
      for (let i = 0; i < long.length; i++) {
        let sum = 0;
        for (let j = i; j < long.length && long[j].a < long[i].a + 2 * idleBound; j++)
          sum += unstalledMs(pathStalls, client, long[j].a, Math.min(long[j].b, long[i].a + 2 * idleBound));
        if (sum > waiting.longestIdleShareMs) waiting.longestIdleShareMs = sum;
        if (sum > idleBound && long[i].idle <= idleBound) {
          waiting.over++;
          waiting.example ||= `${client} waited on ${resource} with no holder's lock on the key for ${sum.toFixed(0)} ms of the ${(2 * idleBound).toFixed(0)} from ${(long[i].a - result.startedAt).toFixed(0)} ms into the phase, in spans of over half a TTL`;
          break;
        }
      }
    }
  }

  const otherFailures = result.failures.filter((f) => f.kind === 'other');
  const unexpectedViolations = violations.filter((v) => !v.expected);
  const unexpectedStale = staleAcceptedFenced.filter((w) => !w.expected);
  const unexpectedInv = inversions.filter((i) => !i.expected);
  // A timer cannot fire at an exact instant: up to 5 ms past the deadline is reported, not failed.
  const lateUnexplained = late.filter((l) => l.why.startsWith('unexplained') && l.lateMs > 5);
  // What the code observes: `signal.aborted` read false after the deadline (never excused: the read
  // itself proves the loop ran, and the library checks the deadline on read).
  const heldReads = sections.filter((s) => (s.heldReadAfterDeadlineMs ?? 0) > 1);
  const problems: Problem[] = [];
  const fail = (check: string, count: number, detail: string) => {
    if (count > 0) problems.push({ check, count, detail });
  };
  const v0 = unexpectedViolations[0];
  fail(
    'mutual exclusion',
    unexpectedViolations.length,
    v0
      ? `e.g. ${v0.resource}: ${v0.first.id} and ${v0.second.id} overlapped ${v0.overlapMs.toFixed(1)} ms, no documented cause`
      : '',
  );
  fail(
    'grant without a majority',
    noMajority,
    'a section ran under a lock value that fewer than a quorum of masters ever held',
  );
  fail('grant never seen by a master', unconfirmed, 'a section ran under a lock value no master was seen to hold');
  fail(
    'granted after its window',
    grantedAfterWindow,
    `the library handed out a lock whose independently bounded validity had already ended (${lateGrant})`,
  );
  fail(
    'work past the window',
    checkAfterWindow.unexplained,
    'a client that was not paused passed its signal check after its window',
  );
  fail(
    'claim past the window',
    claims.over,
    `a holder believed a deadline later than the masters' history allows (${claims.example})`,
  );
  fail(
    'grant counted a distrusted master',
    distrustedGrants,
    `a quorum only with a master inside its restart's amnesia window (${distrustedExample})`,
  );
  fail(
    'waiter idle past its bound',
    waiting.over,
    `bound ${idleBound} ms (TTL + retry delay + jitter + commandTimeout + 1 s): ${waiting.example}`,
  );
  fail(
    'extension not confirmed by the masters',
    unconfirmedExtensions,
    'extend() resolved but no quorum of masters renewed the value',
  );
  // A master restarted from its AOF comes back with what its last write to the file held, read by a
  // scan after it answers: the model of its keys is a reconstruction there until every reloaded key
  // could have expired (reloaded keys were seen with more TTL left than they had at the kill: 750–900 ms
  // of a 1 s TTL 100–200 ms after the restart; two TTLs covers it). A foreign write on it in that span is reported apart, not failed.
  const aofReloads = (result.masterEvents ?? []).filter((e) => e.kind === 'cmd' && e.reload === true);
  const reconstructed = (m: number, t: number) => aofReloads.some((e) => e.m === m && e.t <= t && t - e.t <= 2 * ttl);
  const foreignAll = history.foreignWrites.filter((w) => isLockKey(w.key));
  const foreignWrites = foreignAll.filter((w) => !reconstructed(w.m, w.t));
  const foreignAfterReload = foreignAll.length - foreignWrites.length;
  const f0 = foreignWrites[0];
  fail(
    "release or extend of another holder's key",
    foreignWrites.length,
    `a script deleted or renewed a key that held another value (first: ${f0?.op} of ${f0?.key} on master ${f0?.m} at ${f0?.t.toFixed(1)} ms, holding ${f0?.value}, by a script with arguments ${JSON.stringify(f0?.scriptArgs ?? [f0?.scriptValue])})`,
  );
  fail(
    'failed attempt left its keys',
    orphanKeys,
    `keys of a failed attempt expired on a master instead of being deleted, with no cause shown (${orphanExample})`,
  );
  fail(
    'lock lost with renewal silent',
    silentLosses,
    `a lock was lost with no fault, no pause of its holder, and no extend() attempted for half a TTL before (${unexplainedLosses} losses without a fault in all)`,
  );
  fail('late lock-loss delivery', lateUnexplained.length, lateUnexplained[0]?.why ?? '');
  fail(
    'signal read as not aborted after the deadline',
    heldReads.length,
    heldReads[0]
      ? `e.g. ${heldReads[0].id}: read false ${heldReads[0].heldReadAfterDeadlineMs!.toFixed(1)} ms after its deadline`
      : '',
  );
  fail(
    'stale fenced write accepted',
    unexpectedStale.length,
    "the fenced register accepted a write after a later holder's, no counter lost",
  );
  fail(
    'fencing-token inversion',
    unexpectedInv.length,
    'a later holder got a token not above the earlier one, no counter lost',
  );
  fail('fencing tokens missing', tokensMissing, 'a fenced section had no token');
  fail('liveness probe failed', failed.length, failed[0] ?? '');
  fail('liveness probe over its bound', overBound, `bound ${result.bound} ms after healing`);
  fail('records lost', mismatched.length, mismatched.join('; '));
  fail('unknown register entries', unknownLogEntries, 'the register logged a section no client recorded');
  fail(
    'lock keys left after release',
    afterTtl.length,
    afterTtl.length ? (details.find((d) => d.startsWith('after-ttl')) ?? '') : '',
  );
  fail('unexpected acquisition errors', otherFailures.length, otherFailures[0]?.message ?? '');
  return {
    phase: result.phase,
    cycles: {
      total: sections.length,
      hot: sections.filter((s) => s.hot).length,
      cold: sections.filter((s) => !s.hot).length,
      viaLocked: sections.filter((s) => s.via === 'locked').length,
      viaUsing: sections.filter((s) => s.via === 'using').length,
    },
    failures: {
      busy: result.failures.filter((f) => f.kind === 'busy').length,
      unavailable: result.failures.filter((f) => f.kind === 'unavailable').length,
      other: otherFailures.length,
      otherMessages: [...new Set(otherFailures.map((f) => f.message))].slice(0, 5),
    },
    violations,
    unexpectedViolations: unexpectedViolations.length,
    workedPastWindow,
    fencing: {
      tokensMissing,
      pairsChecked,
      inversions,
      unexpectedInversions: inversions.filter((i) => !i.expected).length,
      writesAccepted: sections.filter((s) => s.commit === 'accepted').length,
      writesRejected: sections.filter((s) => s.commit === 'rejected').length,
      writesWithoutToken: sections.filter((s) => s.commit === 'unfenced').length,
      writesAfterWindow,
      writesAfterWindowRejected,
      writesAfterWindowAccepted,
      staleAcceptedFenced,
      unexpectedStaleFenced: staleAcceptedFenced.filter((w) => !w.expected).length,
      staleAcceptedUnfenced,
      unknownLogEntries,
    },
    delivery: {
      cases,
      heldReads: heldReads.length,
      stalled: late.filter((l) => l.why.startsWith('stalled')).length,
      onTime,
      late,
      tightestMarginMs: tightest,
      lostOutcomes: sections.filter((s) => s.outcome === 'lost').length,
    },
    unavailability,
    claims: {
      grants: claimsChecked.grant,
      extensions: claimsChecked.extend,
      over: claims.over,
      largestOverclaimMs: claims.largestOverclaimMs,
      distrustedGrants,
    },
    waiting,
    liveness: {
      probes: result.probes.length,
      failed,
      maxLatencyMs,
      bound: result.bound,
      overBound,
      starved: starvedProbes,
    },
    keys: { afterClose: afterClose.length, afterTtl: afterTtl.length, details },
    oracle: {
      unconfirmed,
      noMajority,
      noMajorityUnverifiable,
      noMajorityEvicted,
      grantedAfterWindow,
      checkAfterWindow,
      unconfirmedExtensions,
      foreignWrites: foreignWrites.length,
      foreignAfterReload,
      orphanKeys,
      orphansExcused,
      handedExcused,
      unexplainedLosses,
      silentLosses,
      records: {
        reported: Object.values(result.clientCycles ?? {}).reduce((a, b) => a + b, 0),
        recorded: sections.length,
        mismatched,
      },
      removals: [...removalsByCause.values()],
      events: (result.masterEvents ?? []).length,
    },
    problems,
  };
}

/** The union of intervals, sorted and merged (also across gaps of at most `bridge` ms). */
export function union(spans: readonly (readonly [number, number])[], bridge = 0): [number, number][] {
  const sorted = spans.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + bridge) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** `spans` (merged) less every interval of `cuts`. */
export function subtract(
  spans: readonly (readonly [number, number])[],
  cuts: readonly (readonly [number, number])[],
): [number, number][] {
  const holes = union(cuts);
  const out: [number, number][] = [];
  for (const [a0, b] of spans) {
    let a = a0;
    for (const [c, d] of holes) {
      if (d <= a) continue;
      if (c >= b) break;
      if (c > a) out.push([a, c]);
      a = Math.max(a, d);
      if (a >= b) break;
    }
    if (a < b) out.push([a, b]);
  }
  return out;
}
