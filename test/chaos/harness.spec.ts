/**
 * The harness's own pieces that a verdict depends on: the key scan (keys left after release, a
 * restarted master's AOF reload) and the probe excuse by measured stalls on the client's path.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { checkPhase } from '../../chaos/checker.js';
import { Inspector } from '../../chaos/nemesis.js';
import type { PhaseResult } from '../../chaos/phase.js';
import { Redis } from 'ioredis';
import { analyseHistory, MasterHistory, mastersHolding, type MasterEvent } from '../../chaos/history.js';
import type { Master } from '../../lib/backend/master.js';
import { plainAcquire, plainRelease } from '../../lib/kinds/mutex/plain-batch.js';
import { defineScripts } from '../../lib/lua/scripts.js';
import { waitFor } from '../support/index.js';
import type { SectionRecord } from '../../chaos/types.js';

/**
 * A phase's record for the checker, with nothing in it but what `parts` says: 5 masters, a
 * 1,000 ms TTL, a 200 ms command timeout, a run from 0 to 5,000 ms.
 */
function phaseOf(phase: string, spec: PhaseResult['spec'], parts: Partial<PhaseResult>): PhaseResult {
  return {
    phase,
    spec,
    sections: [],
    failures: [],
    probes: [],
    bands: [],
    pauses: [],
    keysLeft: [],
    registerLogs: new Map(),
    startedAt: 0,
    endedAt: 5_000,
    masterEvents: [],
    clientCycles: {},
    stalls: [],
    bound: 2_000,
    runFrom: 0,
    runTo: 5_000,
    cycles: 0,
    masterCount: 5,
    ttl: 1_000,
    commandTimeout: 200,
    ...parts,
  };
}

describe('the key scan', () => {
  let masters: RedisMasters;
  let inspector: Inspector;
  beforeAll(async () => {
    masters = await startRedisMasters(1);
    inspector = new Inspector(masters.urls);
    await inspector.connect();
  }, 20_000);
  afterAll(async () => {
    inspector?.close();
    await masters?.stop();
  });

  it("lists the lock keys beside the handoff's queue keys (sorted sets under the same prefix)", async () => {
    const c = inspector.clients[0];
    await c.set('lock:s1:hot:0', 'value-a', 'PX', 5_000);
    await c.zadd('lock:s1:hot:0:handoff:queue', 1, 'ticket');
    await c.zadd('lock:s1:hot:0:handoff:lease', 2, 'ticket');
    const found = await inspector.scan(0, 'lock:s1:*');
    expect(found?.map((k) => [k.key, k.value])).toEqual([['lock:s1:hot:0', 'value-a']]);
    expect(found?.[0].pttl).toBeGreaterThan(0);
  });
});

describe('a failed liveness probe', () => {
  const base = (harnessStalls: PhaseResult['harnessStalls']): PhaseResult => ({
    phase: 'u1',
    spec: { id: 'u1', fault: 'none', guard: true, fencing: true, seconds: 1, title: 'none' },
    sections: [],
    failures: [],
    probes: [{ phase: 'u1', client: 'c1', round: 0, startedAt: 1_000, endedAt: 4_000, error: 'timed out' }],
    bands: [],
    pauses: [],
    keysLeft: [],
    registerLogs: new Map(),
    startedAt: 0,
    endedAt: 5_000,
    masterEvents: [],
    clientCycles: { c1: 0 },
    stalls: [],
    harnessStalls,
    bound: 2_000,
    runFrom: 0,
    runTo: 5_000,
    cycles: 0,
    masterCount: 5,
    ttl: 1_000,
    commandTimeout: 200,
  });

  it('fails the run when nothing on its path was measured stalled', () => {
    const check = checkPhase(base([]));
    expect(check.problems.map((p) => p.check)).toEqual(['liveness probe failed']);
  });

  it("over its bound is excused as starved only when the harness's or the client's stalls cover the excess", () => {
    const late = (harnessStalls: PhaseResult['harnessStalls']) => ({
      ...base(harnessStalls),
      probes: [{ phase: 'u1', client: 'c1', round: 0, startedAt: 1_000, grantedAt: 4_000, endedAt: 4_010 }],
    });
    expect(checkPhase(late([])).problems.map((p) => p.check)).toEqual(['liveness probe over its bound']);
    const stalled = checkPhase(late([{ client: 'harness', start: 1_500, end: 3_000 }]));
    expect(stalled.problems).toEqual([]);
    expect(stalled.liveness.starved).toBe(1);
  });

  it("is excused as starved when the harness's loop (the proxies carrying its traffic) left no stretch for one attempt", () => {
    // stalls every 500 ms, 400 ms long: no 600 ms stretch (2 command timeouts + 200 ms) to run an attempt in
    const stalls = Array.from({ length: 8 }, (_, i) => ({
      client: 'harness',
      start: 900 + i * 500,
      end: 1_300 + i * 500,
    }));
    const check = checkPhase(base(stalls));
    expect(check.problems).toEqual([]);
    expect(check.liveness.starved).toBe(1);
  });
});

