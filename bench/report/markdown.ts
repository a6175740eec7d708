/** docs/evidence/bench-results.md: how the run was made, then per master count the tables of medians, spreads and ratios. */
import type { RetryProfile } from '../adapters/types.js';
import type { MastersResults, RunResults, SubjectInfo } from '../model.js';
import { pairedRatio, pairedSpread, spread } from '../stats.js';
import type { ContentionResult } from '../workloads/contention.js';
import { med, num, ratio, short } from './format.js';

const OURS = 'quorum-lock';
const RAW = 'raw';
const RAW_AP = 'raw-ap';

/** A Markdown table; the first `text` columns are left-aligned, the rest (numbers) right-aligned. */
const table = (head: string[], rows: string[][], text = 1): string =>
  [
    `| ${head.join(' | ')} |`,
    `|${head.map((_, i) => (i < text ? ' --- ' : ' ---: ')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');

const nameOf = (subjects: SubjectInfo[], id: string): string => {
  const s = subjects.find((x) => x.id === id);
  return s ? (id === OURS ? `**${s.label}**` : s.label) : id;
};

type Series = Record<string, number[]>;

/** Per subject, one metric per round. */
function series<T>(table: Record<string, T[]>, metric: (r: T) => number): Series {
  return Object.fromEntries(Object.entries(table).map(([id, runs]) => [id, runs.map(metric)]));
}

/** The peer with the best median (`better` says which of two values is better). */
function bestPeer(s: Series, subjects: SubjectInfo[], better: (a: number, b: number) => boolean): string | undefined {
  let best: string | undefined;
  for (const sub of subjects) {
    if (sub.kind !== 'library' || sub.id === OURS || !s[sub.id]) continue;
    const m = spread(s[sub.id]).median;
    if (!Number.isFinite(m)) continue;
    if (best === undefined || better(m, spread(s[best]).median)) best = sub.id;
  }
  return best;
}

function latencySection(r: MastersResults, subjects: SubjectInfo[]): string {
  const p50 = series(r.latency, (x) => x.p50);
  const p99 = series(r.latency, (x) => x.p99);
  const rows = subjects
    .filter((s) => p50[s.id])
    .map((s) => [
      nameOf(subjects, s.id),
      med(spread(p50[s.id])),
      med(spread(p99[s.id])),
      p50[RAW] ? ratio(pairedRatio(p50[s.id], p50[RAW])) : '–',
      p50[OURS] && s.id !== OURS ? ratio(pairedRatio(p50[OURS], p50[s.id])) : '',
    ]);
  return table(['subject', 'p50 µs', 'p99 µs', 'p50 ÷ raw quorum', 'quorum-lock p50 ÷ this'], rows);
}

function throughputSection(r: MastersResults, subjects: SubjectInfo[]): string {
  const cps = series(r.throughput, (x) => x.cyclesPerSec);
  const errors = series(r.throughput, (x) => x.errors);
  const client = series(r.throughput, (x) => x.clientCpuUs ?? NaN);
  const servers = series(r.throughput, (x) => x.serverCpuUs ?? NaN);
  const rows = subjects
    .filter((s) => cps[s.id])
    .map((s) => [
      nameOf(subjects, s.id),
      med(spread(cps[s.id]), (n) => num(n)),
      cps[RAW] ? ratio(pairedRatio(cps[s.id], cps[RAW])) : '–',
      cps[RAW_AP] ? ratio(pairedRatio(cps[s.id], cps[RAW_AP])) : '–',
      cps[OURS] && s.id !== OURS ? ratio(pairedRatio(cps[OURS], cps[s.id])) : '',
      med(spread(client[s.id]), (n) => num(n)),
      med(spread(servers[s.id]), (n) => num(n)),
      num(errors[s.id].reduce((a, b) => a + b, 0)),
    ]);
  return table(
    [
      'subject',
      'cycles/s',
      '÷ raw quorum',
      '÷ raw auto-pipelined',
      'quorum-lock ÷ this',
      'client CPU µs/cycle',
      'servers CPU µs/cycle',
      'errors',
    ],
    rows,
  );
}

function contentionRows(
  t: Record<string, ContentionResult[]>,
  subjects: SubjectInfo[],
  profile: RetryProfile,
  fallback?: Record<string, ContentionResult[]>,
): string[][] {
  return subjects
    .filter((s) => s.kind === 'library' && (t[s.id] || (s.retry.fast === null && fallback?.[s.id])))
    .map((s) => {
      const same = !t[s.id];
      const runs = t[s.id] ?? fallback![s.id];
      const m = (f: (x: ContentionResult) => number, fmt?: (n: number) => string) => med(spread(runs.map(f)), fmt);
      return [
        nameOf(subjects, s.id) + (same ? ' (its default is 10 ms: same run as above)' : ''),
        profile === 'fast' ? (s.retry.fast ?? s.retry.default) : s.retry.default,
        m((x) => x.acquisitionsPerSec),
        m((x) => x.handoffsPerSec),
        m((x) => x.waitP50),
        m((x) => x.waitP99),
        short(Math.max(...runs.map((x) => x.waitMax).filter(Number.isFinite))),
        m((x) => x.idleGapP50),
        short(Math.max(...runs.map((x) => x.idleGapMax).filter(Number.isFinite))),
        m(
          (x) => x.jain,
          (n) => num(n, 3),
        ),
        num(runs.reduce((a, x) => a + x.overlaps, 0)),
        m((x) => x.failedCallsPerSec),
        num(runs.reduce((a, x) => a + x.unserved, 0)),
      ];
    });
}

function contentionSection(r: MastersResults, subjects: SubjectInfo[], profile: RetryProfile): string {
  const t = r.contention[profile];
  const rows = contentionRows(t, subjects, profile, profile === 'fast' ? r.contention.default : undefined);
  if (rows.length === 0) return '';
  const head = [
    'subject',
    'retry settings',
    'acquisitions/s',
    'handoffs/s',
    'handoff wait p50 ms',
    'p99 ms',
    'max ms',
    'idle gap p50 ms',
    'longest idle gap ms',
    "Jain's index",
    'overlaps',
    'failed acquire calls/s',
    'unserved',
  ];
  return table(head, rows, 2);
}

function decoratorSection(r: MastersResults): string {
  const d = r.decorator;
  if (!d) return '';
  const lat = (s: 'using' | 'locked') => d[s].latency.map((x) => x.p50);
  const cps = (s: 'using' | 'locked') => d[s].throughput.map((x) => x.cyclesPerSec);
  const rows = (['using', 'locked'] as const).map((s) => [
    s === 'using' ? '`RedlockService.using(key, ttl, fn)`' : "`@Locked('#key', ttl)` method",
    med(spread(lat(s))),
    med(spread(cps(s)), (n) => num(n)),
    med(spread(d[s].throughput.map((x) => x.clientCpuUs ?? NaN)), (n) => num(n)),
  ]);
  const latOver = pairedRatio(lat('locked'), lat('using')) - 1;
  const tpOver = pairedRatio(cps('using'), cps('locked')) - 1;
  return (
    table(['style', 'sequential p50 µs', 'cycles/s (64 callers)', 'client CPU µs/cycle'], rows) +
    `\n\n@Locked overhead over \`using\`: **${pct(latOver)}** on sequential p50 latency, **${pct(tpOver)}** on throughput (medians of per-round ratios; target ≤ 5 %).`
  );
}

