/** Command-line flags of `npm run bench -- …` and the settings they lead to. */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FACTORIES } from './adapters/index.js';
import { repoRoot } from './env.js';
import type { PinMode } from './masters.js';

export const WORKLOADS = ['latency', 'throughput', 'contention', 'decorator', 'route'] as const;
export type Workload = (typeof WORKLOADS)[number];

export interface BenchConfig {
  quick: boolean;
  rounds: number;
  masters: number[];
  workloads: Set<Workload>;
  libs: string[];
  pin: PinMode;
  cpu: number | undefined;
  ttl: number;
  latency: { samples: number; warmup: number };
  throughput: { concurrency: number; warmupMs: number; windowMs: number };
  contention: { callers: number; holdMs: number; windowMs: number };
  decorator: { masters: number; samples: number; warmup: number; warmupMs: number; windowMs: number };
  /** The `@Locked` route against the same route unlocked, Express and Fastify (bench/workloads/route.ts). */
  route: { masters: number; clients: number; warmupMs: number; windowMs: number };
  /**
   * `--compare REF`: build REF in a temporary git worktree and run it against this checkout in the
   * same rounds (bench/compare.ts) instead of the peers.
   */
  compare: string | undefined;
  /** Re-write the report and chart from the JSON beside `out`, without measuring. */
  render: boolean;
  memory: {
    enabled: boolean;
    /** `release`: acquire then release (or `using()`); `expire`: `tryAcquire()` and let the lock expire, never released. */
    workload: 'release' | 'expire';
    cycles: number;
    concurrency: number;
    masters: number;
    warmupCycles: number;
    sampleEvery: number;
  };
  /** The Markdown report; the SVG chart and the JSON data are written beside it (same name). */
  out: string;
  argv: string[];
}

export const USAGE = `npm run bench -- [flags]

  --quick                 1 round, short windows (smoke test); writes dist-bench/results-quick.*
  --rounds N              rounds, libraries interleaved round-robin in each (default 5)
  --masters 1,3,5         master counts to run (default 1,3,5)
  --workloads LIST        latency,throughput,contention,decorator,route (default: all)
  --libs LIST             ${FACTORIES.map((f) => f.id).join(',')} (default: all)
  --pin same|split|none   same: client and servers on one core (default); split: client core 0,
                          servers core 1; none: unpinned
  --cpu N                 the core for --pin same (default: the last core)
  --throughput-ms MS      throughput window per measurement (default 800)
  --contention-ms MS      contention window per measurement (default 1500)
  --decorator-masters N   master count for the decorator workload (default 3)
  --route-ms MS           window per route measurement (default 1000)
  --route-masters N       master count for the route workload (default 3)
  --compare REF           build git REF (commit, branch, tag, HEAD~3) in a temporary worktree and run it
                          against this checkout in the same interleaved rounds: throughput (5 masters,
                          64 callers), uncontended p50 (5 masters) and the @Locked route (3 masters,
                          32 clients, Express and Fastify), each as per-round ratios this / REF;
                          writes docs/evidence/bench-compare.md (with --quick: dist-bench/compare-quick.md).
                          --rounds and --workloads (latency,throughput,route) apply.
  --out FILE              report path (default docs/evidence/bench-results.md, or dist-bench/results-partial.md
                          with --workloads; .svg and .json beside it)
  --render                re-write the report and chart from the .json beside --out, measuring nothing
  --memory                the long memory run instead (this library, 3 masters, 64 callers) -> docs/evidence/bench-memory.md
  --cycles N              cycles of the memory run (default 1000000)
  --memory-workload W     release (acquire + release, default) or expire (tryAcquire, never released,
                          1 s TTL); each rewrites its own section of docs/evidence/bench-memory.md
  --help`;

function list(value: string | undefined, fallback: readonly string[]): string[] {
  return value === undefined
    ? [...fallback]
    : value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
}

function int(value: string | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new Error(`--${flag} must be a positive whole number; got ${JSON.stringify(value)}`);
  return n;
}