describe('a grant the history shows on fewer than a quorum of masters', () => {
  const section: SectionRecord = {
    id: 'c1:1',
    phase: 'u2',
    client: 'c1',
    via: 'using',
    resource: 'u2:cold:1',
    hot: false,
    value: 'v1',
    fenced: false,
    requestedAt: 1_000,
    start: 1_020,
    end: 1_030,
    extensions: [],
    deadline: 1_900,
    stoppedEarly: false,
    checkedAt: 1_025,
    abortedAtCheck: false,
    commit: 'skipped',
    pausedBeforeWrite: false,
    outcome: 'ok',
    settledAt: 1_040,
  };
  const result = (events: MasterEvent[]): PhaseResult => ({
    phase: 'u2',
    spec: { id: 'u2', fault: 'kill-restart', guard: false, fencing: true, seconds: 1, title: 'kill-restart' },
    sections: [section],
    failures: [],
    probes: [],
    bands: [],
    pauses: [],
    keysLeft: [],
    registerLogs: new Map(),
    startedAt: 0,
    endedAt: 5_000,
    masterEvents: [
      { t: 1_005, m: 0, kind: 'cmd', args: ['set', 'lock:u2:cold:1', 'v1', 'PX', '1000', 'NX'], lua: false },
      { t: 1_035, m: 0, kind: 'cmd', args: ['del', 'lock:u2:cold:1'], lua: true, sv: 'v1' },
      ...events,
    ],
    clientCycles: { c1: 1 },
    stalls: [],
    bound: 2_000,
    runFrom: 0,
    runTo: 5_000,
    cycles: 1,
    masterCount: 5,
    ttl: 1_000,
    commandTimeout: 200,
  });
  const checks = (r: PhaseResult) => checkPhase(r).problems.map((p) => p.check);

  it('fails the run when every master was recorded throughout', () => {
    expect(checks(result([]))).toContain('grant without a majority');
  });

  it('is unverifiable, not failed, when the missing votes are masters killed -9 while the attempt ran (their last MONITOR lines die with them)', () => {
    const killed: MasterEvent[] = [1, 2].flatMap((m) => [
      { t: 1_010, m, kind: 'wipe' as const },
      { t: 1_200, m, kind: 'attached' as const },
    ]);
    const check = checkPhase(result(killed));
    expect(check.problems.map((p) => p.check)).not.toContain('grant without a majority');
    expect(check.oracle.noMajorityUnverifiable).toBe(1);
  });

  it('still fails when the masters were killed and recorded again before the attempt began', () => {
    const earlier: MasterEvent[] = [1, 2].flatMap((m) => [
      { t: 500, m, kind: 'wipe' as const },
      { t: 700, m, kind: 'attached' as const },
    ]);
    expect(checks(result(earlier))).toContain('grant without a majority');
  });
});