function routeSection(r: MastersResults): string {
  const route = r.route;
  if (!route) return '';
  const rows: string[][] = [];
  for (const [platform, arms] of Object.entries(route)) {
    const rps = (id: string) => (arms[id] ?? []).map((x) => x.requestsPerSec);
    for (const [id, name] of [
      ['unlocked', 'unlocked route'],
      ['raw', 'raw auto-pipelined quorum by hand around the handler (the least a lock costs)'],
      ['locked', "`@Locked('item:#id')`"],
    ] as const) {
      if (!arms[id]) continue;
      const ratios = id === 'unlocked' ? undefined : pairedSpread(rps(id), rps('unlocked'));
      rows.push([
        `${platform}: ${name}`,
        med(spread(rps(id)), (n) => num(n)),
        ratios ? med(ratios, (n) => n.toFixed(2)) : '',
        med(spread(arms[id].map((x) => x.clientCpuUs ?? NaN)), (n) => num(n)),
        med(spread(arms[id].map((x) => x.serverCpuUs ?? NaN)), (n) => num(n)),
        num(arms[id].reduce((a, x) => a + x.errors, 0)),
      ]);
    }
  }
  return table(
    ['route', 'requests/s', '÷ unlocked, per round', 'client CPU µs/request', 'servers CPU µs/request', 'errors'],
    rows,
  );
}

