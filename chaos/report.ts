/** The report (`chaos-report.md`) and the picture (`chaos-timeline.svg`), written by hand. */
import type { PhaseCheck } from './checker.js';
import { CLAIM_TOLERANCE_MS, windowEnd } from './checker.js';
import type { PhaseResult } from './phase.js';
import type { Settings } from './phase.js';

export interface ClockCheck {
  pings: number;
  processes: number;
  /** Pings where the child's shared-clock reading was not between the parent's before and after. */
  sharedOutOfOrder: number;
  maxRoundTripMs: number;
  medianRoundTripMs: number;
  /** The same check with performance.timeOrigin + performance.now() (wall-clock anchored per process). */
  originOutOfOrder: number;
  /** Largest |child − parent midpoint| with timeOrigin + now(), ms. */
  originMaxSkewMs: number;
  /** Largest change of a child's sharedNow() − performance.now() over its life, ms. */
  perfOffsetDriftMs: number;
}

export interface RunInfo {
  startedAt: Date;
  durationMs: number;
  quick: boolean;
  clients: number;
  masters: number;
  settings: Settings;
  node: string;
  redis: string;
  cpus: number;
  command: string;
}

const f0 = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : '–');
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '–');
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const FAULT_TITLES: Record<string, string> = {
  none: 'no fault (baseline)',
  'hot-contention':
    "hot contention with a slow first waiter (4 hot keys, 3 hot workers per process, 1–3 ms holds, no cold workers; one client's links slower than commandTimeout in each round)",
  'key-loss-no-repair': 'lock key lost on one master (clock-jump stand-in), quorum repair OFF (baseline)',
  'many-clients': 'master pause (SIGSTOP/SIGCONT)',
  'kill-restart': 'master kill -9 + immediate restart (no persistence)',
  'kill-delayed': 'master kill -9 + restart after > largest TTL',
  'master-pause': 'master pause (SIGSTOP/SIGCONT)',
  'client-pause': 'client pause (SIGSTOP past validity)',
  'key-loss': 'lock key lost on one master (clock-jump stand-in), quorum repair ON',
  'proxy-delay': 'proxy delay (chosen clients)',
  'proxy-drop': 'proxy drop / asymmetric partition',
  'proxy-cut': 'proxy cut connections',
  'client-stall': 'client event-loop stall (synchronous, 0.5 / 0.9 / 1.3 × TTL)',
  'slow-masters': 'slow masters (round trip just under commandTimeout)',
  partition: 'partitions splitting the clients into groups',
  'evicting-master': 'evicting master under memory pressure (maxmemory, volatile-lru; allowEvictingMasters)',
  'fsync-restart': 'master kill -9, restart from its AOF (appendfsync everysec)',
  'lagging-restart':
    'lagging restart: master(s) kill -9 while lock writes flow, back with their ticket queues (at the kill, or one TTL older) and no lock keys',
  'subscriber-restart':
    'lagging restart on hot keys, c1 c2 with app-supplied ioredis clients (jittered retryStrategy: subscriber and command connections come back in either order)',
  'clock-step': 'master clock steps (one master under libfaketime: ±1.5 s, ±0.4 s)',
  'slow-waiter': "slow first waiter (one client's links slower than commandTimeout)",
};

export function phaseTitle(r: PhaseResult): string {
  return `${FAULT_TITLES[r.spec.name ?? r.spec.fault] ?? r.spec.name ?? r.spec.fault}${r.spec.clients ? `, ${r.spec.clients} client processes` : ''}${r.spec.fault.startsWith('kill') ? (r.spec.guard ? ', restart guard ON' : ', restart guard OFF (plain Redlock)') : ''}`;
}

interface Row {
  result: PhaseResult;
  check: PhaseCheck;
}

/** Violations and rounds per variant of a phase. */
function byVariant(
  row: Row,
): Map<string, { rounds: number; violations: number; roundsWithViolation: number; inversions: number; stale: number }> {
  const out = new Map<
    string,
    { rounds: number; violations: number; roundsWithViolation: number; inversions: number; stale: number }
  >();
  for (const b of row.result.bands) {
    const v = out.get(b.variant) ?? { rounds: 0, violations: 0, roundsWithViolation: 0, inversions: 0, stale: 0 };
    v.rounds++;
    const n = row.check.violations.filter((x) => x.band === b).length;
    v.violations += n;
    if (n > 0) v.roundsWithViolation++;
    v.inversions += row.check.fencing.inversions.filter((x) => x.band === b).length;
    v.stale += row.check.fencing.staleAcceptedFenced.filter((x) => x.band === b).length;
    out.set(b.variant, v);
  }
  return out;
}