describe('the handoff as the masters record it', () => {
  const key = 'lock:u3:cold:1';
  const held = (value: string, start: number): SectionRecord => ({
    id: 'c1:1',
    phase: 'u3',
    client: 'c1',
    via: 'using',
    resource: 'u3:cold:1',
    hot: false,
    value,
    fenced: false,
    requestedAt: 0,
    start,
    end: start + 10,
    extensions: [],
    deadline: start + 900,
    stoppedEarly: false,
    checkedAt: start + 5,
    abortedAtCheck: false,
    commit: 'skipped',
    pausedBeforeWrite: false,
    outcome: 'ok',
    settledAt: start + 20,
  });
  const run = (sections: SectionRecord[], masterEvents: MasterEvent[]): string[] =>
    checkPhase(
      phaseOf(
        'u3',
        { id: 'u3', fault: 'none', guard: true, fencing: true, seconds: 1, title: 'none' },
        {
          sections,
          masterEvents,
          clientCycles: { c1: sections.length },
          cycles: sections.length,
        },
      ),
    ).problems.map((p) => p.check);
  const onAll = (f: (m: number) => MasterEvent[]) => [0, 1, 2, 3, 4].flatMap(f);

  it("bounds a handed-over grant from the releaser's writes, not from the waiter's earlier ticket scripts", () => {
    const events = onAll((m) => [
      // the waiter's ticket script (its value is ARGV[1]) touches the queue long before the handover
      { t: 10, m, kind: 'cmd', args: ['pexpire', `${key}:handoff:queue`, '680'], lua: true, sv: 'waiter' },
      { t: 1_000, m, kind: 'cmd', args: ['set', key, 'holder', 'PX', '1000', 'NX'], lua: false },
      // the holder's release hands the key to the waiter's value
      { t: 1_500, m, kind: 'cmd', args: ['del', key], lua: true, sv: 'holder' },
      { t: 1_500, m, kind: 'cmd', args: ['set', key, 'waiter', 'PX', '1000'], lua: true, sv: 'holder' },
      { t: 1_530, m, kind: 'cmd', args: ['del', key], lua: true, sv: 'waiter' },
    ]);
    expect(run([held('waiter', 1_505)], events)).toEqual([]);
  });

  it('bounds a grant from the renewal by its own ticket script when the key had been handed over long before', () => {
    // Handed over at 1,500 (the waiter missed the message: a partition); its attempt at 2,450 finds
    // its value and renews it with the full TTL: the key lives until 3,450, the grant at 2,600 is in time.
    const events = onAll((m) => [
      { t: 1_000, m, kind: 'cmd', args: ['set', key, 'holder', 'PX', '1000', 'NX'], lua: false },
      { t: 1_500, m, kind: 'cmd', args: ['del', key], lua: true, sv: 'holder' },
      { t: 1_500, m, kind: 'cmd', args: ['set', key, 'waiter', 'PX', '1000'], lua: true, sv: 'holder' },
      { t: 2_450, m, kind: 'cmd', args: ['pexpire', key, '1000'], lua: true, sv: 'waiter' },
      { t: 2_620, m, kind: 'cmd', args: ['del', key], lua: true, sv: 'waiter' },
    ]);
    expect(run([held('waiter', 2_600)], events)).toEqual([]);
    // The bound from the handover alone ends at 1,500 + TTL − drift: that grant would be past it.
    const renewal = events.filter((e) => e.kind === 'cmd' && e.args[0] !== 'pexpire');
    expect(run([held('waiter', 2_600)], renewal)).toContain('granted after its window');
  });

  it("sees a SET NX on a key reserved for a fenced waiter as refused: the waiter's withdrawal that frees it is no foreign write", () => {
    const events = onAll((m) => [
      { t: 1_000, m, kind: 'cmd', args: ['set', key, 'holder', 'PX', '1000', 'NX'], lua: false },
      // the holder's release reserves the key for the fenced ticket `tk`
      { t: 1_500, m, kind: 'cmd', args: ['del', key], lua: true, sv: 'holder' },
      { t: 1_500, m, kind: 'cmd', args: ['set', key, '~tk', 'PX', '200'], lua: true, sv: 'holder' },
      // a newcomer's SET NX finds the reservation (MONITOR logs it all the same)
      { t: 1_550, m, kind: 'cmd', args: ['set', key, 'newcomer', 'PX', '1000', 'NX'], lua: false },
      // `tk` won elsewhere: its withdrawal drops its own reservation here
      {
        t: 1_600,
        m,
        kind: 'cmd',
        args: ['del', key],
        lua: true,
        sv: 'tk',
        sa: ['__quorum-lock__:x', '200', 'tk', '', '1'],
      },
    ]);
    expect(run([], events)).toEqual([]);
  });

  it('takes a SET NX on a reserved key as a success when an eviction notice since the reservation says it may be gone', () => {
    const events: MasterEvent[] = [
      ...onAll((m) => [
        { t: 1_000, m, kind: 'cmd', args: ['set', key, 'holder', 'PX', '1000', 'NX'], lua: false },
        { t: 1_500, m, kind: 'cmd', args: ['del', key], lua: true, sv: 'holder' },
      ]),
      // master 0 reserved the key for `tk`, then evicted it (the notice comes late, by pub/sub)
      { t: 1_500, m: 0, kind: 'cmd', args: ['set', key, '~tk', 'PX', '200'], lua: true, sv: 'holder' },
      { t: 1_540, m: 0, kind: 'evicted', key },
      ...[0, 1, 2].map((m): MasterEvent => ({
        t: 1_520,
        m,
        kind: 'cmd',
        args: ['set', key, 'newcomer', 'PX', '1000', 'NX'],
        lua: false,
      })),
      ...[0, 1, 2].map((m): MasterEvent => ({
        t: 1_560,
        m,
        kind: 'cmd',
        args: ['del', key],
        lua: true,
        sv: 'newcomer',
      })),
    ];
    const section = { ...held('newcomer', 1_525), end: 1_550, settledAt: 1_555 };
    expect(run([section], events)).not.toContain('grant without a majority');
  });

  it("takes a withdrawal's queue entry (`ticket ttl value`) as acting for that value, and any other script as foreign", () => {
    const set: MasterEvent[] = onAll((m) => [
      { t: 100, m, kind: 'cmd', args: ['set', key, 'mine', 'PX', '1000', 'NX'], lua: false },
    ]);
    const del = (sv: string): MasterEvent[] => [{ t: 200, m: 0, kind: 'cmd', args: ['del', key], lua: true, sv }];
    const section = { ...held('mine', 105), end: 150, settledAt: 160 };
    expect(run([section], [...set, ...del('t1 1000 mine')])).toEqual([]);
    expect(run([section], [...set, ...del('t1 1000 other')])).toContain("release or extend of another holder's key");
  });
});

