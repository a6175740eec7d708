/**
 * One round of `--compare`, in time slices: the subjects take turns many times within the round (one
 * cycle each in turn for latency, short windows in turn for throughput and the route), so that the
 * load of a shared machine, which changes from one second to the next, falls on all of them alike.
 * Each subject's round figure aggregates its own slices.
 */
import type { Cycle } from './adapters/types.js';
import type { CpuSampler } from './cpu.js';
import { quantiles } from './stats.js';
import type { LatencyResult } from './workloads/latency.js';
import { runRoute, type RouteArm, type RouteResult } from './workloads/route.js';
import { runThroughput, type ThroughputResult } from './workloads/throughput.js';

const rotate = <T>(items: readonly T[], by: number): T[] => items.map((_, i) => items[(i + by) % items.length]);
const gc = (globalThis as { gc?: () => void }).gc;
const breath = () => new Promise((resolve) => setTimeout(resolve, 10));

/** `samples` sequential cycles per subject, one cycle of each subject in turn (order rotated each time). */
export async function latencyInterleaved(
  cycles: ReadonlyMap<string, Cycle>,
  { samples, warmup, keyPrefix }: { samples: number; warmup: number; keyPrefix: string },
): Promise<Map<string, LatencyResult>> {
  const ids = [...cycles.keys()];
  const times = new Map(ids.map((id) => [id, [] as number[]]));
  const errors = new Map(ids.map((id) => [id, 0]));
  gc?.();
  await breath();
  for (let i = 0; i < warmup + samples; i++) {
    for (const id of rotate(ids, i)) {
      const started = performance.now();
      try {
        await cycles.get(id)!(`${keyPrefix}:${id}:${i}`);
      } catch {
        errors.set(id, errors.get(id)! + 1);
        continue;
      }
      if (i >= warmup) times.get(id)!.push((performance.now() - started) * 1000);
    }
  }
  return new Map(
    ids.map((id) => {
      const { p50, p99 } = quantiles(times.get(id)!);
      return [id, { p50, p99, samples: times.get(id)!.length, errors: errors.get(id)! }];
    }),
  );
}

/** `slices` windows of `windowMs / slices` per subject, in turn; cycles/s over the sum of a subject's windows. */
export async function throughputSliced(
  cycles: ReadonlyMap<string, Cycle>,
  opts: { concurrency: number; windowMs: number; slices: number; keyPrefix: string },
  cpu: CpuSampler,
): Promise<Map<string, ThroughputResult>> {
  const ids = [...cycles.keys()];
  const sum = new Map(ids.map((id) => [id, { cycles: 0, errors: 0, client: 0, servers: 0, cpuCycles: 0 }]));
  const sliceMs = opts.windowMs / opts.slices;
  for (let s = 0; s < opts.slices; s++) {
    for (const id of rotate(ids, s)) {
      gc?.();
      await breath();
      const r = await runThroughput(
        cycles.get(id)!,
        { concurrency: opts.concurrency, warmupMs: 30, windowMs: sliceMs, keyPrefix: `${opts.keyPrefix}:${id}:${s}` },
        cpu,
      );
      const t = sum.get(id)!;
      t.cycles += r.cycles;
      t.errors += r.errors;
      if (r.clientCpuUs !== undefined && r.serverCpuUs !== undefined) {
        t.client += r.clientCpuUs * r.cycles;
        t.servers += r.serverCpuUs * r.cycles;
        t.cpuCycles += r.cycles;
      }
    }
  }
  return new Map(
    ids.map((id) => {
      const t = sum.get(id)!;
      return [
        id,
        {
          cyclesPerSec: t.cycles / (opts.windowMs / 1000),
          cycles: t.cycles,
          errors: t.errors,
          clientCpuUs: t.cpuCycles ? t.client / t.cpuCycles : undefined,
          serverCpuUs: t.cpuCycles ? t.servers / t.cpuCycles : undefined,
        },
      ];
    }),
  );
}

/** `slices` windows of `windowMs / slices` per route arm, in turn; requests/s over the sum of an arm's windows. */
export async function routeSliced(
  arms: readonly RouteArm[],
  opts: { clients: number; windowMs: number; slices: number; idPrefix: string },
  cpu: CpuSampler,
): Promise<Map<RouteArm, RouteResult>> {
  const sum = new Map(arms.map((arm) => [arm, { requests: 0, errors: 0, client: 0, servers: 0, cpuRequests: 0 }]));
  const sliceMs = opts.windowMs / opts.slices;
  for (let s = 0; s < opts.slices; s++) {
    for (const arm of rotate(arms, s)) {
      gc?.();
      await breath();
      const r = await runRoute(
        arm.port,
        arm.route,
        {
          clients: opts.clients,
          warmupMs: 50,
          windowMs: sliceMs,
          idPrefix: `${opts.idPrefix}-${arm.platform}-${arm.id}-${s}`,
        },
        cpu,
      );
      const t = sum.get(arm)!;
      t.requests += r.requests;
      t.errors += r.errors;
      if (r.clientCpuUs !== undefined && r.serverCpuUs !== undefined) {
        t.client += r.clientCpuUs * r.requests;
        t.servers += r.serverCpuUs * r.requests;
        t.cpuRequests += r.requests;
      }
    }
  }
  return new Map(
    arms.map((arm) => {
      const t = sum.get(arm)!;
      return [
        arm,
        {
          requestsPerSec: t.requests / (opts.windowMs / 1000),
          requests: t.requests,
          errors: t.errors,
          clientCpuUs: t.cpuRequests ? t.client / t.cpuRequests : undefined,
          serverCpuUs: t.cpuRequests ? t.servers / t.cpuRequests : undefined,
        },
      ];
    }),
  );
}