export function renderReport(rows: Row[], clock: ClockCheck, info: RunInfo, svgName: string): string {
  const s = info.settings;
  const L: string[] = [];
  const total = rows.reduce((a, r) => a + r.check.cycles.total, 0);
  const unexpected = rows.reduce((a, r) => a + r.check.unexpectedViolations, 0);
  const expected = rows.reduce((a, r) => a + r.check.violations.length - r.check.unexpectedViolations, 0);
  const staleFenced = rows.reduce((a, r) => a + r.check.fencing.staleAcceptedFenced.length, 0);
  const staleUnfenced = rows.reduce((a, r) => a + r.check.fencing.staleAcceptedUnfenced, 0);
  const pairs = rows.reduce((a, r) => a + r.check.fencing.pairsChecked, 0);
  const inversions = rows.reduce((a, r) => a + r.check.fencing.inversions.length, 0);
  const keysAfterTtl = rows.reduce((a, r) => a + r.check.keys.afterTtl, 0);

  L.push('# Fault-injection report');
  L.push('');
  L.push(
    `Generated by \`${info.command}\` on ${info.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC. ` +
      `The run took **${f0(info.durationMs / 1000)} s** (${f1(info.durationMs / 60000)} min) on ${info.cpus} CPU core${info.cpus === 1 ? '' : 's'}, ` +
      `Node ${info.node}, redis-server ${info.redis}.${info.quick ? ' **Quick run: short phases, figures are indicative only.**' : ''}`,
  );
  L.push('');
  L.push(
    'Everything ran on one machine over loopback. The harness started ' +
      `${info.masters} \`redis-server\` masters (no persistence) and a sixth, separate one for the protected register. Each master sat behind a TCP proxy ` +
      `with one port per client process. Each phase forked ${info.clients} fresh client processes. Each client was a Nest application context ` +
      '(`NestFactory.createApplicationContext`) with `RedlockModule.forRoot()` over its proxy ports. Its workers took locks through a provider method ' +
      `decorated with \`@Locked\` and through \`RedlockService.using\`, in turn. They contended on ${s.hotResources} hot resources, with ` +
      `${s.hotWorkers} workers per client holding ${s.hotHoldMs[0]}–${s.hotHoldMs[1]} ms on hot resources 1–${s.hotResources - 1}, while each client's first hot worker also takes long holds (${s.hotLongHoldMs[0]}–${s.hotLongHoldMs[1]} ms, longer than the TTL, living on renewals; ${Math.round(Math.min(1, s.hotLongShare * s.hotWorkers) * 100)} % of its sections) on hot resource 0, and spread over ${s.coldResources} cold resources, with ` +
      `${s.coldWorkers} workers per client holding ${s.coldHoldMs[0]}–${s.coldHoldMs[1]} ms. Settings: TTL ${s.ttl} ms, commandTimeout ${s.commandTimeout} ms, ` +
      `retryDelay ${s.retryDelay} ± ${s.retryJitter} ms, acquireTimeout ${s.acquireTimeout} ms. Fencing was on as a module option and per call on both paths. The exception is every other cold section taken through \`using\` (a quarter of the cold sections), which passes \`fencing: false\` so that the unfenced acquire path runs too; those holders are left out of the token checks.`,
  );
  L.push('');
  L.push('## Summary');
  L.push('');
  L.push(`- **${total.toLocaleString('en-US')} lock cycles** (critical sections) in ${rows.length} phases.`);
  const failedChecks = rows.reduce((a, r) => a + r.check.problems.length, 0);
  L.push(
    `- **Checks failed: ${failedChecks}** (every check below fails the run; listed per phase in the oracle table).`,
  );
  L.push(
    `- **Mutual-exclusion violations: ${unexpected} unexpected**, and ${expected} excused by a cause the masters' own history shows ` +
      '(one holder held the key on exactly a bare quorum and the fault removed it from one of those masters before the other began, or the restart guard was off and a master holding it restarted empty). They are listed per phase below.',
  );
  const minorityInversions = rows.reduce((a, r) => a + r.check.fencing.unexpectedInversions, 0);
  L.push(
    `- **Fencing:** ${pairs.toLocaleString('en-US')} successive-holder token pairs checked, with ${inversions} inversions. ` +
      `${inversions - minorityInversions} of them followed a master restarting empty, which loses its counters for good (beyond the documented guarantee, see docs/fencing.md and Findings); ${minorityInversions} happened with no counter lost${minorityInversions ? ' (unexpected: see Findings)' : ''}. ` +
      `The fenced register accepted **${staleFenced} stale writes**. The same writes sent to an unfenced log were accepted out of order **${staleUnfenced}** times.`,
  );
  L.push(
    `- **Lock keys left after their release** (still present one TTL after every client closed): ${keysAfterTtl}.`,
  );
  L.push('');
  L.push(
    '| # | fault | cycles (hot / cold) | ME violations: unexpected (beyond) | acquisition failures: busy / unavailable / other | worst unavailability (ms) | liveness after heal: max / bound (ms) | fencing: pairs / inversions / stale accepted, fenced (unfenced) | lock-loss delivery: on time / cases | keys left |',
  );
  L.push('|---|---|---|---|---|---|---|---|---|---|');
  for (const { result: r, check: c } of rows) {
    L.push(
      `| ${r.spec.id} | ${phaseTitle(r)} | ${c.cycles.total.toLocaleString('en-US')} (${c.cycles.hot} / ${c.cycles.cold.toLocaleString('en-US')}) | **${c.unexpectedViolations}** (${c.violations.length - c.unexpectedViolations}) | ${c.failures.busy} / ${c.failures.unavailable} / ${c.failures.other} | ${f0(c.unavailability.worstGapMs)} | ${f0(c.liveness.maxLatencyMs)} / ${f0(c.liveness.bound)}${c.liveness.failed.length ? ` (${c.liveness.failed.length} failed)` : ''}${c.liveness.starved ? ` (${c.liveness.starved} starved)` : ''} | ${c.fencing.pairsChecked.toLocaleString('en-US')} / ${c.fencing.inversions.length} / **${c.fencing.staleAcceptedFenced.length}** (${c.fencing.staleAcceptedUnfenced}) | ${c.delivery.onTime} / ${c.delivery.cases} | ${c.keys.afterTtl} |`,
    );
  }
  L.push('');
  L.push('## The independent oracle');
  L.push('');
  L.push(
    "Windows are bounded from the masters' own history (a `MONITOR` connection per master, eviction notifications, and the harness's record of wiped masters), " +
      "never from the library's `validity` or `signal`: see Definitions. Hot and cold sections are counted separately.",
  );
  L.push('');
  L.push(
    "| # | fault | master commands recorded | ME violations hot / cold (excused by cause) | granted after window | check passed after window: unexplained (explained by a pause/stall) | foreign deletes/renewals | failed attempts' keys left: unexplained (excused by cause) | losses without a fault (renewal silent) | records reported / recorded | keys removed by the fault: cause × count (of a bare quorum) | checks failed |",
  );
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const { result: r, check: c } of rows) {
    const hot = c.violations.filter((v) => v.resource.includes(':hot:'));
    const o = c.oracle;
    L.push(
      `| ${r.spec.id} | ${phaseTitle(r)} | ${o.events.toLocaleString('en-US')} | ${hot.length} / ${c.violations.length - hot.length} (${c.violations.length - c.unexpectedViolations}) | ${o.grantedAfterWindow} | ${o.checkAfterWindow.unexplained} (${o.checkAfterWindow.explained}) | ${o.foreignWrites} | ${o.orphanKeys} (${o.orphansExcused}) | ${o.unexplainedLosses} (${o.silentLosses}) | ${o.records.reported.toLocaleString('en-US')} / ${o.records.recorded.toLocaleString('en-US')} | ${o.removals.map((x) => `${x.cause} × ${x.count} (${x.bareQuorum})`).join(', ') || '–'} | ${c.problems.length ? c.problems.map((p) => `**${p.check}** (${p.count})`).join('; ') : 'none'} |`,
    );
  }
  L.push('');
  L.push('## Claims and waiting');
  L.push('');
  L.push(
    "Each holder's believed deadline (the clock read, then `lock.validity`, at the grant and after each extension) against the window end the masters' history gives (w(k − quorum + 1) + TTL − drift, votes of a master in its restart's amnesia window left out when the guard is on); " +
      "and on every hot key, each waiter's time waiting while no holder's lock held the key (see Definitions).",
  );
  L.push('');
  L.push(
    '| # | fault | claims checked: grants / extensions | largest overclaim (ms) | claims over | grants on a distrusted master | idle spans checked | longest idle (ms) / bound | most idle in 2 × bound (ms) | idle over bound | hot give-ups (busy) |',
  );
  L.push('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const { result: r, check: c } of rows) {
    const cl = c.claims;
    const w = c.waiting;
    L.push(
      `| ${r.spec.id} | ${phaseTitle(r)} | ${cl.grants.toLocaleString('en-US')} / ${cl.extensions.toLocaleString('en-US')} | ${Number.isFinite(cl.largestOverclaimMs) ? f1(cl.largestOverclaimMs) : '–'} | **${cl.over}** | **${cl.distrustedGrants}** | ${w.checked.toLocaleString('en-US')} | ${f0(w.longestIdleMs)} / ${f0(w.bound)} | ${f0(w.longestIdleShareMs)} | **${w.over}** | ${w.giveUps} |`,
    );
  }
  L.push('');
  L.push(
    'A negative largest overclaim is the smallest margin: every claim in that phase fell short of its window end by at least that much.',
  );
  L.push('');
  const excused = rows.flatMap((r) => r.check.violations.filter((v) => v.expected).map((v) => ({ r, v })));
  if (excused.length) {
    L.push('Violations excused by cause (first 8):');
    L.push('');
    for (const { r, v } of excused.slice(0, 8))
      L.push(`- ${r.result.spec.id} ${v.resource}: ${v.first.id} / ${v.second.id}, ${f1(v.overlapMs)} ms: ${v.cause}.`);
    L.push('');
  }
  const findings = renderFindings(rows, s.ttl);
  if (findings.length) {
    L.push('## Findings');
    L.push('');
    for (const f of findings) L.push(`- ${f}`);
    L.push('');
  }

  L.push(`![Lock holders over time](${svgName})`);
  L.push('');
  L.push(
    `The picture (\`${svgName}\`) shows, for each phase, the holders of each hot resource over time, one colour per client process. ` +
      'Shaded bands are the injected faults; purple bands are client pauses. Red marks two holders whose lock windows overlapped, which is a mutual-exclusion violation. ' +
      'Grey hatching is a holder still working after its lock window had ended, which is the stale-writer case that fencing must catch.',
  );
  L.push('');

  // The restart guard, side by side.
  const kills = rows.filter((r) => r.result.spec.fault === 'kill-restart' || r.result.spec.fault === 'kill-delayed');
  if (kills.length) {
    L.push('## The restart guard: plain Redlock against the default');
    L.push('');
    L.push(
      '| phase | guard | variant | rounds | rounds with a violation | ME violations | token inversions | stale writes accepted (fenced) |',
    );
    L.push('|---|---|---|---|---|---|---|---|');
    for (const row of kills) {
      for (const [variant, v] of byVariant(row)) {
        L.push(
          `| ${row.result.spec.id} ${row.result.spec.fault} | ${row.result.spec.guard ? 'on' : 'off'} | ${variant} | ${v.rounds} | ${v.roundsWithViolation} | ${v.violations} | ${v.inversions} | ${v.stale} |`,
        );
      }
    }
    L.push('');
  }

  // Quorum repair, side by side: the same key-loss phase with repair on (the library) and off (a patched copy).
  const keyLoss = rows.filter((r) => r.result.spec.fault === 'key-loss');
  if (keyLoss.some((r) => r.result.spec.name === 'key-loss-no-repair')) {
    L.push('## Quorum repair: the key-loss phase with repair off against on');
    L.push('');
    L.push(
      "The same phase twice: once on the library, once on a copy of it with quorum repair patched out (`no-quorum-repair` in chaos/mutants.ts). In the *bare quorum, reconnected* rounds a client cut off from two masters takes a long lock on its three, is reconnected and renews; the key is then deleted on one of its three, at the first read that shows the value on four or more masters or 1.2 s after the reconnection. *held on* is on how many masters the value was at the deletion. A violation is excused only when the masters' history shows the holder on exactly a bare quorum when its key was deleted.",
    );
    L.push('');
    L.push(
      '| phase | quorum repair | variant | rounds | held on at the deletion (masters, per round) | ME violations: unexpected | ME violations excused (bare quorum lost a key) |',
    );
    L.push('|---|---|---|---|---|---|---|');
    for (const row of keyLoss) {
      const variants = new Map<string, { rounds: number; heldOn: string[]; unexpected: number; excused: number }>();
      for (const b of row.result.bands) {
        const v = variants.get(b.variant) ?? { rounds: 0, heldOn: [], unexpected: 0, excused: 0 };
        v.rounds++;
        v.heldOn.push(b.heldOn === undefined ? '–' : String(b.heldOn));
        const vs = row.check.violations.filter((x) => x.band === b);
        v.excused += vs.filter((x) => x.expected).length;
        v.unexpected += vs.filter((x) => !x.expected).length;
        variants.set(b.variant, v);
      }
      for (const [variant, v] of variants)
        L.push(
          `| ${row.result.spec.id} | ${row.result.spec.name === 'key-loss-no-repair' ? 'OFF' : 'on'} | ${variant} | ${v.rounds} | ${v.heldOn.join(', ')} | **${v.unexpected}** | ${v.excused} |`,
        );
    }
    L.push('');
  }

  L.push('## Definitions');
  L.push('');
  L.push(
    '- **Lock cycle:** one critical section. The lock is granted, the work runs (the signal is checked every 40 ms), the commit is written to the register, and the lock is released.',
  );
  L.push(
    "- **Lock window (independent):** `[start, min(end, bound)]`. The bound does not read the library: of the k masters whose key took the holder's random value by the grant (its first write on each), written at w1 ≤ … ≤ wk, a quorum holds it only until w(k − quorum + 1) + TTL, " +
      "so the holder is entitled to at most that write (less any link delay the nemesis added) + TTL − drift (1 % + 2 ms). On the plain path every write falls inside the attempt; a key handed over is written by the releaser's script, after the waiter's ticket scripts (which carry its value) ran. An `extend()` call, stamped by the harness before the call, moves the bound to its stamp + TTL − drift only if a quorum of masters renewed (or re-took) the value after the stamp. " +
      "**A mutual-exclusion violation** is two such windows on one resource that overlap on the shared clock while both holders ran. It is *excused* only by a cause shown in the masters' history: one holder's value held the key on exactly a bare quorum just before the fault deleted or evicted it on one of those masters, before the other holder's section began (either way round: a fenced grant begins after its fencing round), or the restart guard was off and a master holding it was wiped. Any other violation fails the run.",
  );
  L.push(
    "- **Also failing the run:** a section whose value fewer than a quorum of masters ever held (grant without a majority; one short of a quorum only by masters killed -9 while its attempt ran is reported as unverifiable, not failed, since the kill drops the master's unsent MONITOR output; so is one short only by SET NX votes on an evicting master that the history takes as refused by a previous holder whose eviction notice came after that SET NX and at most 250 ms after the grant, since the eviction runs before the command that needs the memory and its notice comes late by pub/sub), or that no master was seen to hold; a section that began after its bound; a signal check passed after the bound by a client that was not paused or stalled across it; an extension the library reported but no quorum of masters confirmed; " +
      "a Lua delete or renewal of a key holding another value (except on a master within two TTLs of its reload from an AOF: its keys are then reconstructed from a scan, and reloaded keys were seen with more TTL left than they had at the kill; those are reported apart); keys of a failed attempt left to expire with no cause shown (a fault on the path to that master when the others executed the release, or the attempt's client stopped, or its event loop or the harness's (which carries its traffic) measured stalled for all but one command timeout of the key's life); a lock lost with no fault and no pause of its holder, after its holder's loop could run (measured stalls subtracted) for half a TTL with no extend() attempted; lock-loss delivery more than 5 ms late unless that client was stopped or its measured event-loop stall covers all but 5 ms from the deadline to the delivery; a read of `signal.aborted` that returned false after the deadline (never excused); stale fenced writes and token inversions with no counter lost; missing tokens; " +
      "liveness probes failed (unless that client's or the harness's measured stalls left it no stretch of two command timeouts + 200 ms to run one whole attempt in) or over their bound (unless those measured stalls cover the excess: the bound counts time in which the library could act); sections a client reported but the harness did not record; register entries of no recorded section; keys left after release; acquisition errors other than busy/unavailable.",
  );
  L.push(
    `- **Claims:** at the grant and after each \`extend()\` the workload reads the shared clock, then \`lock.validity\`, and records their sum: the deadline the holder believes (a stall between the two reads can only make it err low, so no stall is excused). ` +
      `It must not pass the window end the masters' history gives by more than ${CLAIM_TOLERANCE_MS} ms (two clocks meet there): for the grant, w(k − quorum + 1) + TTL − drift over the latest write of the value on each master by the grant (no allowance for link delays: a correct library counts from before its writes); for an extension, the same over each master's renewal of the value during the call, or an earlier window end if later. ` +
      'With the restart guard on, a write by a master between its kill and TTL − drift after it does not count: a grant whose quorum needs such a vote fails too. Overclaims fail the run even when no overlap followed.',
  );
  L.push(
    "- **Waiting:** on every hot key, per client, the time it waited (from a request to its grant or give-up) while no holder held the key (a holder holds from its grant to the earlier of its settling and its window end) must stay within TTL + retry delay + jitter + commandTimeout + 1 s, that client's and the harness's measured stalls subtracted. " +
      'A client is excused while a fault touches it (a fault naming it, or one on a quorum of the masters: a fault on a minority excuses nobody) until two TTLs and a second after it healed. Idle spans of over half a TTL may not add up to more than the bound within any stretch of twice the bound either (a key stranded but granted now and then). A waiter stuck behind a free, reserved or dead-valued key fails the run. Give-ups are hot acquisitions that ended busy.',
  );
  L.push(
    '- **Fencing:** each pair of successive holders of a resource (in start order) must have strictly increasing `fencingToken`s. ' +
      'The register runs on its own redis-server and accepts a write only if its token is above the highest it has seen, using a Lua script. ' +
      'A **stale write accepted** is a write accepted after a write from a holder that was granted the lock later. The same writes also go to an unfenced log, which shows what the resource would have seen without fencing.',
  );
  L.push(
    '- **Lock-loss delivery:** covers every lock that was declared lost, or whose validity ran out while its holder was still in the section. Its signal must abort before the validity deadline. Each case where it did not is listed with the reason. ' +
      "Two measures: the abort event (what a listener such as `fetch` sees; it needs a timer, so a stalled loop delays it), and what the section's own code observed (each read of `signal.aborted` is stamped before it; the library checks the deadline on read, so a read after the deadline must say aborted). " +
      '**Event-loop stalls** are measured in every client by a timer due every 2 ms: each gap over 8 ms between two of its runs is a stall of that process, on the shared clock (`chaos/loop-lag.ts`).',
  );
  L.push(
    '- **Worst unavailability:** the longest time any single client went without being granted any lock while the nemesis ran.',
  );
  L.push(
    `- **Liveness:** after each round heals, every client acquires a fresh resource. The bound is TTL + retry budget + 1 s reconnect back-off, plus the restart guard's window (TTL + drift + 1 s of uptime rounding) when masters restarted with the guard on.`,
  );
  L.push(
    '- **Keys left:** \`lock:*\` keys scanned on every master right after all clients closed. Any found are scanned again one TTL later. A key still there then outlived its release, and the count in the table is that second number.',
  );
  L.push('');

  L.push('## The shared clock');
  L.push('');
  L.push(
    "All processes record with `process.hrtime.bigint()`, which is libuv's `uv_hrtime()`, which is `clock_gettime(CLOCK_MONOTONIC)` on Linux. That is one clock for the whole machine, and NTP cannot step it. " +
      `It was checked with **${clock.pings} IPC ping-pongs** between the harness and ${clock.processes} client processes. The harness read the clock, sent a ping, the child read its clock and answered, and the harness read again. ` +
      `In **${clock.pings - clock.sharedOutOfOrder} of ${clock.pings}** pings the child's reading fell between the two parent readings (round trip median ${f1(clock.medianRoundTripMs)} ms, max ${f1(clock.maxRoundTripMs)} ms)${clock.sharedOutOfOrder ? `. **${clock.sharedOutOfOrder} did not: the clock is NOT shared and the results are void.**` : ', so the clock is shared.'}`,
  );
  L.push(
    `The alternative, \`performance.timeOrigin + performance.now()\`, anchors each process to the wall clock at its start. On this machine it was out of order in ${clock.originOutOfOrder} pings, and the largest distance from the parent's midpoint was ${clock.originMaxSkewMs.toFixed(3)} ms. Each process fixes that anchor once, from the wall clock, so an NTP step between two process starts would shift one against the other. It is not used. ` +
      `The library's own clock, \`performance.now()\`, kept a constant offset from the shared clock in every child, from its first ping to its shutdown (largest change ${clock.perfOffsetDriftMs.toFixed(4)} ms), so deadlines read from \`lock.validity\` convert exactly.`,
  );
  L.push('');

  L.push('## Per phase');
  for (const row of rows) {
    const { result: r, check: c } = row;
    L.push('');
    L.push(`### ${r.spec.id}: ${phaseTitle(r)}`);
    L.push('');
    L.push(
      `${f0((r.runTo - r.runFrom) / 1000)} s of faults, ${r.bands.length} rounds. There were ${c.cycles.total.toLocaleString('en-US')} cycles: ${c.cycles.viaLocked.toLocaleString('en-US')} through \`@Locked\` and ${c.cycles.viaUsing.toLocaleString('en-US')} through \`using\`, ` +
        `with ${c.cycles.hot} on hot resources. The proxies and Redis were healed after every round.`,
    );
    if (r.bands.length) {
      L.push('');
      L.push(
        '| variant | rounds | rounds with a violation | violations | token inversions | stale fenced writes accepted |',
      );
      L.push('|---|---|---|---|---|---|');
      for (const [variant, v] of byVariant(row))
        L.push(
          `| ${variant} | ${v.rounds} | ${v.roundsWithViolation} | ${v.violations} | ${v.inversions} | ${v.stale} |`,
        );
    }
    L.push('');
    L.push(
      `- Mutual exclusion: **${c.unexpectedViolations} unexpected violations**, and ${c.violations.length - c.unexpectedViolations} beyond the configuration's tolerance. ` +
        `${c.workedPastWindow} pairs had a holder still working after its window, while the next holder had the lock.`,
    );
    for (const v of c.violations.slice(0, 4)) {
      L.push(
        `  - ${v.resource}: ${v.first.id} (token ${v.first.token ?? '–'}) and ${v.second.id} (token ${v.second.token ?? '–'}) overlapped ${f1(v.overlapMs)} ms, ${f1((v.second.start - r.startedAt) / 1000)} s into the phase, during "${v.band?.label ?? 'no fault'}"${v.expected ? ` (beyond: ${v.band!.beyond})` : ' (**unexpected**)'}.`,
      );
    }
    if (c.violations.length > 4) L.push(`  - … and ${c.violations.length - 4} more.`);
    L.push(
      `- Acquisition failures: ${c.failures.busy} busy and ${c.failures.unavailable} unavailable (Redis trouble: not enough masters answered or counted), plus ${c.failures.other} other${c.failures.otherMessages.length ? ` (${c.failures.otherMessages.map((m) => `\`${m.slice(0, 160)}\``).join('; ')})` : ''}.`,
    );
    L.push(
      `- Worst unavailability: ${f0(c.unavailability.worstGapMs)} ms for ${c.unavailability.client ?? '–'}${c.unavailability.band ? `, during "${c.unavailability.band.label}"` : ''}. ` +
        `Liveness after healing: ${c.liveness.probes} probes, the slowest took ${f0(c.liveness.maxLatencyMs)} ms against a bound of ${f0(c.liveness.bound)} ms. ${c.liveness.overBound} went over the bound and ${c.liveness.failed.length} failed${c.liveness.failed.length ? `: ${c.liveness.failed.slice(0, 3).join('; ')}` : ''}.${c.liveness.starved ? ` ${c.liveness.starved} more failed while that client's event loop was measured stalled so often that it never had two command timeouts + 200 ms to run one attempt (CPU starvation of the process, excused).` : ''}`,
    );
    L.push(
      `- Fencing: ${c.fencing.pairsChecked.toLocaleString('en-US')} token pairs checked, with ${c.fencing.inversions.length} inversions (${c.fencing.unexpectedInversions} unexpected). ${c.fencing.tokensMissing} sections asked for a token and got none. ` +
        `The fenced register accepted ${c.fencing.writesAccepted.toLocaleString('en-US')} writes and rejected ${c.fencing.writesRejected}; ${c.fencing.writesWithoutToken.toLocaleString('en-US')} writes from unfenced holders went to the unfenced log only. ` +
        `${c.fencing.writesAfterWindow} writes were sent after the writer's lock window had ended. The fenced register rejected ${c.fencing.writesAfterWindowRejected} of them and accepted ${c.fencing.writesAfterWindowAccepted}, and an accepted one is harmless only if no later holder had written yet. ` +
        `**Stale writes accepted, fenced: ${c.fencing.staleAcceptedFenced.length}**, against ${c.fencing.staleAcceptedUnfenced} in the unfenced log.`,
    );
    for (const i of c.fencing.inversions.slice(0, 3)) {
      L.push(
        `  - inversion on ${i.resource}: ${i.earlier.id} had token ${i.earlier.token}, then ${i.later.id} got ${i.later.token}, during "${i.band?.label ?? 'no fault'}"${i.lostCounters.length ? `; masters that restarted empty in between: ${i.lostCounters.map((m) => `m${m + 1}`).join(' ')}` : ''}${i.expected ? ' (beyond the documented guarantee: a master restarted empty and lost its counters, see docs/fencing.md)' : ' (**unexpected**: no master lost its counters)'}.`,
      );
    }
    for (const w of c.fencing.staleAcceptedFenced.slice(0, 3)) {
      L.push(
        `  - stale write accepted on ${w.resource}: ${w.writer} (token ${w.writerToken}) was accepted after ${w.overtaken} (token ${w.overtakenToken}), which was granted later, during "${w.band?.label ?? 'no fault'}"${w.lostCounters.length ? `; masters that restarted empty in between: ${w.lostCounters.map((m) => `m${m + 1}`).join(' ')}` : ''}${w.expected ? ' (beyond the documented guarantee: a master restarted empty and lost its counters)' : ' (**unexpected**)'}.`,
      );
    }
    const reasons = new Map<string, number>();
    for (const l of c.delivery.late) {
      const key = l.why
        .replace(/from \d+ to \d+ ms into the phase/, 'from … to …')
        .replace(/[\d.]+ ms after/, '… ms after');
      reasons.set(key, (reasons.get(key) ?? 0) + 1);
    }
    L.push(
      `- Lock-loss delivery: ${c.delivery.cases} locks were lost, or ran out of validity while still in use. For ${c.delivery.onTime} of them the signal aborted before the deadline` +
        `${c.delivery.tightestMarginMs !== undefined ? `, with the tightest margin ${f1(c.delivery.tightestMarginMs)} ms` : ''}. Reads of \`signal.aborted\` that returned false after the deadline: ${c.delivery.heldReads}. ${c.delivery.late.length} abort events were late${c.delivery.late.length ? ':' : '.'}`,
    );
    for (const [why, n] of reasons) L.push(`  - ${n} × ${why}`);
    for (const l of c.delivery.late.slice(0, 3)) L.push(`    - e.g. ${l.id} on ${l.resource}: ${f1(l.lateMs)} ms late`);
    L.push(`- Lock keys: ${c.keys.afterClose} right after close, and ${c.keys.afterTtl} one TTL later.`);
    if (c.oracle.foreignAfterReload)
      L.push(
        `- Deletes or renewals of another value's key on a master within two TTLs of its AOF reload (its keys reconstructed by a scan, see Definitions): ${c.oracle.foreignAfterReload}; reported, not failed.`,
      );
    if (c.oracle.noMajorityUnverifiable)
      L.push(
        `- Grants the history cannot verify: ${c.oracle.noMajorityUnverifiable} section(s) short of a quorum in the masters' history only by masters killed -9 while the attempt ran (their last MONITOR lines die with them); not counted as grants without a majority.`,
      );
    if (c.oracle.noMajorityEvicted)
      L.push(
        `- Grants the history cannot verify under eviction: ${c.oracle.noMajorityEvicted} section(s) short of a quorum in the masters' history only by SET NX votes taken as refused on a master whose previous holder an eviction notice, stamped after that SET NX, ended (the eviction runs before the command that needs the memory; its notice comes late): not counted as grants without a majority.`,
      );
    const hs = r.harnessStalls ?? [];
    const clientStalls = r.stalls ?? [];
    L.push(
      `- Load: the harness's own event loop (which carries every client's traffic through the proxies, and the masters' MONITOR streams) stalled ${hs.length} times over 8 ms, the longest ${f0(Math.max(0, ...hs.map((x) => x.end - x.start)))} ms; the client processes recorded ${clientStalls.length} stalls, the longest ${f0(Math.max(0, ...clientStalls.map((x) => x.end - x.start)))} ms.`,
    );
    for (const d of c.keys.details.slice(0, 4)) L.push(`  - ${d}`);
    if (r.bands.length) {
      L.push('');
      L.push('<details><summary>Rounds</summary>');
      L.push('');
      for (const b of r.bands) {
        const n = c.violations.filter((v) => v.band === b).length;
        L.push(
          `- ${f1((b.start - r.startedAt) / 1000)}–${f1((b.healedAt - r.startedAt) / 1000)} s: ${b.label}${n ? ` — **${n} violation${n === 1 ? '' : 's'}**` : ''}`,
        );
      }
      L.push('');
      L.push('</details>');
    }
  }
  L.push('');
  return L.join('\n');
}