describe('evictions as the masters record them (notices come late, by pub/sub)', () => {
  const key = 'lock:u4:cold:1';
  const foreign = (masterEvents: MasterEvent[]): number =>
    checkPhase(
      phaseOf(
        'u4',
        { id: 'u4', fault: 'evicting-master', guard: true, fencing: true, seconds: 1, title: 'evicting-master' },
        {
          masterEvents,
        },
      ),
    ).oracle.foreignWrites;
  const set = (t: number, value: string, lua: boolean): MasterEvent =>
    lua
      ? { t, m: 0, kind: 'cmd', args: ['set', key, value, 'PX', '1000'], lua, sv: value }
      : { t, m: 0, kind: 'cmd', args: ['set', key, value, 'PX', '1000', 'NX'], lua };
  const del = (t: number, value: string): MasterEvent => ({
    t,
    m: 0,
    kind: 'cmd',
    args: ['del', key],
    lua: true,
    sv: value,
  });
  const evicted = (t: number): MasterEvent => ({ t, m: 0, kind: 'evicted', key });

  it("does not give a later holder's eviction notice to a client's SET NX that may have failed", () => {
    expect(foreign([set(0, 'a', false), set(30, 'b', false), del(90, 'a'), set(150, 'c', true), evicted(230)])).toBe(0);
  });

  it('lets a script carrying a value prove the SET NX the model had refused, when the key was evicted since', () => {
    const events = [set(0, 'f', true), set(500, 'p', true), evicted(513), set(1_100, 'c', false), del(1_120, 'c')];
    expect(foreign(events)).toBe(0);
    expect(foreign(events.filter((e) => e.kind !== 'evicted'))).toBe(1);
  });

  it("takes a notice stamped just before the write it followed as that write's eviction (two clocks meet there)", () => {
    // The SET is stamped by the master, the notice by the harness on receipt: within a millisecond
    // they can land in either order.
    const events = (noticeAt: number) => [
      set(500, 'p', true),
      evicted(noticeAt),
      set(1_100, 'c', false),
      del(1_120, 'c'),
    ];
    expect(foreign(events(499.5))).toBe(0);
    expect(foreign(events(480))).toBe(1);
  });
});