/** The README's figures come from a full run: a run of chosen workloads writes beside the build instead. */
function defaultOut(quick: boolean, compare: boolean, partial: boolean): string {
  const name = compare ? 'compare' : 'results';
  if (quick) return join(repoRoot, 'dist-bench', `${name}-quick.md`);
  if (partial && !compare) return join(repoRoot, 'dist-bench', 'results-partial.md');
  return join(repoRoot, 'docs', 'evidence', `bench-${name}.md`);
}

export function parseOptions(argv: string[]): BenchConfig | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      quick: { type: 'boolean' },
      rounds: { type: 'string' },
      masters: { type: 'string' },
      workloads: { type: 'string' },
      libs: { type: 'string' },
      pin: { type: 'string' },
      cpu: { type: 'string' },
      'throughput-ms': { type: 'string' },
      'contention-ms': { type: 'string' },
      'decorator-masters': { type: 'string' },
      'route-ms': { type: 'string' },
      'route-masters': { type: 'string' },
      compare: { type: 'string' },
      out: { type: 'string' },
      memory: { type: 'boolean' },
      render: { type: 'boolean' },
      cycles: { type: 'string' },
      'memory-workload': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  const masters = list(values.masters, ['1', '3', '5']).map((m) => int(m, 0, 'masters'));
  const workloads = list(
    values.workloads,
    values.compare === undefined ? WORKLOADS : (['latency', 'throughput', 'route'] as const),
  );
  for (const w of workloads)
    if (!(WORKLOADS as readonly string[]).includes(w))
      throw new Error(`unknown workload ${JSON.stringify(w)}; pick from ${WORKLOADS.join(', ')}`);
  const libs = list(
    values.libs,
    FACTORIES.map((f) => f.id),
  );
  for (const l of libs)
    if (!FACTORIES.some((f) => f.id === l))
      throw new Error(`unknown lib ${JSON.stringify(l)}; pick from ${FACTORIES.map((f) => f.id).join(', ')}`);
  const pin = (values.pin ?? 'same') as PinMode;
  if (!['same', 'split', 'none'].includes(pin))
    throw new Error(`--pin must be same, split or none; got ${JSON.stringify(values.pin)}`);
  const memoryWorkload = values['memory-workload'] ?? 'release';
  if (memoryWorkload !== 'release' && memoryWorkload !== 'expire')
    throw new Error(`--memory-workload must be release or expire; got ${JSON.stringify(memoryWorkload)}`);
  const cpu = values.cpu === undefined ? undefined : Number(values.cpu);
  if (cpu !== undefined && !(Number.isSafeInteger(cpu) && cpu >= 0))
    throw new Error(`--cpu must be a core number; got ${JSON.stringify(values.cpu)}`);
  return {
    quick,
    rounds: int(values.rounds, quick ? 1 : 5, 'rounds'),
    masters,
    workloads: new Set(workloads as Workload[]),
    libs,
    pin,
    cpu,
    ttl: 10_000,
    latency: { samples: quick ? 100 : 300, warmup: quick ? 20 : 30 },
    throughput: {
      concurrency: 64,
      warmupMs: 100,
      windowMs: int(values['throughput-ms'], quick ? 300 : 800, 'throughput-ms'),
    },
    contention: { callers: 8, holdMs: 1, windowMs: int(values['contention-ms'], quick ? 500 : 1_500, 'contention-ms') },
    decorator: {
      masters: int(values['decorator-masters'], 3, 'decorator-masters'),
      samples: quick ? 100 : 300,
      warmup: quick ? 20 : 30,
      warmupMs: 100,
      windowMs: quick ? 300 : 800,
    },
    route: {
      masters: int(values['route-masters'], 3, 'route-masters'),
      clients: 32,
      warmupMs: 200,
      windowMs: int(values['route-ms'], quick ? 300 : 1_000, 'route-ms'),
    },
    compare: values.compare,
    render: values.render ?? false,
    memory: {
      enabled: values.memory ?? false,
      workload: memoryWorkload,
      cycles: int(values.cycles, 1_000_000, 'cycles'),
      concurrency: 64,
      masters: 3,
      warmupCycles: 100_000,
      sampleEvery: 20_000,
    },
    out: values.out ?? defaultOut(quick, values.compare !== undefined, values.workloads !== undefined),
    argv,
  };
}
