/** Workload 2: throughput. `concurrency` callers, each cycling acquire+release on its own fresh keys, for a fixed window. */
import type { Cycle } from '../adapters/types.js';
import type { CpuSampler, CpuTimes } from '../cpu.js';

export interface ThroughputOptions {
  concurrency: number;
  /** Cycles in this first part are not counted. */
  warmupMs: number;
  windowMs: number;
  keyPrefix: string;
}

export interface ThroughputResult {
  cyclesPerSec: number;
  cycles: number;
  errors: number;
  /** CPU time per counted cycle in µs, this process and the masters (when a sampler was given). */
  clientCpuUs?: number;
  serverCpuUs?: number;
}

export async function runThroughput(
  cycle: Cycle,
  { concurrency, warmupMs, windowMs, keyPrefix }: ThroughputOptions,
  cpu?: CpuSampler,
): Promise<ThroughputResult> {
  const begin = performance.now();
  let cpuFrom: CpuTimes | undefined;
  let cpuTo: CpuTimes | undefined;
  const marks = cpu
    ? [setTimeout(() => (cpuFrom = cpu()), warmupMs), setTimeout(() => (cpuTo = cpu()), warmupMs + windowMs)]
    : [];
  const countFrom = begin + warmupMs;
  const end = countFrom + windowMs;
  let cycles = 0;
  let errors = 0;
  const caller = async (id: number) => {
    for (let i = 0; performance.now() < end; i++) {
      try {
        await cycle(`${keyPrefix}:${id}:${i}`);
      } catch {
        errors++;
        continue;
      }
      const done = performance.now();
      if (done >= countFrom && done < end) cycles++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, id) => caller(id)));
  marks.forEach(clearTimeout);
  const result: ThroughputResult = { cyclesPerSec: cycles / (windowMs / 1000), cycles, errors };
  if (cpuFrom && cpuTo && cycles > 0) {
    result.clientCpuUs = (cpuTo.client - cpuFrom.client) / cycles;
    result.serverCpuUs = (cpuTo.servers - cpuFrom.servers) / cycles;
  }
  return result;
}