describe("the masters' history of a batched call (plain-batch.lua), recorded by MONITOR", () => {
  let masters: RedisMasters;
  let client: Redis;
  beforeAll(async () => {
    masters = await startRedisMasters(1);
    client = new Redis(masters.urls[0]);
  }, 20_000);
  afterAll(async () => {
    client?.disconnect();
    await masters?.stop();
  });

  it("attributes each command of the script to its own entry's value (the script's ARGV[1] is only the first entry's op)", async () => {
    const history = new MasterHistory(masters.urls, 'lock:');
    await history.start();
    try {
      const master = { client, scripts: defineScripts(client), label: 'm0' } as unknown as Master;
      await client.set('lock:b6:held', 'holder');
      await client.set('lock:b6:release', 'mine');
      await client.set('lock:b6:two', 'second');
      // One loop turn, one script call: a granted SET NX, a refused one, a release, then two releases
      // of one key of which only the second holds it (the first runs nothing MONITOR shows).
      const replies = await Promise.all([
        plainAcquire(master, 'lock:b6:free', 'granted', '10000'),
        plainAcquire(master, 'lock:b6:held', 'refused', '10000'),
        plainRelease(master, 'lock:b6:release', 'mine', '0'),
        plainRelease(master, 'lock:b6:two', 'first', '0'),
        plainRelease(master, 'lock:b6:two', 'second', '0'),
      ]);
      expect(replies).toEqual([1, 0, 1, 0, 1]);
      const fromScript = () => history.events.filter((e) => e.kind === 'cmd' && e.lua);
      expect(await waitFor(() => fromScript().length === 4)).toBe(true);
      expect(fromScript().map((e) => e.kind === 'cmd' && [e.args[0].toLowerCase(), e.args[1], e.sv, e.sa])).toEqual([
        ['set', 'lock:b6:free', 'granted', undefined],
        ['set', 'lock:b6:held', 'refused', undefined],
        ['del', 'lock:b6:release', 'mine', undefined],
        // either release may have run it: both are named, and the replay's holder tells which
        ['del', 'lock:b6:two', 'first', ['second']],
      ]);
    } finally {
      history.stop();
      await client.del('lock:b6:free', 'lock:b6:held');
    }
  }, 30_000);
});