const COLORS = ['#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#17becf', '#bcbd22', '#e377c2'];

/** Lock holders over time per hot resource, one panel per phase, faults as shaded bands. */
export function renderTimeline(rows: Row[], settings: Settings, clients: number): string {
  const width = 1500;
  const left = 150;
  const right = 20;
  const laneH = 16;
  const rowsPerLane = 2;
  const panelGap = 34;
  const lanes = settings.hotResources;
  const panelH = lanes * laneH * rowsPerLane + 18;
  const top = 60;
  const height = top + rows.length * (panelH + panelGap) + 20;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
  );
  out.push(
    '<defs><pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="2" height="4" fill="#777"/></pattern></defs>',
  );
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  out.push(
    `<text x="10" y="20" font-size="15" font-weight="bold">Lock holders of the hot resources over time (one colour per client process); faults shaded</text>`,
  );
  // Legend.
  let lx = 10;
  const legend = (draw: string, label: string) => {
    out.push(`<g transform="translate(${lx},34)">${draw}<text x="20" y="10">${esc(label)}</text></g>`);
    lx += 30 + label.length * 6.2;
  };
  for (let i = 0; i < Math.min(clients, COLORS.length); i++)
    legend(`<rect width="14" height="12" fill="${COLORS[i]}" opacity="0.85"/>`, `c${i + 1}`);
  legend('<rect width="14" height="12" fill="#f5b041" opacity="0.35"/>', 'fault injected');
  legend('<rect width="14" height="12" fill="#c39bd3" opacity="0.45"/>', 'client process stopped');
  legend('<rect width="14" height="12" fill="url(#hatch)"/>', 'working after its lock window (stale holder)');
  legend('<rect width="14" height="12" fill="none" stroke="#d62728" stroke-width="2"/>', 'mutual-exclusion violation');

  rows.forEach(({ result: r, check: c }, p) => {
    const y0 = top + p * (panelH + panelGap);
    const t0 = r.runFrom - 1_000;
    const t1 = Math.max(r.runTo, t0 + 1_000);
    const x = (t: number) => left + ((Math.min(Math.max(t, t0), t1) - t0) / (t1 - t0)) * (width - left - right);
    out.push(`<text x="10" y="${y0 + 12}" font-weight="bold">${esc(`${r.spec.id}: ${phaseTitle(r)}`)}</text>`);
    out.push(
      `<text x="${width - right}" y="${y0 + 12}" text-anchor="end">${esc(`${c.cycles.total.toLocaleString('en-US')} cycles · ${c.unexpectedViolations} unexpected / ${c.violations.length - c.unexpectedViolations} beyond-tolerance violations · ${c.fencing.staleAcceptedFenced.length} stale fenced writes accepted`)}</text>`,
    );
    const py = y0 + 18;
    const ph = lanes * laneH * rowsPerLane;
    out.push(
      `<rect x="${left}" y="${py}" width="${width - left - right}" height="${ph}" fill="#fafafa" stroke="#ccc"/>`,
    );
    for (const b of r.bands) {
      const bx = x(b.start);
      const bw = Math.max(2, x(b.healedAt || b.end) - bx);
      const isPause = b.kind === 'client-pause';
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${py}" width="${bw.toFixed(1)}" height="${ph}" fill="${isPause ? '#c39bd3' : '#f5b041'}" opacity="${isPause ? 0.45 : 0.35}"><title>${esc(b.label)}</title></rect>`,
      );
    }
    for (const pause of r.pauses) {
      out.push(
        `<rect x="${x(pause.start).toFixed(1)}" y="${py}" width="${Math.max(2, x(pause.end) - x(pause.start)).toFixed(1)}" height="${ph}" fill="#c39bd3" opacity="0.3"/>`,
      );
    }
    // Seconds axis.
    for (let s = 0; s * 1_000 <= t1 - t0; s += 5) {
      const tx = x(t0 + s * 1_000);
      out.push(
        `<line x1="${tx.toFixed(1)}" x2="${tx.toFixed(1)}" y1="${py + ph}" y2="${py + ph + 4}" stroke="#999"/><text x="${tx.toFixed(1)}" y="${py + ph + 14}" text-anchor="middle" fill="#666" font-size="9">${s}s</text>`,
      );
    }
    const violating = new Set(c.violations.flatMap((v) => [v.first.id, v.second.id]));
    for (let lane = 0; lane < lanes; lane++) {
      const resource = `${r.spec.id}:hot:${lane}`;
      const ly = py + lane * laneH * rowsPerLane;
      out.push(`<text x="${left - 6}" y="${ly + laneH + 4}" text-anchor="end">${esc(`hot:${lane}`)}</text>`);
      if (lane > 0) out.push(`<line x1="${left}" x2="${width - right}" y1="${ly}" y2="${ly}" stroke="#ddd"/>`);
      const ends: number[] = new Array(rowsPerLane).fill(-Infinity);
      const sections = r.sections.filter((s) => s.resource === resource).sort((a, b) => a.start - b.start);
      for (const s of sections) {
        let row = ends.findIndex((e) => e <= s.start);
        if (row < 0) row = rowsPerLane - 1;
        ends[row] = Math.max(ends[row], s.end);
        const sy = ly + row * laneH + 2;
        const we = windowEnd(s);
        const color = COLORS[(Number(s.client.replace(/\D/g, '')) - 1 + COLORS.length) % COLORS.length];
        const title = `${s.id} ${s.via} token ${s.fencingToken ?? '–'} commit ${s.commit}${s.abortedAt ? ' (lost)' : ''}`;
        out.push(
          `<rect x="${x(s.start).toFixed(1)}" y="${sy}" width="${Math.max(0.6, x(we) - x(s.start)).toFixed(1)}" height="${laneH - 4}" fill="${color}" opacity="0.85"${violating.has(s.id) ? ' stroke="#d62728" stroke-width="2"' : ''}><title>${esc(title)}</title></rect>`,
        );
        if (s.end > we + 1) {
          out.push(
            `<rect x="${x(we).toFixed(1)}" y="${sy}" width="${Math.max(0.6, x(s.end) - x(we)).toFixed(1)}" height="${laneH - 4}" fill="url(#hatch)" stroke="${color}" stroke-width="0.5"><title>${esc(`${s.id} still working after its lock window`)}</title></rect>`,
          );
        }
      }
    }
    for (const v of c.violations) {
      if (!v.resource.includes(':hot:')) continue;
      const lane = Number(v.resource.split(':').pop());
      const ly = py + lane * laneH * rowsPerLane;
      out.push(
        `<rect x="${x(v.second.start).toFixed(1)}" y="${ly}" width="${Math.max(2, x(v.second.start + v.overlapMs) - x(v.second.start)).toFixed(1)}" height="${laneH * rowsPerLane}" fill="#d62728" opacity="0.6"><title>${esc(`violation: ${v.first.id} / ${v.second.id}, ${v.overlapMs.toFixed(1)} ms`)}</title></rect>`,
      );
    }
  });
  out.push('</svg>');
  return out.join('\n');
}

