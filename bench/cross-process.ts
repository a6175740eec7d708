/**
 * Cross-process contention: `P` separate OS processes (each with its own library instance and its
 * own connections) want ONE key on 5 masters, over and over, holding it `--hold` ms. The same run
 * measures this library and the peers, with each library's defaults and with a 10 ms retry delay.
 * Not a test: nothing asserts on speed. Writes docs/evidence/cross-process.md and .json.
 *
 *   npm run build && npx tsc -p bench/tsconfig.json && node dist-bench/bench/cross-process.js [--seconds 2.5] [--procs 4,8] [--hold 1] [--libs a,b]
 *
 * Every process stamps its acquisitions and releases with the machine-wide monotonic clock
 * (`process.hrtime`, CLOCK_MONOTONIC on Linux), so the parent can order them across processes:
 * - handoff: an acquisition by another process than the previous holder's;
 * - handoff wait: for a handoff, how long its caller had wanted the lock (since its own previous
 *   release, or the start), given-up calls included; a caller still waiting at the end adds its wait so far;
 * - idle gap: between a release and the next acquisition (its maximum shows stalls);
 * - give-ups: acquire calls that rejected (the library's retry budget ran out); the caller asks again;
 * - Jain's index over the processes' acquisition counts (1 = perfectly even);
 * - overlaps: an acquisition stamped before the previous holder's release stamp (must be 0);
 * - master CPU per acquisition: the CPU time the 5 masters used during the row (INFO `used_cpu_sys` +
 *   `used_cpu_user`, summed), divided by the acquisitions, in µs: what the contention costs Redis.
 */
import { fork } from 'node:child_process';
import { Redis } from 'ioredis';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { FACTORIES } from './adapters/index.js';
import type { RetryProfile } from './adapters/types.js';
import { jain, quantiles } from './stats.js';

const mono = (): number => Number(process.hrtime.bigint()) / 1e6;
const TTL = 10_000;

interface Sample {
  /** Since when the caller wanted the lock. */
  wantedAt: number;
  acquiredAt: number;
  releasedAt: number;
}
interface ChildReport {
  samples: Sample[];
  giveUps: number;
  /** Still waiting at the end: since when (NaN when not waiting). */
  waitingSince: number;
  errors: string[];
}

async function child(): Promise<void> {
  const [lib, profile, urls, holdMs, key] = JSON.parse(process.env.XPROC_ARGS!) as [
    string,
    RetryProfile,
    string[],
    number,
    string,
  ];
  const factory = FACTORIES.find((f) => f.id === lib)!;
  const adapter = await factory.create(urls, profile);
  const go = new Promise<{ start: number; end: number }>((resolve) =>
    process.once('message', resolve as (m: unknown) => void),
  );
  process.send!('ready');
  const { start, end } = await go;
  await sleep(Math.max(0, start - mono()));
  const report: ChildReport = { samples: [], giveUps: 0, waitingSince: NaN, errors: [] };
  let wantedAt = mono();
  while (mono() < end) {
    let handle: unknown;
    try {
      handle = await adapter.acquire(key, TTL);
    } catch (error) {
      if (mono() < end) report.giveUps++;
      if (report.errors.length < 3) report.errors.push(String((error as Error)?.message ?? error).slice(0, 160));
      continue;
    }
    const acquiredAt = mono();
    await sleep(holdMs);
    const releasedAt = mono();
    report.samples.push({ wantedAt, acquiredAt, releasedAt });
    await adapter.release(handle).catch(() => undefined);
    wantedAt = mono();
  }
  report.waitingSince = wantedAt < end ? wantedAt : NaN;
  process.send!(report);
  await adapter.close().catch(() => undefined);
  process.exit(0);
}

interface Row {
  lib: string;
  profile: RetryProfile;
  procs: number;
  acquisitionsPerSec: number;
  handoffsPerSec: number;
  waitP50: number;
  waitP99: number;
  idleGapP50: number;
  idleGapMax: number;
  giveUps: number;
  jain: number;
  overlaps: number;
  masterCpuPerAcquisition: number;
  perProcess: number[];
  errors: string[];
}