describe("the batched plain path's SET NX (plain-batch.lua: MONITOR logs it from the script whether it took the key or not)", () => {
  const key = 'lock:u6:cold:1';
  // As the batch records them: the script's ARGV[1] is an entry's op ('a', 'r'), the values follow.
  const clientSetNx = (t: number, value: string): MasterEvent => ({
    t,
    m: 0,
    kind: 'cmd',
    args: ['set', key, value, 'PX', '1000', 'NX'],
    lua: false,
  });
  const batchSetNx = (t: number, value: string): MasterEvent => ({
    t,
    m: 0,
    kind: 'cmd',
    args: ['set', key, value, 'PX', '1000', 'NX'],
    lua: true,
    sv: 'a',
    sa: [value, '1000'],
  });
  const batchRelease = (t: number, value: string): MasterEvent => ({
    t,
    m: 0,
    kind: 'cmd',
    args: ['del', key],
    lua: true,
    sv: 'r',
    sa: [value, '200'],
  });
  const evicted = (t: number): MasterEvent => ({ t, m: 0, kind: 'evicted', key });
  const holds = (events: MasterEvent[], value: string) =>
    mastersHolding(analyseHistory(events, 1), key, value, 0, 5_000).size;

  it('takes it as a grant on a key the replay has free', () => {
    expect(holds([batchSetNx(100, 'b')], 'b')).toBe(1);
  });

  it('takes it as refused on a held key, even when a late eviction notice may have freed the key first (it is no proof)', () => {
    // `a` holds; `b`'s SET NX ran at 100 and the notice of `a`'s eviction came at 130: either order is possible.
    expect(holds([clientSetNx(0, 'a'), batchSetNx(100, 'b'), evicted(130)], 'b')).toBe(0);
  });

  it("counts it once a later script of the value acted on the key (the release's DEL proves the SET NX took it)", () => {
    expect(holds([clientSetNx(0, 'a'), batchSetNx(100, 'b'), evicted(130), batchRelease(200, 'b')], 'b')).toBe(1);
  });
});

describe('a SET NX the history takes as refused although an eviction had freed the key (the notice came after it)', () => {
  const key = 'lock:u5:cold:1';
  const section: SectionRecord = {
    id: 'c2:1',
    phase: 'u5',
    client: 'c2',
    via: 'using',
    resource: 'u5:cold:1',
    hot: false,
    value: 'b',
    fenced: false,
    requestedAt: 1_004,
    start: 1_010,
    end: 1_020,
    extensions: [],
    deadline: 1_900,
    stoppedEarly: false,
    checkedAt: 1_015,
    abortedAtCheck: false,
    commit: 'skipped',
    pausedBeforeWrite: false,
    outcome: 'ok',
    settledAt: 1_030,
  };
  const cmd = (t: number, m: number, args: string[], sv?: string): MasterEvent =>
    sv === undefined ? { t, m, kind: 'cmd', args, lua: false } : { t, m, kind: 'cmd', args, lua: true, sv };
  // A failed attempt's value `a` holds the key on m1–m3; m1 evicts it, then runs `b`'s SET NX, which
  // finds the key free. MONITOR stamps the SET; the eviction notice is stamped when the harness reads
  // it, after the SET. `b` holds m1, m4 and m5: a bare quorum.
  const base: MasterEvent[] = [
    ...[0, 1, 2].map((m) => cmd(1_000, m, ['set', key, 'a', 'PX', '1000'], 'a')),
    ...[0, 1, 2, 3, 4].map((m) => cmd(1_005, m, ['set', key, 'b', 'PX', '1000', 'NX'])),
    ...[1, 2].map((m) => cmd(1_012, m, ['del', key], 'a')),
  ];
  const evictedAfterTheSet: MasterEvent = { t: 1_006, m: 0, kind: 'evicted', key };
  // `b`'s release: a script that deletes only a key holding `b`, so its DEL on m1 proves the SET NX there.
  const release = (masters: number[]) => masters.map((m) => cmd(1_025, m, ['del', key], 'b'));
  const check = (events: MasterEvent[]) =>
    checkPhase(
      phaseOf(
        'u5',
        { id: 'u5', fault: 'evicting-master', guard: true, fencing: true, seconds: 1, title: 'evicting-master' },
        {
          sections: [section],
          masterEvents: events,
          clientCycles: { c2: 1 },
          cycles: 1,
        },
      ),
    );

  it("counts that master's vote when the value's own script later acted on the key there", () => {
    const c = check([...base, evictedAfterTheSet, ...release([0, 3, 4])]);
    expect(c.oracle.noMajority).toBe(0);
    expect(c.oracle.foreignWrites).toBe(0);
    expect(c.problems.map((p) => p.check)).toEqual([]);
  });

  it('still fails the grant when the refusing holder was never evicted there', () => {
    const c = check([...base, ...release([3, 4])]);
    expect(c.problems.map((p) => p.check)).toContain('grant without a majority');
  });

  it("is unverifiable, not failed, when the evicting master's refusal came from a holder an eviction notice ended after the SET NX", () => {
    // `a` was evicted on m1 before `b`'s SET NX there (the replay still holds `a`), and `b`'s key was
    // evicted in turn after the grant: no script of `b` ever acts on m1 to prove the vote.
    const c = check([...base, { t: 1_011, m: 0, kind: 'evicted', key }, ...release([3, 4])]);
    expect(c.oracle.noMajority).toBe(0);
    expect(c.oracle.noMajorityEvicted).toBe(1);
    expect(c.problems.map((p) => p.check)).not.toContain('grant without a majority');
  });

  it('still fails the grant when the eviction notice came long after it', () => {
    const c = check([...base, { t: 1_600, m: 0, kind: 'evicted', key }, ...release([3, 4])]);
    expect(c.problems.map((p) => p.check)).toContain('grant without a majority');
  });

  it('still fails the grant when no eviction freed the key (the script then deletes a key holding another value)', () => {
    const problems = check([...base, ...release([0, 3, 4])]).problems.map((p) => p.check);
    expect(problems).toContain('grant without a majority');
    expect(problems).toContain("release or extend of another holder's key");
  });
});

