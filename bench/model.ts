/** What a run measured: per master count, per workload, per subject, one entry per round. */
import type { RetryProfile } from './adapters/types.js';
import type { MachineFacts } from './env.js';
import type { BenchConfig } from './options.js';
import type { ContentionResult } from './workloads/contention.js';
import type { LatencyResult } from './workloads/latency.js';
import type { RouteResult } from './workloads/route.js';
import type { ThroughputResult } from './workloads/throughput.js';

export interface SubjectInfo {
  id: string;
  label: string;
  version: string;
  kind: 'library' | 'limit';
  retry: { default: string; fast: string | null };
}

export interface MastersResults {
  masters: number;
  latency: Record<string, LatencyResult[]>;
  throughput: Record<string, ThroughputResult[]>;
  contention: Record<RetryProfile, Record<string, ContentionResult[]>>;
  decorator?: {
    using: { latency: LatencyResult[]; throughput: ThroughputResult[] };
    locked: { latency: LatencyResult[]; throughput: ThroughputResult[] };
  };
  /** Platform → arm (`unlocked`, `locked`, `locked-ref`) → one result per round. */
  route?: Record<string, Record<string, RouteResult[]>>;
}

export interface RunResults {
  command: string;
  config: Omit<BenchConfig, 'workloads' | 'argv'> & { workloads: string[] };
  startedAt: string;
  durationSec: number;
  machine: MachineFacts & { loadavgAfter: string };
  pinning: string;
  revision: string;
  subjects: SubjectInfo[];
  byMasters: MastersResults[];
  /** Failures and oddities seen during the run (a subject that threw, unhandled rejections, …). */
  notes: string[];
}
