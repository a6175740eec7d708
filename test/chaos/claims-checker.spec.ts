/**
 * The checker's claims and waiting rules on hand-made histories (no Redis): a holder that believes a
 * deadline past the masters' window end fails the run even with no overlap, a grant that needs a
 * master inside its restart's amnesia window fails it, and so does a waiter left idle on a free key
 * past TTL + retry delay + jitter + commandTimeout + 1 s; a direct handover its waiter could not count
 * is excused from "failed attempt left its keys" only as documented. The same histories within the rules pass.
 */
import { describe, expect, it } from '@jest/globals';
import { checkPhase, validityOf } from '../../chaos/checker.js';
import type { MasterEvent } from '../../chaos/history.js';
import type { PhaseResult } from '../../chaos/phase.js';
import type { FailureRecord, SectionRecord } from '../../chaos/types.js';

const TTL = 1_000;
const KEY = 'lock:t:hot:1';

/** A SET of `value` on each master by a script, at the given times. */
const writes = (value: string, at: number[]): MasterEvent[] =>
  at.map((t, m) => ({ t, m, kind: 'cmd', args: ['set', KEY, value, 'PX', String(TTL)], lua: true, sv: value }));
const release = (value: string, t: number): MasterEvent[] =>
  [0, 1, 2, 3, 4].map((m) => ({ t, m, kind: 'cmd', args: ['del', KEY], lua: true, sv: value }));

function section(over: Partial<SectionRecord>): SectionRecord {
  return {
    id: 'c1:1',
    phase: 't',
    client: 'c1',
    via: 'using',
    resource: 't:hot:1',
    hot: true,
    value: 'v1',
    fenced: false,
    requestedAt: 995,
    start: 1_010,
    end: 1_030,
    extensions: [],
    deadline: 1_000 + validityOf(TTL),
    stoppedEarly: false,
    checkedAt: 1_025,
    abortedAtCheck: false,
    commit: 'unfenced',
    pausedBeforeWrite: false,
    outcome: 'ok',
    settledAt: 1_040,
    ...over,
  };
}

function phase(sections: SectionRecord[], events: MasterEvent[], failures: FailureRecord[] = []): PhaseResult {
  return {
    phase: 't',
    sections,
    failures,
    probes: [],
    bands: [],
    pauses: [],
    keysLeft: [],
    registerLogs: new Map(),
    startedAt: 0,
    endedAt: 20_000,
    masterEvents: events,
    clientCycles: Object.fromEntries(
      [...new Set(sections.map((s) => s.client))].map((c) => [c, sections.filter((s) => s.client === c).length]),
    ),
    stalls: [],
    spec: { id: 't', fault: 'none', guard: true, fencing: false, seconds: 10, title: 'none' },
    bound: 5_000,
    runFrom: 0,
    runTo: 20_000,
    cycles: sections.length,
    masterCount: 5,
    harnessStalls: [],
    ttl: TTL,
    commandTimeout: 200,
    retryDelay: 60,
    retryJitter: 30,
  };
}

const failed = (result: PhaseResult) => checkPhase(result).problems.map((p) => p.check);

