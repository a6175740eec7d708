/**
 * One round at one master count: every selected workload, every subject, in an order rotated by the
 * round number so that drift on a shared machine falls on all subjects alike.
 */
import { cycleOf, type AdapterFactory, type LockAdapter, type RetryProfile } from './adapters/types.js';
import type { CpuSampler } from './cpu.js';
import type { MastersResults } from './model.js';
import type { BenchConfig } from './options.js';
import type { DecoratorSubjects } from './workloads/decorator.js';
import { runRoute, type RouteSubjects } from './workloads/route.js';
import { runContention } from './workloads/contention.js';
import { runLatency } from './workloads/latency.js';
import { runThroughput } from './workloads/throughput.js';

/** The adapters of one master set, opened on first use and kept open (one per library and retry profile). */
export class Subjects {
  readonly #open = new Map<string, Promise<LockAdapter>>();
  constructor(private readonly urls: readonly string[]) {}

  get(factory: AdapterFactory, retry: RetryProfile): Promise<LockAdapter> {
    const key = `${factory.id}/${retry}`;
    let adapter = this.#open.get(key);
    if (!adapter) this.#open.set(key, (adapter = factory.create(this.urls, retry)));
    return adapter;
  }

  async close(): Promise<void> {
    for (const adapter of this.#open.values()) await (await adapter.catch(() => undefined))?.close().catch(() => {});
  }
}

export interface RoundContext {
  config: BenchConfig;
  round: number;
  factories: readonly AdapterFactory[];
  subjects: Subjects;
  /** Only at the master count chosen for the decorator workload. */
  decorator: (() => Promise<DecoratorSubjects>) | undefined;
  /** Only at the master count chosen for the route workload. */
  route?: (() => Promise<RouteSubjects>) | undefined;
  cpu: CpuSampler;
  results: MastersResults;
  note: (text: string) => void;
}

const gc = (globalThis as { gc?: () => void }).gc;
const rotate = <T>(items: readonly T[], by: number): T[] => items.map((_, i) => items[(i + by) % items.length]);
const push = <T>(table: Record<string, T[]>, id: string, value: T) => void (table[id] ??= []).push(value);
export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits }) : '–';

