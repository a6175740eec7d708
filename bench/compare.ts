/**
 * `npm run bench -- --compare REF`: this checkout against another commit of the library, in the same
 * process and the same interleaved rounds. REF is built aside (bench/ref-build.ts). Per round, at the
 * largest `--masters` count (5 by default): uncontended latency and throughput of this, REF, the raw
 * quorum and the raw auto-pipelined quorum; at `--route-masters` (3): the route workload (unlocked,
 * raw quorum by hand, `@Locked` of this build, `@Locked` of REF) on Express and Fastify. Within a
 * round the subjects take turns in time slices (bench/sliced-round.ts). The report gives each
 * per-round ratio this ÷ REF with its median and min–max: docs/evidence/bench-compare.md (and .json).
 */
import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { relative } from 'node:path';
import * as library from 'nestjs-quorum-lock';
import { quorumLock, quorumLockBuild, type RedlockClass } from './adapters/quorum-lock.js';
import { rawQuorum, rawQuorumPipelined } from './adapters/raw-quorum.js';
import { cycleOf, type AdapterFactory } from './adapters/types.js';
import { cpuSampler } from './cpu.js';
import { libraryRevision, machineFacts, repoRoot } from './env.js';
import { pin, startMasterSets } from './masters.js';
import type { MastersResults } from './model.js';
import type { BenchConfig, Workload } from './options.js';
import { buildRef, type RefBuild } from './ref-build.js';
import { renderCompare, type CompareResults } from './report/compare-markdown.js';
import { fmt, Subjects } from './rounds.js';
import { latencyInterleaved, routeSliced, throughputSliced } from './sliced-round.js';
import { openRouteSubjects, type RouteLibrary, type RouteSubjects } from './workloads/route.js';

/** The `--compare` build's adapter id; this checkout keeps `quorum-lock`. */
export const REF = 'ref';
const THIS = quorumLock.id;
/** Turns per subject within a round (throughput and route windows are cut into this many slices). */
const SLICES = 4;
/** Past the TTL, for INFO's whole-second uptime and the drift allowance. */
const MASTER_AGE_MARGIN_MS = 2_000;
const COMPARABLE: readonly Workload[] = ['latency', 'throughput', 'route'];

const emptyResults = (masters: number): MastersResults => ({
  masters,
  latency: {},
  throughput: {},
  contention: { default: {}, fast: {} },
});