describe('claims', () => {
  const events = [...writes('v1', [1_000, 1_001, 1_002, 1_003, 1_004]), ...release('v1', 1_035)];

  it('a deadline within the window end (w(k − quorum + 1) + TTL − drift) passes', () => {
    const check = checkPhase(phase([section({ claimedDeadline: 1_002 + validityOf(TTL) })], events));
    expect(check.claims.grants).toBe(1);
    expect(check.claims.over).toBe(0);
    expect(check.problems).toEqual([]);
  });

  it('a deadline 40 ms past it fails the run with no overlap (validity from the round end)', () => {
    const check = checkPhase(phase([section({ claimedDeadline: 1_042 + validityOf(TTL) })], events));
    expect(check.claims.largestOverclaimMs).toBeCloseTo(40, 0);
    expect(check.violations).toEqual([]);
    expect(failed(phase([section({ claimedDeadline: 1_042 + validityOf(TTL) })], events))).toContain(
      'claim past the window',
    );
  });

  it("an extension's claim is judged against the masters' renewals during that call", () => {
    const renewals: MasterEvent[] = [0, 1, 2, 3, 4].map((m) => ({
      t: 1_300 + m,
      m,
      kind: 'cmd',
      args: ['pexpire', KEY, String(TTL)],
      lua: true,
      sv: 'v1',
    }));
    const ext = (deadline: number) =>
      section({
        claimedDeadline: 1_000 + validityOf(TTL),
        end: 1_500,
        checkedAt: 1_490,
        settledAt: 1_510,
        extensions: [{ at: 1_299, ok: true, doneAt: 1_310, deadline }],
      });
    const all = [...writes('v1', [1_000, 1_001, 1_002, 1_003, 1_004]), ...renewals, ...release('v1', 1_505)];
    expect(failed(phase([ext(1_302 + validityOf(TTL))], all))).toEqual([]);
    expect(failed(phase([ext(1_340 + validityOf(TTL))], all))).toContain('claim past the window');
  });

  it('a grant whose quorum needs a master inside its amnesia window fails (restart guard on)', () => {
    // m1, m2 and m3 were killed and came back just before the grant: only m4 and m5 can vote.
    const amnesia: MasterEvent[] = [
      { t: 500, m: 0, kind: 'wipe' },
      { t: 600, m: 0, kind: 'attached' },
      { t: 500, m: 1, kind: 'wipe' },
      { t: 600, m: 1, kind: 'attached' },
      { t: 500, m: 2, kind: 'wipe' },
      { t: 600, m: 2, kind: 'attached' },
    ];
    const result = phase([section({ claimedDeadline: 1_000 + validityOf(TTL) })], [...amnesia, ...events]);
    expect(failed(result)).toContain('grant counted a distrusted master');
    expect(failed({ ...result, spec: { ...result.spec, guard: false } })).not.toContain(
      'grant counted a distrusted master',
    );
  });
});

describe('waiting', () => {
  // c1 holds 1,010–1,040 and releases; c2 asked at 1,020 and gets the key only at `granted`.
  const waiter = (granted: number) =>
    section({
      id: 'c2:1',
      client: 'c2',
      value: 'v2',
      requestedAt: 1_020,
      start: granted,
      end: granted + 20,
      checkedAt: granted + 15,
      settledAt: granted + 30,
      claimedDeadline: granted - 5 + validityOf(TTL),
    });
  const history = (granted: number) => [
    ...writes('v1', [1_000, 1_001, 1_002, 1_003, 1_004]),
    ...release('v1', 1_035),
    ...writes('v2', [granted - 5, granted - 5, granted - 5, granted - 5, granted - 5]),
    ...release('v2', granted + 25),
  ];

  it('a waiter served within the bound passes; one left idle past it on a free key fails', () => {
    const holder = section({ claimedDeadline: 1_000 + validityOf(TTL) });
    const quick = checkPhase(phase([holder, waiter(1_100)], history(1_100)));
    expect(quick.waiting.over).toBe(0);
    expect(quick.problems).toEqual([]);
    const slow = phase([holder, waiter(5_000)], history(5_000));
    expect(checkPhase(slow).waiting.longestIdleMs).toBeGreaterThan(3_900);
    expect(failed(slow)).toContain('waiter idle past its bound');
  });

  it('a key stranded but granted now and then (gaps each under the bound) fails by its idle share', () => {
    // c1 holds briefly every 1,300 ms from 1,010; c2 waits from 1,020 to 6,300 between them.
    const grants = [1_010, 2_310, 3_610, 4_910, 6_210].map((t, i) =>
      section({
        id: `c1:${i + 1}`,
        value: `g${i}`,
        start: t,
        end: t + 5,
        checkedAt: t + 4,
        settledAt: t + 8,
        claimedDeadline: t + validityOf(TTL),
      }),
    );
    const events = grants.flatMap((g) => [
      ...writes(g.value, [g.start - 2, g.start - 2, g.start - 2, g.start - 2, g.start - 2]),
      ...release(g.value, g.start + 6),
    ]);
    const waits = [1_020, 3_520].map((t) => ({
      phase: 't',
      client: 'c2',
      resource: 't:hot:1',
      hot: true,
      requestedAt: t,
      failedAt: t + 2_500,
      kind: 'busy' as const,
      message: 'busy',
    }));
    const check = checkPhase(phase(grants, events, waits));
    expect(check.waiting.longestIdleMs).toBeLessThan(check.waiting.bound);
    expect(check.waiting.longestIdleShareMs).toBeGreaterThan(check.waiting.bound);
    expect(check.problems.map((p) => p.check)).toContain('waiter idle past its bound');
  });

  it("the waiter's own measured stalls are subtracted", () => {
    const holder = section({ claimedDeadline: 1_000 + validityOf(TTL) });
    const slow = phase([holder, waiter(5_000)], history(5_000));
    slow.stalls = [{ client: 'c2', start: 1_100, end: 4_500 }];
    expect(failed(slow)).not.toContain('waiter idle past its bound');
  });
});