export async function runRound(ctx: RoundContext): Promise<void> {
  const { config, round, results, note } = ctx;
  const n = results.masters;
  const tag = `[round ${round + 1}/${config.rounds}, ${n} master${n > 1 ? 's' : ''}]`;
  const prefix = `bench:${round}:${n}`;
  const { ttl } = config;

  /** Runs one measurement after a gc and a breath; a subject that throws is noted and skipped. */
  const measure = async <T>(what: string, run: () => Promise<T>): Promise<T | undefined> => {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 20));
    try {
      return await run();
    } catch (error) {
      note(`${tag} ${what} failed: ${String((error as Error)?.message ?? error).slice(0, 200)}`);
      return undefined;
    }
  };

  if (config.workloads.has('latency')) {
    for (const f of rotate(ctx.factories, round)) {
      const r = await measure(`latency ${f.id}`, async () =>
        runLatency(cycleOf(await ctx.subjects.get(f, 'default'), ttl), {
          ...config.latency,
          keyPrefix: `${prefix}:lat:${f.id}`,
        }),
      );
      if (!r) continue;
      push(results.latency, f.id, r);
      console.log(
        `${tag} latency    ${f.id.padEnd(18)} p50 ${fmt(r.p50)} us, p99 ${fmt(r.p99)} us${r.errors ? `, ${r.errors} errors` : ''}`,
      );
    }
  }

  if (config.workloads.has('throughput')) {
    for (const f of rotate(ctx.factories, round)) {
      const r = await measure(`throughput ${f.id}`, async () =>
        runThroughput(
          cycleOf(await ctx.subjects.get(f, 'default'), ttl),
          { ...config.throughput, keyPrefix: `${prefix}:tp:${f.id}` },
          ctx.cpu,
        ),
      );
      if (!r) continue;
      push(results.throughput, f.id, r);
      console.log(
        `${tag} throughput ${f.id.padEnd(18)} ${fmt(r.cyclesPerSec)} cycles/s, CPU/cycle client ${fmt(r.clientCpuUs ?? NaN)} us, servers ${fmt(r.serverCpuUs ?? NaN)} us` +
          (r.errors ? `, ${r.errors} errors` : ''),
      );
    }
  }

  if (config.workloads.has('contention')) {
    const runs = ctx.factories
      .filter((f) => f.kind === 'library')
      .flatMap((f) =>
        (['default', 'fast'] as const)
          .filter((p) => p === 'default' || f.retry.fast !== null)
          .map((p) => [f, p] as const),
      );
    for (const [f, profile] of rotate(runs, round)) {
      const r = await measure(`contention ${f.id} (${profile})`, async () =>
        runContention(await ctx.subjects.get(f, profile), {
          ...config.contention,
          ttl,
          key: `${prefix}:hot:${f.id}:${profile}`,
        }),
      );
      if (!r) continue;
      push(results.contention[profile], f.id, r);
      console.log(
        `${tag} contention ${f.id.padEnd(18)} ${profile.padEnd(7)} ${fmt(r.handoffsPerSec)} handoffs/s, wait p99 ${fmt(r.waitP99)} ms, ` +
          `Jain ${fmt(r.jain, 2)}, overlaps ${r.overlaps}, longest idle ${fmt(r.idleGapMax)} ms`,
      );
      if (r.overlaps > 0) note(`${tag} ${f.id} (${profile}): ${r.overlaps} overlapping holders`);
      if (r.acquisitionsPerSec === 0)
        note(`${tag} ${f.id} (${profile}): no acquisition at all in the contention window`);
    }
  }

  if (config.workloads.has('decorator') && ctx.decorator) {
    const d = await ctx.decorator();
    const dc = config.decorator;
    results.decorator ??= { using: { latency: [], throughput: [] }, locked: { latency: [], throughput: [] } };
    for (const style of round % 2 ? (['using', 'locked'] as const) : (['locked', 'using'] as const)) {
      const lat = await measure(`decorator ${style}`, () =>
        runLatency(d[style], { samples: dc.samples, warmup: dc.warmup, keyPrefix: `${prefix}:dec-lat:${style}` }),
      );
      const tp = await measure(`decorator ${style}`, () =>
        runThroughput(
          d[style],
          {
            concurrency: config.throughput.concurrency,
            warmupMs: dc.warmupMs,
            windowMs: dc.windowMs,
            keyPrefix: `${prefix}:dec-tp:${style}`,
          },
          ctx.cpu,
        ),
      );
      if (lat) results.decorator[style].latency.push(lat);
      if (tp) results.decorator[style].throughput.push(tp);
      console.log(
        `${tag} decorator  ${(style === 'locked' ? '@Locked' : 'using()').padEnd(18)} p50 ${fmt(lat?.p50 ?? NaN)} us, ${fmt(tp?.cyclesPerSec ?? NaN)} cycles/s`,
      );
    }
  }

  if (config.workloads.has('route') && ctx.route) {
    const r = await ctx.route();
    const rc = config.route;
    results.route ??= {};
    for (const arm of rotate(r.arms, round)) {
      const res = await measure(`route ${arm.platform} ${arm.id}`, () =>
        runRoute(arm.port, arm.route, { ...rc, idPrefix: `${prefix}-${arm.platform}-${arm.id}` }, ctx.cpu),
      );
      if (!res) continue;
      push((results.route[arm.platform] ??= {}), arm.id, res);
      console.log(
        `${tag} route      ${`${arm.platform} ${arm.id}`.padEnd(18)} ${fmt(res.requestsPerSec)} requests/s` +
          (res.errors ? `, ${res.errors} errors` : ''),
      );
    }
  }
}