export async function runCompare(config: BenchConfig, notes: string[], note: (text: string) => void): Promise<void> {
  const started = Date.now();
  const startedAt = new Date().toISOString();
  const ignored = [...config.workloads].filter((w) => !COMPARABLE.includes(w));
  const workloads = new Set([...config.workloads].filter((w) => COMPARABLE.includes(w)));
  if (ignored.length) note(`--compare measures ${COMPARABLE.join(', ')}; ignored: ${ignored.join(', ')}`);
  const cycleMasters = Math.max(...config.masters);
  const routeMasters = config.route.masters;
  const machine = machineFacts();
  const revision = libraryRevision();

  const ref: RefBuild = buildRef(config.compare!);
  try {
    const refLib = (await import(ref.entry)) as { Redlock: RedlockClass } & RouteLibrary;
    const refFactory = quorumLockBuild(REF, `${ref.ref} (${ref.sha})`, refLib.Redlock);
    const factories: AdapterFactory[] = [quorumLock, refFactory, rawQuorum, rawQuorumPipelined];

    const counts = [...new Set([cycleMasters, routeMasters])];
    const masters = await startMasterSets(counts);
    const pinning = pin(config.pin, masters.serverPids(), config.cpu);
    console.log(`bench: --compare ${ref.ref} (${ref.sha}) against ${revision}: ${config.rounds} round(s), ${pinning}`);
    const cycles = emptyResults(cycleMasters);
    const routes = emptyResults(routeMasters);
    const loads: number[] = [];
    const subjects = new Map(counts.map((n) => [n, new Subjects(masters.sets.get(n)!.urls)]));
    let route: Promise<RouteSubjects> | undefined;
    try {
      console.log(`bench: waiting until the masters are older than the TTL (${fmt(config.ttl)} ms)`);
      await masters.olderThan(config.ttl + MASTER_AGE_MARGIN_MS);
      const cycleSet = masters.sets.get(cycleMasters)!;
      const cpu = cpuSampler(cycleSet.masters.map((m) => m.pid!));
      const open = subjects.get(cycleMasters)!;
      const cyclesOf = async (ids: readonly string[]) =>
        new Map(
          await Promise.all(
            ids.map(
              async (id) =>
                [
                  id,
                  cycleOf(
                    await open.get(
                      factories.find((f) => f.id === id)!,
                      'default',
                    ),
                    config.ttl,
                  ),
                ] as const,
            ),
          ),
        );
      for (let round = 0; round < config.rounds; round++) {
        loads.push(loadavg()[0]);
        const tag = `[round ${round + 1}/${config.rounds}]`;
        const prefix = `bench:cmp:${round}`;
        if (workloads.has('latency')) {
          const lat = await latencyInterleaved(await cyclesOf([THIS, REF, 'raw', 'raw-ap']), {
            ...config.latency,
            keyPrefix: `${prefix}:lat`,
          });
          for (const [id, r] of lat) (cycles.latency[id] ??= []).push(r);
          console.log(`${tag} p50 µs: ${[...lat].map(([id, r]) => `${id} ${fmt(r.p50)}`).join(', ')}`);
        }
        if (workloads.has('throughput')) {
          const tp = await throughputSliced(
            await cyclesOf([THIS, REF, 'raw-ap', 'raw']),
            { ...config.throughput, slices: SLICES, keyPrefix: `${prefix}:tp` },
            cpu,
          );
          for (const [id, r] of tp) (cycles.throughput[id] ??= []).push(r);
          console.log(`${tag} cycles/s: ${[...tp].map(([id, r]) => `${id} ${fmt(r.cyclesPerSec)}`).join(', ')}`);
        }
        if (workloads.has('route')) {
          const urls = masters.sets.get(routeMasters)!.urls;
          route ??= openRouteSubjects(
            [
              { id: 'locked', lib: library },
              { id: 'locked-ref', lib: refLib },
            ],
            urls,
          );
          const rt = await routeSliced(
            (await route).arms,
            {
              clients: config.route.clients,
              windowMs: config.route.windowMs,
              slices: SLICES,
              idPrefix: `${prefix}-route`,
            },
            cpuSampler(masters.sets.get(routeMasters)!.masters.map((m) => m.pid!)),
          );
          const table = (routes.route ??= {});
          for (const [arm, r] of rt) ((table[arm.platform] ??= {})[arm.id] ??= []).push(r);
          console.log(
            `${tag} requests/s: ${[...rt].map(([arm, r]) => `${arm.platform} ${arm.id} ${fmt(r.requestsPerSec)}`).join(', ')}`,
          );
        }
      }
    } finally {
      await (await route?.catch(() => undefined))?.close().catch(() => {});
      for (const s of subjects.values()) await s.close();
      await masters.stop();
    }

    const { workloads: _w, argv, ...rest } = config;
    const results: CompareResults = {
      command: ['npm run bench', '--', ...argv].join(' '),
      startedAt,
      durationSec: (Date.now() - started) / 1000,
      machine: {
        ...machine,
        loadavgAfter: loadavg()
          .map((l) => l.toFixed(2))
          .join(' '),
      },
      roundLoads: loads,
      pinning,
      revision,
      ref: { ref: ref.ref, sha: ref.sha, subject: ref.subject },
      config: { ...rest, workloads: [...workloads], out: relative(repoRoot, config.out) },
      cycles,
      routes,
      notes,
    };
    const base = config.out.replace(/\.md$/, '');
    await writeFile(`${base}.json`, JSON.stringify(results, null, 1) + '\n');
    await writeFile(config.out, renderCompare(results));
    console.log(`bench: done in ${fmt(results.durationSec)} s; wrote ${relative(repoRoot, config.out)} and .json`);
  } finally {
    ref.remove();
  }
}
