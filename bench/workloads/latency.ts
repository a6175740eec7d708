/** Workload 1: uncontended latency. One caller, sequential acquire+release of fresh keys. */
import type { Cycle } from '../adapters/types.js';
import { quantiles } from '../stats.js';

export interface LatencyOptions {
  samples: number;
  warmup: number;
  keyPrefix: string;
}

export interface LatencyResult {
  /** Microseconds per acquire+release cycle. */
  p50: number;
  p99: number;
  samples: number;
  errors: number;
}

export async function runLatency(cycle: Cycle, { samples, warmup, keyPrefix }: LatencyOptions): Promise<LatencyResult> {
  const times: number[] = [];
  let errors = 0;
  for (let i = 0; i < warmup + samples; i++) {
    const started = performance.now();
    try {
      await cycle(`${keyPrefix}:${i}`);
    } catch {
      errors++;
      continue;
    }
    if (i >= warmup) times.push((performance.now() - started) * 1000);
  }
  const { p50, p99 } = quantiles(times);
  return { p50, p99, samples: times.length, errors };
}
