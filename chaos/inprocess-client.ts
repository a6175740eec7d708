/**
 * A chaos client inside the current process: its own Nest application context and its own
 * `RedlockService`, but no process of its own (so it cannot be SIGSTOPped). Used by the Jest version.
 */
import type * as LibModule from 'nestjs-quorum-lock';
import { sharedNow } from './clock.js';
import type { ClientHandle, RecordSink } from './nemesis.js';
import type { ProbeRecord } from './types.js';
import { createWorkload, type Workload, type WorkloadConfig } from './workload.js';

export class InProcessClient implements ClientHandle {
  private workload: Workload | undefined;

  constructor(
    readonly id: string,
    private readonly lib: typeof LibModule,
  ) {}

  async start(config: WorkloadConfig, sink: RecordSink): Promise<void> {
    this.workload = createWorkload(this.lib, config, sink);
    await this.workload.start();
  }

  async stop(): Promise<number> {
    const workload = this.workload;
    this.workload = undefined;
    if (!workload) return 0;
    await workload.stop();
    return workload.cycles;
  }

  readonly sharesLoop = true;

  /** Blocks this process's event loop (the harness's and every in-process client's with it). */
  stall(ms: number): Promise<{ start: number; end: number }> {
    const start = sharedNow();
    while (sharedNow() - start < ms);
    return Promise.resolve({ start, end: sharedNow() });
  }

  probe(round: number, budgetMs: number): Promise<ProbeRecord> {
    return this.workload!.probe(round, budgetMs);
  }
}