const pct = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %` : '–');
const mark = (ok: boolean | undefined) => (ok === undefined ? '–' : ok ? 'met' : '**missed**');

function targetsSection(
  r: MastersResults,
  subjects: SubjectInfo[],
  decorated: MastersResults | undefined,
  routed: MastersResults | undefined,
): string {
  const rows: string[][] = [];
  const p50 = series(r.latency, (x) => x.p50);
  if (p50[OURS]) {
    const best = bestPeer(p50, subjects, (a, b) => a < b);
    if (best) {
      const x = pairedRatio(p50[OURS], p50[best]);
      rows.push([
        `uncontended p50 no slower than the best peer (${best})`,
        `${ratio(x)} of ${best}`,
        '≤ 1.00×',
        mark(x <= 1),
      ]);
    }
    if (p50[RAW]) {
      const x = pairedRatio(p50[OURS], p50[RAW]);
      const sp = pairedSpread(p50[OURS], p50[RAW]);
      rows.push(['uncontended p50 ≤ 1.1× the raw quorum', ratio(x), '≤ 1.10×', mark(x <= 1.1)]);
      rows.push([
        'uncontended p50 ≤ 1.0× the raw quorum (issue #25)',
        `${ratio(x)} (${ratio(sp.min)}–${ratio(sp.max)})`,
        '≤ 1.00×',
        mark(x <= 1),
      ]);
    }
  }
  const cps = series(r.throughput, (x) => x.cyclesPerSec);
  if (cps[OURS]) {
    const best = bestPeer(cps, subjects, (a, b) => a > b);
    if (best) {
      const x = pairedRatio(cps[OURS], cps[best]);
      const sp = pairedSpread(cps[OURS], cps[best]);
      rows.push([`throughput ≥ 2× the best peer (${best})`, ratio(x), '≥ 2.00×', mark(x >= 2)]);
      rows.push([
        `throughput ≥ 2.5× the best peer (${best}, issue #25)`,
        `${ratio(x)} (${ratio(sp.min)}–${ratio(sp.max)})`,
        '≥ 2.50×',
        mark(x >= 2.5),
      ]);
    }
    if (cps[RAW_AP]) {
      const x = pairedRatio(cps[OURS], cps[RAW_AP]);
      const sp = pairedSpread(cps[OURS], cps[RAW_AP]);
      rows.push(['throughput no slower than raw auto-pipelined ioredis', ratio(x), '≥ 1.00×', mark(x >= 1)]);
      rows.push([
        'throughput ≥ 1.3× raw auto-pipelined ioredis (issue #25)',
        `${ratio(x)} (${ratio(sp.min)}–${ratio(sp.max)})`,
        '≥ 1.30×',
        mark(x >= 1.3),
      ]);
    }
  }
  for (const profile of ['default', 'fast'] as const) {
    const t = r.contention[profile];
    if (!t[OURS]) continue;
    const label = profile === 'fast' ? '10 ms retry delay' : 'default retry settings';
    // Peers whose 10 ms profile is their default were measured once, under `default`.
    const merged: Record<string, ContentionResult[]> = { ...(profile === 'fast' ? r.contention.default : {}), ...t };
    for (const s of subjects) if (profile === 'fast' && s.retry.fast !== null && !t[s.id]) delete merged[s.id];
    const hand = series(merged, (x) => x.handoffsPerSec);
    const p99 = series(merged, (x) => x.waitP99);
    const bestH = bestPeer(hand, subjects, (a, b) => a > b);
    if (bestH) {
      const x = pairedRatio(hand[OURS], hand[bestH]);
      rows.push([`contention (${label}): handoffs/s ≥ 5× the best peer (${bestH})`, ratio(x), '≥ 5.00×', mark(x >= 5)]);
    }
    const bestW = bestPeer(p99, subjects, (a, b) => a < b);
    if (bestW) {
      const x = pairedRatio(p99[OURS], p99[bestW]);
      rows.push([
        `contention (${label}): handoff wait p99 ≤ 1/10 of the best peer's (${bestW})`,
        ratio(x),
        '≤ 0.10×',
        mark(x <= 0.1),
      ]);
    }
    const j = spread(t[OURS].map((x) => x.jain)).median;
    rows.push([`contention (${label}): Jain's index ≥ 0.95`, num(j, 3), '≥ 0.95', mark(j >= 0.95)]);
    const o = t[OURS].reduce((a, x) => a + x.overlaps, 0);
    rows.push([`contention (${label}): overlaps`, num(o), '0', mark(o === 0)]);
  }
  const d = decorated?.decorator;
  if (d) {
    const where = `${decorated.masters} master${decorated.masters > 1 ? 's' : ''}`;
    const lat =
      pairedRatio(
        d.locked.latency.map((x) => x.p50),
        d.using.latency.map((x) => x.p50),
      ) - 1;
    const tp =
      pairedRatio(
        d.using.throughput.map((x) => x.cyclesPerSec),
        d.locked.throughput.map((x) => x.cyclesPerSec),
      ) - 1;
    rows.push([`@Locked overhead over \`using\`, sequential p50 (${where})`, pct(lat), '≤ +5 %', mark(lat <= 0.05)]);
    rows.push([`@Locked overhead over \`using\`, throughput (${where})`, pct(tp), '≤ +5 %', mark(tp <= 0.05)]);
  }
  for (const [platform, arms] of Object.entries(routed?.route ?? {})) {
    if (!arms.locked || !arms.unlocked) continue;
    const sp = pairedSpread(
      arms.locked.map((a) => a.requestsPerSec),
      arms.unlocked.map((a) => a.requestsPerSec),
    );
    const x = sp.median;
    rows.push([
      `\`@Locked\` route ÷ unlocked route, ${platform} (${routed!.masters} masters, issue #25)`,
      `${ratio(x)} (${ratio(sp.min)}–${ratio(sp.max)})`,
      '≥ 0.80×',
      mark(x >= 0.8),
    ]);
  }
  return rows.length
    ? table(['target', 'measured: median (min–max) of per-round ratios', 'target', 'verdict'], rows)
    : '';
}

