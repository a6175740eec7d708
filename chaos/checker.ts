/**
 * The checker: pure functions over one phase's history. All times are on the shared clock.
 *
 * A holder's lock window is [start, min(end, abortedAt, deadline)]: from the first instruction under
 * the lock to the last, cut short when the library said the lock was lost (the signal aborted) or when
 * the validity the library computed ran out. Mutual exclusion is violated when two windows on one
 * resource overlap: the lock service granted a lock that another holder was still entitled to trust.
 * A holder that keeps working after its window (a paused process) is not a lock-service violation;
 * it is the stale-writer case that fencing must catch, and is counted separately.
 */
import type { PhaseResult } from './phase.js';
import type { ClientPause, FaultBand, SectionRecord } from './types.js';

export const windowEnd = (s: SectionRecord): number => Math.min(s.end, s.abortedAt ?? Infinity, s.deadline);

export interface Violation {
  resource: string;
  first: { id: string; start: number; windowEnd: number; token?: number };
  second: { id: string; start: number; windowEnd: number; token?: number };
  overlapMs: number;
  band?: FaultBand;
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
    onTime: number;
    late: DeliveryCase[];
    /** Minimum margin (deadline − abort) among on-time cases, ms. */
    tightestMarginMs: number | undefined;
    lostOutcomes: number;
  };
  unavailability: { worstGapMs: number; client?: string; from?: number; band?: FaultBand };
  liveness: { probes: number; failed: string[]; maxLatencyMs: number; bound: number; overBound: number };
  keys: { afterClose: number; afterTtl: number; details: string[] };
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

function pauseCovering(pauses: readonly ClientPause[], client: string, from: number, to: number): ClientPause | undefined {
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

  // Mutual exclusion.
  const violations: Violation[] = [];
  let workedPastWindow = 0;
  for (const [resource, list] of byResource) {
    const active: SectionRecord[] = [];
    for (const s of list) {
      for (let i = active.length - 1; i >= 0; i--) if (active[i].end <= s.start) active.splice(i, 1);
      for (const a of active) {
        const aEnd = windowEnd(a);
        const sEnd = windowEnd(s);
        if (aEnd > s.start && sEnd > s.start) {
          const band = bandAt(bands, s.start);
          violations.push({
            resource,
            first: { id: a.id, start: a.start, windowEnd: aEnd, token: a.fencingToken },
            second: { id: s.id, start: s.start, windowEnd: sEnd, token: s.fencingToken },
            overlapMs: Math.min(aEnd, sEnd) - s.start,
            band,
            expected: Boolean(band?.beyond),
          });
        } else if (a.end > s.start) workedPastWindow++;
      }
      active.push(s);
    }
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
    if (s.wroteAt !== undefined && s.wroteAt > windowEnd(s)) {
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
    const deadline = aborted ? s.deadlineAtAbort ?? s.deadline : s.deadline;
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
    const why = pause
      ? `the client process was stopped (SIGSTOP${pause.targeted ? ' between its check and its write' : ''}) from ${(pause.start - result.startedAt).toFixed(0)} to ${(pause.end - result.startedAt).toFixed(0)} ms into the phase, across the deadline: no timer can run in a stopped process`
      : aborted
        ? `unexplained: the signal aborted ${(s.abortedAt! - deadline).toFixed(1)} ms after the deadline (timer late: event loop or CPU starvation?)`
        : 'unexplained: the section ran past the deadline and the signal never aborted';
    late.push({ id: s.id, client: s.client, resource: s.resource, deadline, abortedAt: s.abortedAt, lateMs: until - deadline, why });
  }

  // Unavailability: the longest time any client went without a grant.
  const unavailability: PhaseCheck['unavailability'] = { worstGapMs: 0 };
  const starts = new Map<string, number[]>();
  for (const s of sections) starts.set(s.client, [...(starts.get(s.client) ?? []), s.start]);
  for (const [client, list] of starts) {
    const times = [result.runFrom, ...list.filter((t) => t >= result.runFrom && t <= result.runTo).sort((a, b) => a - b), result.runTo];
    for (let i = 1; i < times.length; i++) {
      const gap = times[i] - times[i - 1];
      if (gap > unavailability.worstGapMs) Object.assign(unavailability, { worstGapMs: gap, client, from: times[i - 1], band: bandAt(bands, times[i - 1] + gap / 2) });
    }
  }

  // Liveness after healing.
  const failed: string[] = [];
  let maxLatencyMs = 0;
  let overBound = 0;
  for (const p of result.probes) {
    if (p.grantedAt === undefined) {
      failed.push(`${p.client} round ${p.round}: ${p.error}`);
      continue;
    }
    const healed = bands.find((b) => b.round === p.round)?.healedAt ?? p.startedAt;
    const latency = p.grantedAt - healed;
    maxLatencyMs = Math.max(maxLatencyMs, latency);
    if (latency > result.bound) overBound++;
  }

  const afterClose = result.keysLeft.filter((k) => k.when === 'after-close');
  const afterTtl = result.keysLeft.filter((k) => k.when === 'after-ttl');
  const owner = (value: string | null) => sections.find((s) => s.value === value);
  const details = result.keysLeft.map((k) => {
    const s = owner(k.value);
    return `${k.when}: m${k.master + 1} ${k.key} pttl ${k.pttl} ms, ${s ? `section ${s.id} (outcome ${s.outcome}, settled ${(s.settledAt - result.startedAt).toFixed(0)} ms into the phase)` : 'value of no recorded section (a failed attempt?)'}`;
  });

  const otherFailures = result.failures.filter((f) => f.kind === 'other');
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
    unexpectedViolations: violations.filter((v) => !v.expected).length,
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
    delivery: { cases, onTime, late, tightestMarginMs: tightest, lostOutcomes: sections.filter((s) => s.outcome === 'lost').length },
    unavailability,
    liveness: { probes: result.probes.length, failed, maxLatencyMs, bound: result.bound, overBound },
    keys: { afterClose: afterClose.length, afterTtl: afterTtl.length, details },
  };
}