async function runOne(
  lib: string,
  profile: RetryProfile,
  procs: number,
  urls: string[],
  holdMs: number,
  seconds: number,
  key: string,
): Promise<Row> {
  const self = fileURLToPath(import.meta.url);
  const children = Array.from({ length: procs }, () =>
    fork(self, ['--child'], {
      env: { ...process.env, XPROC_ARGS: JSON.stringify([lib, profile, urls, holdMs, key]) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const reports = children.map(
    (c) =>
      new Promise<ChildReport>((resolve, reject) => {
        c.on('message', (m) => m !== 'ready' && resolve(m as ChildReport));
        c.once('exit', (code) => reject(new Error(`child exited ${code}`)));
      }),
  );
  await Promise.all(
    children.map((c) => new Promise<void>((resolve) => c.on('message', (m) => m === 'ready' && resolve()))),
  );
  const start = mono() + 100;
  const end = start + seconds * 1000;
  const cpuBefore = await mastersCpu(urls);
  for (const c of children) c.send({ start, end });
  const all = await Promise.all(reports);
  const cpu = (await mastersCpu(urls)) - cpuBefore;
  const events = all.flatMap((r, p) => r.samples.map((s) => ({ ...s, p }))).sort((a, b) => a.acquiredAt - b.acquiredAt);
  const waits: number[] = [];
  const gaps: number[] = [];
  let overlaps = 0;
  let handoffs = 0;
  let acquisitions = 0;
  let lastRelease = NaN;
  let lastHolder = -1;
  const perProcess = new Array<number>(procs).fill(0);
  for (const e of events) {
    if (e.acquiredAt < lastRelease) overlaps++;
    if (Number.isFinite(lastRelease)) gaps.push(Math.max(0, e.acquiredAt - lastRelease));
    const inWindow = e.acquiredAt < end;
    if (lastHolder !== -1 && lastHolder !== e.p) {
      waits.push(e.acquiredAt - e.wantedAt);
      if (inWindow) handoffs++;
    }
    if (inWindow) {
      acquisitions++;
      perProcess[e.p]++;
    }
    lastHolder = e.p;
    lastRelease = Math.max(Number.isFinite(lastRelease) ? lastRelease : -Infinity, e.releasedAt);
  }
  for (const r of all) if (Number.isFinite(r.waitingSince)) waits.push(end - r.waitingSince);
  const w = quantiles(waits);
  const g = quantiles(gaps);
  return {
    lib,
    profile,
    procs,
    acquisitionsPerSec: acquisitions / seconds,
    handoffsPerSec: handoffs / seconds,
    waitP50: w.p50,
    waitP99: w.p99,
    idleGapP50: g.p50,
    idleGapMax: g.max,
    giveUps: all.reduce((n, r) => n + r.giveUps, 0),
    jain: jain(perProcess),
    overlaps,
    masterCpuPerAcquisition: (cpu * 1e6) / Math.max(1, events.length),
    perProcess,
    errors: [...new Set(all.flatMap((r) => r.errors))].slice(0, 2),
  };
}

/** The CPU time the masters have used so far, in seconds, summed (INFO cpu: system + user). */
async function mastersCpu(urls: readonly string[]): Promise<number> {
  const counts = await Promise.all(
    urls.map(async (url) => {
      const client = new Redis(url);
      try {
        const info = await client.info('cpu');
        const seconds = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
        return seconds('used_cpu_sys') + seconds('used_cpu_user');
      } finally {
        client.disconnect();
      }
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

const f1 = (x: number): string => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x.toFixed(1)) : '–');

function markdown(rows: Row[], command: string, holdMs: number, seconds: number): string {
  const out = [
    '# Cross-process contention',
    '',
    `\`${command}\` — ${new Date().toISOString()}. One key on 5 local masters (quorum 3); each process is a separate`,
    `OS process with its own library instance and connections; each holds the lock ${holdMs} ms, releases it and asks again at once;`,
    `${seconds} s window per row; all libraries in the same run. Profiles: \`default\` = each library's defaults; \`fast\` = a 10 ms retry delay`,
    '(redis-semaphore: its default is already 10 ms). Waits and gaps in ms. Shared, loaded 2-core machine: compare rows of one run, not absolute figures.',
    '',
  ];
  for (const procs of [...new Set(rows.map((r) => r.procs))]) {
    out.push(
      `## ${procs} processes`,
      '',
      '| library | profile | handoffs/s | acquisitions/s | wait p50 | wait p99 | idle gap p50 | idle gap max | give-ups | Jain | overlaps | master CPU µs/acq |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of rows.filter((x) => x.procs === procs))
      out.push(
        `| ${r.lib} | ${r.profile} | ${f1(r.handoffsPerSec)} | ${f1(r.acquisitionsPerSec)} | ${f1(r.waitP50)} | ${f1(r.waitP99)} | ${f1(r.idleGapP50)} | ${f1(r.idleGapMax)} | ${r.giveUps} | ${r.jain.toFixed(3)} | ${r.overlaps} | ${f1(r.masterCpuPerAcquisition)} |`,
      );
    out.push('');
  }
  const errs = rows.filter((r) => r.errors.length);
  if (errs.length) {
    out.push('Give-up messages (first of each):', '');
    for (const r of errs) out.push(`- ${r.lib} ${r.profile} ${r.procs}p: ${r.errors[0]}`);
    out.push('');
  }
  return out.join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const seconds = Number(arg('--seconds') ?? 2.5);
  const holdMs = Number(arg('--hold') ?? 1);
  const procsList = (arg('--procs') ?? '4,8').split(',').map(Number);
  const libs = (arg('--libs') ?? 'quorum-lock,node-redlock,redlock-universal,redis-semaphore').split(',');
  const out = arg('--out') ?? 'docs/evidence/cross-process.md';
  const { startRedisMasters } = await import('../tools/redis-masters.js');
  const masters = await startRedisMasters(5);
  const rows: Row[] = [];
  try {
    // The restart guard of nestjs-quorum-lock ignores masters younger than its TTL (10 s by default).
    if (libs.includes('quorum-lock')) await sleep(TTL + 1_500);
    let n = 0;
    for (const procs of procsList) {
      for (const lib of libs) {
        const factory = FACTORIES.find((f) => f.id === lib);
        if (!factory) throw new Error(`unknown library ${lib}`);
        for (const profile of factory.retry.fast === null ? (['default'] as const) : (['default', 'fast'] as const)) {
          const row = await runOne(lib, profile, procs, masters.urls, holdMs, seconds, `xproc:${n++}`);
          rows.push(row);
          console.log(
            `${procs}p ${lib} ${profile}: ${f1(row.handoffsPerSec)} handoffs/s, ${f1(row.acquisitionsPerSec)} acq/s, wait p50 ${f1(row.waitP50)} p99 ${f1(row.waitP99)}, gap max ${f1(row.idleGapMax)}, give-ups ${row.giveUps}, Jain ${row.jain.toFixed(3)}, overlaps ${row.overlaps}, master CPU ${f1(row.masterCpuPerAcquisition)} µs/acq`,
          );
        }
      }
    }
  } finally {
    await masters.stop();
  }
  const command = `node dist-bench/bench/cross-process.js ${args.join(' ')}`.trim();
  await writeFile(out.replace(/\.md$/, '.json'), JSON.stringify({ command, holdMs, seconds, rows }, null, 1) + '\n');
  await writeFile(out, markdown(rows, command, holdMs, seconds));
  console.log(`wrote ${out}`);
}

if (process.argv.includes('--child')) await child();
else {
  await main();
  process.exit(0);
}