export function renderMarkdown(res: RunResults, svgFile: string): string {
  const c = res.config;
  const m = res.machine;
  const subjects = res.subjects;
  const out: string[] = [];
  const largest = res.byMasters[res.byMasters.length - 1];
  out.push(
    '# Benchmark results',
    '',
    `Generated by \`${res.command}\` on ${res.startedAt.slice(0, 16).replace('T', ' ')} UTC, in ${num(res.durationSec)} s. ` +
      `Library revision: ${res.revision}. Regenerate with \`npm run bench\`; \`npm run bench -- --quick\` is a smoke test.`,
    '',
    `![cycles per second and p50 latency per library](${svgFile})`,
    '',
    '## How it ran',
    '',
    `- Machine: ${m.nproc} cores (\`nproc\`), ${m.cpu}, Linux ${m.kernel} (\`uname -r\`), Node ${m.node}, redis-server ${m.redis}, ioredis ${m.ioredis}. ` +
      `Load average ${m.loadavg} before, ${m.loadavgAfter} after (the machine is shared).`,
    `- Pinning: ${res.pinning}.`,
    `- Masters: independent \`redis-server\` processes on 127.0.0.1 started by \`tools/redis-masters.ts\` (no persistence); ${c.masters.join(', ')} masters; all sets kept running for the whole run. ` +
      'Measurements start once the masters have been up longer than the TTL: the restart guard of nestjs-quorum-lock (on by default) ignores the votes of younger masters.',
    `- ${c.rounds} round${c.rounds > 1 ? 's' : ''}; in each round every subject runs every workload once, in an order rotated by one per round, so that drift on the shared machine affects all alike. ` +
      'Tables show the **median over rounds (min–max)**; ratios are medians of the per-round ratios (both measured in the same round).',
    `- TTL ${num(c.ttl)} ms everywhere. Latency: ${c.latency.samples} sequential cycles after ${c.latency.warmup} warm-up cycles, fresh key each. ` +
      `Throughput: ${c.throughput.concurrency} concurrent callers on distinct fresh keys, ${num(c.throughput.windowMs)} ms counted after ${c.throughput.warmupMs} ms warm-up. ` +
      `Contention: ${c.contention.callers} callers on one key, each holding it ${c.contention.holdMs} ms, ${num(c.contention.windowMs)} ms window.`,
    "- CPU per cycle (throughput tables): this process's user+system time (`process.cpuUsage()`, all threads) and the masters' on-CPU time " +
      "(`/proc/PID/schedstat` of each redis-server's main thread, summed), over the counted window, divided by the cycles counted.",
    '',
    table(
      ['subject', 'version', 'default retry settings', '"10 ms" profile'],
      subjects.map((s) => [
        nameOf(subjects, s.id),
        s.version,
        s.retry.default,
        s.kind === 'limit' ? '–' : (s.retry.fast ?? 'its default'),
      ]),
      4,
    ),
    '',
    'Subjects: **nestjs-quorum-lock** is `new Redlock({ nodes: urls })` from `lib/` (its own connections), `acquire(key, ttl)` then `lock.release()`. ' +
      'node-redlock is `new Redlock(clients)` with one ioredis client per master and an `error` listener, `acquire([key], ttl)`, `lock.release()`. ' +
      'redlock-universal is `new RedLock({ adapters: clients.map(c => new IoredisAdapter(c)), key, ttl })` per key, `acquire()`, `release(handle)`. ' +
      'redis-semaphore is `new RedlockMutex(clients, key, { lockTimeout: ttl })`, `acquire()`, `release()` (its default refresh timer stays on). ' +
      '**raw quorum** is the physical limit: `SET key value NX PX ttl` to every master at once, resolved when a quorum said OK, then the compare-and-delete script (EVALSHA) to every master, resolved when a quorum answered; no retries, no bookkeeping. ' +
      '"auto-pipelined" is the same with ioredis `enableAutoPipelining: true`. Peers use ioredis defaults (no auto-pipelining).',
    '',
    'Contention definitions: a *handoff* is an acquisition by a different caller than the previous holder. *Handoff wait* is how long that caller had been waiting ' +
      '(since its previous release, or the start), failed acquire calls included; callers still waiting at the end count with their wait so far (*unserved*). ' +
      "*Idle gap* is how long the lock stood free between a release and the next acquisition; the longest one (max over rounds, like the max wait) shows stalls. *Jain's index* is over the callers' acquisition counts (1 = even, 1/8 = one caller got all). " +
      '*Overlaps* counts acquisitions that resolved while another caller in this process still held the lock (must be 0). A caller whose acquire gives up calls it again at once. ' +
      'Rates count the window only; acquires under way at its end finish and their waits are kept.',
  );
  if (largest) {
    const t = targetsSection(
      largest,
      subjects,
      res.byMasters.find((r) => r.decorator),
      res.byMasters.find((r) => r.route),
    );
    if (t)
      out.push(
        '',
        `## Against the targets of issues #4 and #25 (${largest.masters} master${largest.masters > 1 ? 's' : ''})`,
        '',
        t,
      );
  }
  for (const r of res.byMasters) {
    out.push('', `## ${r.masters} master${r.masters > 1 ? 's' : ''}`);
    if (Object.keys(r.latency).length)
      out.push(
        '',
        '### 1. Uncontended latency (one caller, acquire+release of a fresh key)',
        '',
        latencySection(r, subjects),
      );
    if (Object.keys(r.throughput).length)
      out.push(
        '',
        `### 2. Throughput (${c.throughput.concurrency} callers, distinct keys)`,
        '',
        throughputSection(r, subjects),
      );
    for (const profile of ['default', 'fast'] as const) {
      const s = contentionSection(r, subjects, profile);
      if (s)
        out.push(
          '',
          `### 3${profile === 'default' ? 'a' : 'b'}. Contention, ${profile === 'default' ? "each library's default retry settings" : '10 ms retry delay'}`,
          '',
          s,
        );
    }
    const d = decoratorSection(r);
    if (d) out.push('', '### 4. Decorator overhead (Nest application context, same masters, same work)', '', d);
    const rt = routeSection(r);
    if (rt)
      out.push(
        '',
        `### 5. \`@Locked\` on an HTTP route (${c.route.clients} keep-alive clients, distinct ids, Nest on Express and Fastify)`,
        '',
        rt,
      );
  }
  if (res.notes.length) out.push('', '## Notes from the run', '', ...res.notes.map((n) => `- ${n}`));
  out.push('');
  return out.join('\n');
}
