/**
 * The benchmark's redis-server masters (started with tools/redis-masters.ts on loopback) and CPU
 * pinning with `taskset`. Pinning applies to every thread of this Node process and of each server.
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { startRedisMasters, type RedisMasters } from '../tools/redis-masters.js';

/** same: client and servers on one core; split: client on one core, servers on another; none: the scheduler decides. */
export type PinMode = 'same' | 'split' | 'none';

export interface MasterSets {
  /** Master count → its running masters. */
  readonly sets: ReadonlyMap<number, RedisMasters>;
  /**
   * Waits until every master has been up for `ms`. This library's restart guard (on by default) does
   * not count the votes of a master that has been up for less than the largest TTL, as Redlock's
   * "delayed restart" rule says; production masters are old, so the benchmark measures them old.
   */
  olderThan(ms: number): Promise<void>;
  serverPids(): number[];
  stop(): Promise<void>;
}

/** Starts one independent set of masters per count (e.g. 1, 3 and 5: nine servers), all kept running. */
export async function startMasterSets(counts: readonly number[]): Promise<MasterSets> {
  const sets = new Map<number, RedisMasters>();
  const stop = async () => void (await Promise.all([...sets.values()].map((s) => s.stop())));
  let lastStart = 0;
  try {
    for (const n of counts) {
      sets.set(n, await startRedisMasters(n));
      lastStart = performance.now();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    sets,
    olderThan: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, lastStart + ms - performance.now()))),
    serverPids: () =>
      [...sets.values()].flatMap((s) => s.masters.map((m) => m.pid).filter((pid): pid is number => pid !== undefined)),
    stop,
  };
}

function taskset(cpu: number, pid: number): void {
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/**
 * Pins this process and the servers; returns how the run was pinned, in words, for the report.
 * `cpu` is the core used by `same` (default: the last one); `split` puts the client on core 0 and the
 * servers on core 1.
 */
export function pin(mode: PinMode, serverPids: readonly number[], cpu?: number): string {
  const cores = availableParallelism();
  if (mode === 'none') return `not pinned (the scheduler places client and servers on the ${cores} cores)`;
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'not pinned (`taskset` is not installed; util-linux provides it)';
  }
  if (mode === 'split' && cores < 2) mode = 'same';
  if (mode === 'same') {
    const core = cpu ?? cores - 1;
    for (const pid of [process.pid, ...serverPids]) taskset(core, pid);
    return `client and all redis-servers pinned to core ${core} (\`taskset -a -p -c ${core}\`)`;
  }
  taskset(0, process.pid);
  for (const pid of serverPids) taskset(1, pid);
  return 'client pinned to core 0, all redis-servers to core 1 (`taskset -a -p -c`)';
}
