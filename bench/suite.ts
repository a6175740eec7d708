/**
 * The benchmark run: starts the masters, pins, runs the rounds (each master count in turn within a
 * round), stops everything, and writes the report, the chart and the raw data.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { basename, relative } from 'node:path';
import { FACTORIES, OURS } from './adapters/index.js';
import { cpuSampler } from './cpu.js';
import { libraryRevision, machineFacts, packageVersion, repoRoot } from './env.js';
import { pin, startMasterSets } from './masters.js';
import type { MastersResults, RunResults, SubjectInfo } from './model.js';
import type { BenchConfig } from './options.js';
import { renderMarkdown } from './report/markdown.js';
import { renderSvg } from './report/svg.js';
import { fmt, runRound, Subjects } from './rounds.js';
import { openDecoratorSubjects, type DecoratorSubjects } from './workloads/decorator.js';
import { openRouteSubjects, type RouteSubjects } from './workloads/route.js';
import * as library from 'nestjs-quorum-lock';

/** Past the TTL, for INFO's whole-second uptime and the drift allowance. */
const MASTER_AGE_MARGIN_MS = 2_000;

export async function runSuite(config: BenchConfig, notes: string[], note: (text: string) => void): Promise<void> {
  const started = Date.now();
  const startedAt = new Date().toISOString();
  const factories = FACTORIES.filter((f) => config.libs.includes(f.id));
  const decoratorMasters = config.masters.includes(config.decorator.masters)
    ? config.decorator.masters
    : config.masters[config.masters.length - 1];
  const routeMasters = config.masters.includes(config.route.masters)
    ? config.route.masters
    : config.masters[config.masters.length - 1];
  const machine = machineFacts();

  const masters = await startMasterSets(config.masters);
  const stopOnSignal = () => void masters.stop().finally(() => process.exit(130));
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  const pinning = pin(config.pin, masters.serverPids(), config.cpu);
  console.log(`bench: ${config.rounds} round(s), masters ${config.masters.join('/')}, ${pinning}`);

  const byMasters: MastersResults[] = config.masters.map((n) => ({
    masters: n,
    latency: {},
    throughput: {},
    contention: { default: {}, fast: {} },
  }));
  const subjects = new Map(config.masters.map((n) => [n, new Subjects(masters.sets.get(n)!.urls)]));
  let decorator: Promise<DecoratorSubjects> | undefined;
  let route: Promise<RouteSubjects> | undefined;
  try {
    if (factories.some((f) => f.id === OURS) || config.workloads.has('decorator') || config.workloads.has('route')) {
      console.log(
        `bench: waiting until the masters are older than the TTL (${fmt(config.ttl)} ms): the restart guard of nestjs-quorum-lock ignores younger masters`,
      );
      await masters.olderThan(config.ttl + MASTER_AGE_MARGIN_MS);
    }
    for (let round = 0; round < config.rounds; round++) {
      for (const results of byMasters) {
        const n = results.masters;
        const set = masters.sets.get(n)!;
        await runRound({
          config,
          round,
          factories,
          subjects: subjects.get(n)!,
          decorator: n === decoratorMasters ? () => (decorator ??= openDecoratorSubjects(set.urls)) : undefined,
          route:
            n === routeMasters
              ? () => (route ??= openRouteSubjects([{ id: 'locked', lib: library }], set.urls))
              : undefined,
          cpu: cpuSampler(set.masters.map((m) => m.pid!)),
          results,
          note,
        });
      }
    }
  } finally {
    await (await decorator?.catch(() => undefined))?.close().catch(() => {});
    await (await route?.catch(() => undefined))?.close().catch(() => {});
    for (const s of subjects.values()) await s.close();
    await masters.stop();
    process.off('SIGINT', stopOnSignal);
    process.off('SIGTERM', stopOnSignal);
  }

  const subjectInfo: SubjectInfo[] = factories.map((f) => ({
    id: f.id,
    label: f.label,
    version: f.kind === 'limit' ? `ioredis ${packageVersion('ioredis')}` : packageVersion(f.package),
    kind: f.kind,
    retry: f.retry,
  }));
  const { workloads, argv, ...rest } = config;
  const results: RunResults = {
    command: ['npm run bench', ...(argv.length ? ['--', ...argv] : [])].join(' '),
    config: { ...rest, workloads: [...workloads], out: relative(repoRoot, config.out) },
    startedAt,
    durationSec: (Date.now() - started) / 1000,
    machine: {
      ...machine,
      loadavgAfter: loadavg()
        .map((l) => l.toFixed(2))
        .join(' '),
    },
    pinning,
    revision: libraryRevision(),
    subjects: subjectInfo,
    byMasters,
    notes,
  };
  await writeFile(`${config.out.replace(/\.md$/, '')}.json`, JSON.stringify(results, null, 1) + '\n');
  await writeReport(results, config.out);
  console.log(`bench: done in ${fmt(results.durationSec)} s; wrote ${relative(repoRoot, config.out)}, .svg and .json`);
}

/** Writes the Markdown report at `out` and the chart beside it. */
export async function writeReport(results: RunResults, out: string): Promise<void> {
  const base = out.replace(/\.md$/, '');
  await writeFile(`${base}.svg`, renderSvg(results));
  await writeFile(out, renderMarkdown(results, `${basename(base)}.svg`));
}

/** `--render`: the report and chart again, from the JSON of an earlier run. */
export async function renderSaved(out: string): Promise<void> {
  const json = `${out.replace(/\.md$/, '')}.json`;
  await writeReport(JSON.parse(await readFile(json, 'utf8')) as RunResults, out);
  console.log(`bench: re-wrote ${relative(repoRoot, out)} and its .svg from ${relative(repoRoot, json)}`);
}
