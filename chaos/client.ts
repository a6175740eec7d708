/**
 * A chaos client: one OS process (forked by the harness) running one Nest application context that
 * uses the BUILT package by its name, as an application would. It talks to the harness over IPC:
 * records go up in batches; the harness sends start, clock pings, probes, pause arming and stop.
 */
import 'reflect-metadata';
import type * as LibModule from 'nestjs-quorum-lock';
import { clockReading, sharedNow } from './clock.js';
import type { LoopStall } from './loop-lag.js';
import type { FailureRecord, SectionRecord } from './types.js';
import { createWorkload, type Workload, type WorkloadConfig } from './workload.js';

export type ToClient =
  | { type: 'start'; config: WorkloadConfig }
  | { type: 'clock-ping'; n: number }
  | { type: 'probe'; round: number; budgetMs: number }
  | { type: 'arm-pause' }
  | { type: 'disarm' }
  | { type: 'resumed' }
  | { type: 'stall'; ms: number }
  | { type: 'stop' };

export type FromClient =
  | { type: 'ready' }
  | { type: 'clock-pong'; n: number; reading: ReturnType<typeof clockReading> }
  | { type: 'records'; sections: SectionRecord[]; failures: FailureRecord[]; stalls: LoopStall[] }
  | { type: 'probe-result'; record: import('./types.js').ProbeRecord }
  | { type: 'pause-me' }
  | { type: 'stalled'; start: number; end: number }
  | { type: 'stopped'; cycles: number; reading: ReturnType<typeof clockReading> }
  | { type: 'fatal'; message: string };

// The library: the built package, or a planted-bug copy of it (`npm run chaos -- --mutants`).
const lib = (await import(process.env.CHAOS_LIB || 'nestjs-quorum-lock')) as typeof LibModule;

const send = (message: FromClient) =>
  new Promise<void>((resolve) => process.send!(message, undefined, {}, () => resolve()));

let sections: SectionRecord[] = [];
let failures: FailureRecord[] = [];
let stalls: LoopStall[] = [];
let workload: Workload | undefined;
let armed = false;
let resume: (() => void) | undefined;

async function flush(): Promise<void> {
  if (sections.length === 0 && failures.length === 0 && stalls.length === 0) return;
  const batch = { type: 'records' as const, sections, failures, stalls };
  sections = [];
  failures = [];
  stalls = [];
  await send(batch);
}

const flusher = setInterval(() => void flush(), 200);

process.on('message', (message: ToClient) => {
  void handle(message).catch((error: unknown) =>
    send({ type: 'fatal', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
process.on('disconnect', () => process.exit(0)); // the harness is gone: do not linger

async function handle(message: ToClient): Promise<void> {
  switch (message.type) {
    case 'start':
      workload = createWorkload(lib, message.config, {
        section: (r) => sections.push(r),
        failure: (r) => failures.push(r),
        stall: (r) => stalls.push(r),
        pauseBeforeWrite: () => {
          if (!armed) return undefined;
          armed = false;
          return new Promise<void>((resolve) => {
            resume = resolve;
            void send({ type: 'pause-me' }); // the harness SIGSTOPs this process, later SIGCONTs it and says 'resumed'
          });
        },
      });
      await workload.start();
      await send({ type: 'ready' });
      return;
    case 'clock-ping':
      await send({ type: 'clock-pong', n: message.n, reading: clockReading() });
      return;
    case 'probe':
      await send({ type: 'probe-result', record: await workload!.probe(message.round, message.budgetMs) });
      return;
    case 'arm-pause':
      armed = true;
      return;
    case 'stall': {
      // Blocks this process's event loop: no timer, no socket read, no signal listener can run. From
      // a timer callback, as a GC pause in the middle of the program would: after it, the event loop
      // reads the sockets before it runs the timers that came due meanwhile.
      const { start, end } = await new Promise<{ start: number; end: number }>((resolve) =>
        setTimeout(() => {
          const from = sharedNow();
          while (sharedNow() - from < message.ms);
          resolve({ start: from, end: sharedNow() });
        }, 0),
      );
      await send({ type: 'stalled', start, end });
      return;
    }
    case 'disarm':
      armed = false;
      return;
    case 'resumed':
      resume?.();
      resume = undefined;
      return;
    case 'stop':
      armed = false;
      resume?.();
      await workload?.stop();
      clearInterval(flusher);
      await flush();
      await send({ type: 'stopped', cycles: workload?.cycles ?? 0, reading: clockReading() });
      process.disconnect();
      return;
  }
}