/**
 * The harness's watcher of the restart guard, read: the ms after which it saw each restarted master
 * trusted again, the restarts it never saw distrusted (`ms: null`), and the trusts before `windowMs`.
 * A master never seen distrusted is not a trust at 0 ms: the watcher's own connection may have come
 * back only after the window, when no distrust is due; the claims check judges grants from the
 * masters' history instead.
 *
 * @example
 * readGuardWatch([{ ms: 1020 }, { ms: null }], 1012); // { observed: [1020], unseen: 1, tooSoon: [] }
 */
export function readGuardWatch(
  watched: readonly { ms: number | null }[],
  windowMs: number,
): { observed: number[]; unseen: number; tooSoon: number[] } {
  const observed = watched.flatMap((t) => (t.ms === null ? [] : [t.ms]));
  return { observed, unseen: watched.length - observed.length, tooSoon: observed.filter((ms) => ms < windowMs) };
}

/** What the figures show, worded from the data (a finding appears only when the run shows it). */
function renderFindings(rows: Row[], ttl: number): string[] {
  const out: string[] = [];
  const restartBands = rows.flatMap((r) => r.result.bands.filter((b) => b.restarted.length > 0));
  const restartsOfMasters = restartBands.reduce((a, b) => a + b.restarted.length, 0);
  const early = restartBands.flatMap((b) => b.earlyUptime ?? []);
  const guarded = rows.filter((r) => r.result.spec.guard && r.result.spec.fault.startsWith('kill'));
  const unguarded = rows.filter((r) => !r.result.spec.guard && r.result.spec.fault.startsWith('kill'));
  const guardedViolations = guarded.flatMap((r) => r.check.violations.filter((v) => !v.expected));
  const unguardedViolations = unguarded.flatMap((r) => r.check.violations);

  if (unguarded.length && guarded.length) {
    out.push(
      `**Restart guard.** With plain Redlock (\`restartGuard: false\`), immediate restarts without persistence produced ${unguardedViolations.length} mutual-exclusion violation${unguardedViolations.length === 1 ? '' : 's'}. ` +
        `With the guard on, under the same faults, there were ${guardedViolations.length}.`,
    );
  }
  const window = ttl + ttl * 0.01 + 2; // the guard's window: TTL + drift (driftFactor 0.01 + 2 ms)
  const { observed, unseen, tooSoon } = readGuardWatch(
    restartBands.flatMap((b) => b.guardTrustedAfter ?? []),
    window,
  );
  const unseenNote = unseen
    ? ` After ${unseen} other restart${unseen === 1 ? '' : 's'} it never saw the master distrusted within 4 s (its own connection may have come back only after the window); the claims table's "grants on a distrusted master" judges those from the masters' history.`
    : '';
  if (guardedViolations.length || tooSoon.length) {
    const inEarly = guardedViolations.filter((v) => (v.band?.earlyUptime ?? []).length > 0).length;
    out.push(
      '**Library bug: the restart guard lets a restarted master vote too early.** ' +
        (observed.length
          ? `A Redlock with default options in the harness watched the same masters. After ${tooSoon.length} of ${observed.length} restarts it counted the master's votes again only ${Math.min(...tooSoon)}–${Math.max(...tooSoon)} ms after the restart began, instead of after the ${Math.round(window)} ms window (TTL + drift). `
          : '') +
        (guardedViolations.length
          ? `${guardedViolations.length} mutual-exclusion violation${guardedViolations.length === 1 ? '' : 's'} happened with the guard on, ${inEarly} of them in rounds where a restarted master's INFO said \`uptime_in_seconds:1\` within milliseconds of starting. `
          : 'In this run that did not coincide with a holder whose lock was on the restarted masters, so no violation resulted. It did in other runs. ') +
        'The likely cause: Redis computes that figure from two wall-clock readings, each truncated to the second, so it can overstate the real uptime by almost a second. A guard that takes `uptime_in_seconds × 1000` as a lower bound distrusts such a master for only `TTL + drift − 1000` ms, which is 12 ms for a 1 s TTL. ' +
        'Reproduction: `node dist-chaos/chaos/repro-guard-uptime.js`, and the last test in `test/chaos/chaos.spec.ts`. The guard must take `(uptime_in_seconds − 1) × 1000` as the lower bound.' +
        unseenNote,
    );
  } else if (observed.length) {
    out.push(
      `**Restart guard window.** A Redlock with default options in the harness watched the same masters. After each of ${observed.length} restarts it saw distrusted, it counted the master's votes again ${Math.min(...observed)}–${Math.max(...observed)} ms after the restart began, never before the ${Math.round(window)} ms window (TTL + drift).` +
        unseenNote,
    );
  }
  if (restartsOfMasters) {
    const fastest = early.length ? Math.min(...early.map((e) => e.afterMs)) : undefined;
    out.push(
      `**Redis uptime granularity.** Of ${restartsOfMasters} master restarts, ${early.length} reported \`uptime_in_seconds\` ≥ 1 within 300 ms of answering again${fastest !== undefined ? `, the earliest after ${fastest} ms` : ''}. ` +
        'A delayed-restart rule based on that figure must allow a full second for the truncation.',
    );
  }
  const quorum = Math.floor(rows[0].result.masterCount / 2) + 1;
  const minorityLoss = rows.flatMap((r) =>
    r.check.fencing.inversions.filter((i) => i.expected && i.lostCounters.length < quorum),
  );
  if (minorityLoss.length) {
    out.push(
      `**Documented limit: fencing tokens went backwards ${minorityLoss.length} times after only one or two masters restarted empty.** ` +
        'A holder whose fence write reached only a bare quorum (three masters, because two were unreachable to it) leaves its token on exactly three counters. If one of those three restarts empty, the next holder can win a quorum of the other masters and get a token at or below the previous one. ' +
        'Counters have no expiry, so the restart guard cannot wait this away. docs/fencing.md states the guarantee accordingly: tokens need masters that keep their data (persistence) to survive crashes. ' +
        'Reproduction: `node dist-chaos/chaos/repro-fencing.js` (deterministic). The fenced register still refuses any token lower than one it has seen.',
    );
  }
  const inversions = rows.flatMap((r) => r.check.fencing.inversions.filter((i) => !i.expected));
  if (inversions.length) {
    const withLoss = inversions.filter((i) => i.lostCounters.length > 0).length;
    const guardedInversions = rows
      .filter((r) => r.result.spec.guard)
      .reduce((a, r) => a + r.check.fencing.unexpectedInversions, 0);
    out.push(
      `**Library limit: fencing tokens went backwards although at most a minority of masters lost their counters.** There were ${inversions.length} such inversions, ${guardedInversions} of them with the restart guard on. In ${withLoss} of them one or two masters had restarted empty between the two holders; ${inversions.length - withLoss} had no restart in between and are unexplained. ` +
        'The mechanism: a holder whose fence write reached only a bare quorum (three masters, because two were unreachable to it) leaves its token on exactly three counters. If one of those three restarts empty, the next holder can reach a quorum of the other three masters. They share only the amnesiac master with the first quorum, so it gets a token at or below the previous one. ' +
        'The restart guard does not help: counters have no expiry, so waiting a TTL does not make a forgotten counter harmless. ' +
        'The argument in `lib/kinds/fencing.ts` ("QA and QB share a master, whose counter was already ≥ tA") needs that shared master to keep its counter. ' +
        "Reproduction: `node dist-chaos/chaos/repro-fencing.js` (deterministic: B gets token 2 after A's 4, and A's stale write is accepted). " +
        'The options are masters that persist (`appendfsync always`), fence quorums that overlap in at least f + 1 masters to survive f amnesiac ones (for example 4 of 5 for f = 1), or documenting that the guarantee holds only when masters keep their data.',
    );
  }
  const staleUnexpected = rows.flatMap((r) => r.check.fencing.staleAcceptedFenced.filter((w) => !w.expected));
  if (staleUnexpected.length) {
    out.push(
      `**Stale writes accepted by the fenced register: ${staleUnexpected.length}**, outside the documented assumptions. See the per-phase sections.`,
    );
  }
  const aimed = rows.flatMap((r) => r.result.bands.filter((b) => b.heldOn !== undefined));
  if (aimed.length) {
    const bare = aimed.filter((b) => b.heldOn! * 2 <= rows[0].result.masterCount + 1).length;
    const keyLoss = rows
      .filter((r) => r.result.spec.fault === 'key-loss')
      .flatMap((r) => r.check.violations.filter((v) => v.band?.variant === 'minority')).length;
    out.push(
      bare
        ? `**Bare quorums occur under contention.** ${bare} of the ${aimed.length} fresh hot locks the nemesis aimed at (single-master restarts and single-master key losses) ${bare === 1 ? 'was' : 'were'} held on only a bare quorum of masters. Split votes leave the winner with 3 of 5, and the library never adds its key to the other masters later (S6 in the research notes). ` +
            `That is why losing one master's copy of the key, through a clock jump or a restart without the guard, can let a second holder in: ${keyLoss} violation${keyLoss === 1 ? '' : 's'} came from single-master key loss. ` +
            'A background "fill" of the masters that refused, done only while the lock is valid and a majority still confirms it, would shrink this window.'
        : `**Bare quorums.** None of the ${aimed.length} fresh hot locks the nemesis aimed at (single-master restarts and key losses) was on only a bare quorum in this run, and ${keyLoss} violation${keyLoss === 1 ? '' : 's'} came from single-master key loss. Split votes under contention can leave a winner with 3 of 5 (other runs saw it), and the library never fills in the other masters later.`,
    );
  }
  const late = rows.flatMap((r) => r.check.delivery.late);
  const unexplained = late.filter((l) => l.why.startsWith('unexplained'));
  const stalled = late.filter((l) => l.why.startsWith('stalled'));
  const cases = rows.reduce((a, r) => a + r.check.delivery.cases, 0);
  const heldReads = rows.reduce((a, r) => a + r.check.delivery.heldReads, 0);
  const stallCount = rows.reduce((a, r) => a + (r.result.stalls ?? []).length, 0);
  const longest = Math.max(0, ...rows.flatMap((r) => (r.result.stalls ?? []).map((x) => x.end - x.start)));
  out.push(
    `**Lock-loss delivery.** ${cases} locks were lost or ran out of validity while still in use. ${cases - late.length} were signalled before their deadline. ${late.length - unexplained.length - stalled.length} were late because the holder's process was stopped across its deadline (no timer can run in a stopped process, so only fencing protects that case), and ${stalled.length} because that client's own event loop was measured stalled from the deadline to the delivery (CPU starvation of the client process on this loaded machine: the clients recorded ${stallCount.toLocaleString('en-US')} stalls over 8 ms, the longest ${f0(longest)} ms). ` +
      `${unexplained.length ? `**${unexplained.length} were late with no stall or pause to explain it** (see the per-phase sections).` : 'None was late for any other reason.'} ` +
      `Reads of \`signal.aborted\` by the sections' own code that returned false after the deadline: **${heldReads}**.`,
  );
  return out;
}

