/** CPU time spent so far by this process (all threads) and by the given redis-server processes, in µs. */
import { readFileSync } from 'node:fs';

export interface CpuTimes {
  client: number;
  servers: number;
}

export type CpuSampler = () => CpuTimes;

/** Time on CPU of a process's main thread, from /proc/PID/schedstat (ns); 0 where unavailable. */
function serverMicros(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return 0;
  }
}

export function cpuSampler(serverPids: readonly number[]): CpuSampler {
  return () => {
    const { user, system } = process.cpuUsage();
    return { client: user + system, servers: serverPids.reduce((sum, pid) => sum + serverMicros(pid), 0) };
  };
}