describe('keys left by failed attempts', () => {
  // A release hands the key to c2's direct ticket on two masters only (three were down): c2 cannot
  // count it, renews it there for up to two claim windows (2 × (60 + 30 + 200 + 100) = 780 ms), and
  // the value lives out its TTL (docs/handoff.md). c2's values begin with its instance's tag.
  const HANDED = '950.TAGabcdeQQQQQQ.handed';
  const earlier = section({
    id: 'c2:0',
    client: 'c2',
    value: '900.TAGabcdeRRRRRR.own',
    requestedAt: 190,
    start: 200,
    end: 210,
    checkedAt: 205,
    settledAt: 220,
    deadline: 195 + validityOf(TTL),
    claimedDeadline: 195 + validityOf(TTL),
  });
  const holder = section({ claimedDeadline: 1_000 + validityOf(TTL) });
  const handover = (renewals: number[]): MasterEvent[] => [
    ...writes(earlier.value, [195, 195, 195, 195, 195]),
    ...release(earlier.value, 215),
    ...writes('v1', [1_000, 1_001, 1_002, 1_003, 1_004]),
    ...release('v1', 1_035),
    ...[0, 1].map((m): MasterEvent => ({
      t: 1_035.5,
      m,
      kind: 'cmd',
      args: ['set', KEY, HANDED, 'PX', '1000'],
      lua: true,
      sv: 'v1',
    })),
    ...renewals.flatMap((t) =>
      [0, 1].map((m): MasterEvent => ({ t, m, kind: 'cmd', args: ['pexpire', KEY, '1000'], lua: true, sv: HANDED })),
    ),
  ];
  const gaveUp = (failedAt: number): FailureRecord => ({
    phase: 't',
    client: 'c2',
    resource: 't:hot:1',
    hot: true,
    requestedAt: 1_020,
    failedAt,
    kind: 'busy',
    message: 'busy',
  });

  it('a direct handover its waiter could not count, renewed for two claim windows at most, is excused', () => {
    const check = checkPhase(phase([earlier, holder], handover([1_300, 1_700]), [gaveUp(3_000)]));
    expect(check.problems).toEqual([]);
  });

  it("a failed attempt's SET NX from the batched plain path (another value's script: the batch's ARGV[1] is an op) is no handover", () => {
    // c2's attempt took two masters with its batched SET NX (plain-batch.lua), gave up late and never
    // deleted them: they live out their TTL. The batch's MONITOR line carries `a` as ARGV[1], but a
    // handover's SET never has NX.
    const batched = [0, 1].map((m): MasterEvent => ({
      t: 1_030,
      m,
      kind: 'cmd',
      args: ['set', KEY, 'v2', 'PX', String(TTL), 'NX'],
      lua: true,
      sv: 'a',
      sa: ['v2', String(TTL)],
    }));
    const events = [...writes('v1', [1_000, 1_001, 1_002, 1_003, 1_004]), ...release('v1', 1_020), ...batched];
    expect(failed(phase([holder], events, [gaveUp(1_900)]))).toContain('failed attempt left its keys');
  });

  it('renewed later than two claim windows after the handover, or given up on while it lived, it fails the run', () => {
    expect(failed(phase([earlier, holder], handover([1_300, 1_900]), [gaveUp(3_000)]))).toContain(
      'failed attempt left its keys',
    );
    expect(failed(phase([earlier, holder], handover([1_300, 1_700]), [gaveUp(1_500)]))).toContain(
      'failed attempt left its keys',
    );
  });
});