/** The `--mutants` report: each planted bug, the pass that ran on it, and the checks that caught it. */
export function renderMutants(
  verdicts: {
    mutant: import('./mutants.js').Mutant;
    phase: string;
    cycles: PhaseCheck['cycles'];
    caughtBy: PhaseCheck['problems'];
  }[],
  info: { durationMs: number; seconds: number; command: string; startedAt: Date },
): string {
  const L: string[] = [];
  const caught = verdicts.filter((v) => v.caughtBy.length > 0).length;
  L.push('# Planted bugs (`npm run chaos -- --mutants`)', '');
  L.push(
    `Generated by \`${info.command}\` on ${info.startedAt.toISOString()}, ${(info.durationMs / 1000).toFixed(0)} s in all, ${info.seconds} s of faults per pass. ` +
      'Each bug is a text patch (chaos/mutants.ts) applied to a copy of `lib/`, compiled, and loaded by the client processes of one short chaos pass. ' +
      "A bug counts as caught when at least one check of the checker fails the pass; the checks never read the library's `validity` or `signal` to decide a window (see chaos/README.md).",
    '',
  );
  L.push(`**${caught} of ${verdicts.length} caught.**`, '');
  L.push('| mutant | planted bug | pass | cycles (hot / cold) | caught by (count) |');
  L.push('|---|---|---|---|---|');
  for (const v of verdicts) {
    L.push(
      `| ${v.mutant.name} | ${v.mutant.bug} | ${v.phase} | ${v.cycles.total} (${v.cycles.hot} / ${v.cycles.cold}) | ${v.caughtBy.length ? v.caughtBy.map((p) => `${p.check} (${p.count})`).join('; ') : '**not caught**'} |`,
    );
  }
  L.push('');
  return L.join('\n');
}