describe('two grants under an eviction when the holder that lost its key began its section later', () => {
  const key = 'lock:u6:cold:1';
  const section = (id: string, value: string, requestedAt: number, start: number, end: number): SectionRecord => ({
    id,
    phase: 'u6',
    client: id.split(':')[0],
    via: 'using',
    resource: 'u6:cold:1',
    hot: false,
    value,
    fenced: false,
    requestedAt,
    start,
    end,
    extensions: [],
    deadline: start + 900,
    stoppedEarly: false,
    checkedAt: start + 1,
    abortedAtCheck: false,
    commit: 'skipped',
    pausedBeforeWrite: false,
    outcome: 'ok',
    settledAt: end + 5,
  });
  const cmd = (t: number, m: number, args: string[], sv?: string): MasterEvent =>
    sv === undefined ? { t, m, kind: 'cmd', args, lua: false } : { t, m, kind: 'cmd', args, lua: true, sv };
  // `x` (fenced: its section begins after the fencing round) takes m1, m3 and m5, a bare quorum; m1
  // evicts its key and `y`'s plain SET NX takes m1, m2 and m4. `y` begins first, `x` after its token.
  const events = (evicted: boolean): MasterEvent[] => [
    ...[0, 2, 4].map((m) => cmd(1_000 + m / 2, m, ['set', key, 'x', 'PX', '1000'], 'x')),
    ...[0, 1, 2, 3, 4].map((m) => cmd(1_003 + m / 4, m, ['set', key, 'y', 'PX', '1000', 'NX'])),
    ...(evicted ? [{ t: 1_006, m: 0, kind: 'evicted' as const, key }] : []),
    ...[2, 4].map((m) => cmd(1_030, m, ['del', key], 'x')),
    ...[1, 3].map((m) => cmd(1_030, m, ['del', key], 'y')),
  ];
  const check = (masterEvents: MasterEvent[]) =>
    checkPhase(
      phaseOf(
        'u6',
        { id: 'u6', fault: 'evicting-master', guard: true, fencing: true, seconds: 1, title: 'evicting-master' },
        {
          sections: [section('c1:1', 'x', 990, 1_015, 1_025), section('c2:1', 'y', 1_002, 1_010, 1_020)],
          masterEvents,
          clientCycles: { c1: 1, c2: 1 },
          cycles: 2,
        },
      ),
    );

  it("excuses the overlap by the eviction of the later section's bare quorum before the earlier one's grant", () => {
    const c = check(events(true));
    expect(c.violations).toHaveLength(1);
    expect(c.violations[0].cause).toMatch(/c1:1 held the key on exactly 3 of 5 masters .* m1 lost it \(evicted\)/);
    expect(c.problems.map((p) => p.check)).toEqual([]);
  });

  it('fails the run when no eviction shows', () => {
    expect(check(events(false)).problems.map((p) => p.check)).toContain('mutual exclusion');
  });
});
