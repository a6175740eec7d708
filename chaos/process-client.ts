/** A chaos client in its own OS process (`client.ts`, forked), so that SIGSTOP stops it for real. */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { sharedNow, type ClockReading } from './clock.js';
import type { FromClient, ToClient } from './client.js';
import type { ClientHandle, RecordSink } from './nemesis.js';
import type { ProbeRecord } from './types.js';
import type { WorkloadConfig } from './workload.js';

const CLIENT_JS = fileURLToPath(new URL('./client.js', import.meta.url));

/** One IPC ping-pong: the parent's clock before and after, and the child's reading in between. */
export interface PingPong {
  client: string;
  before: number;
  after: number;
  parentOriginBefore: number;
  parentOriginAfter: number;
  child: ClockReading;
}

export class ProcessClient implements ClientHandle {
  private child: ChildProcess | undefined;
  private sink: RecordSink | undefined;
  private readonly waiters = new Map<string, ((message: FromClient) => void)[]>();
  private onPauseMe: (() => void) | undefined;
  private exited: Promise<unknown> | undefined;
  /** The child's clock reading when it stopped (its perfOffset then, against the pings' at start). */
  lastReading: ClockReading | undefined;

  constructor(
    readonly id: string,
    /** Path of the library to load instead of the built package (a planted-bug copy). */
    private readonly libPath?: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Forks the process (no workload yet). */
  async spawn(): Promise<void> {
    const env = this.libPath ? { ...process.env, CHAOS_LIB: this.libPath } : process.env;
    const child = fork(CLIENT_JS, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [], env });
    this.child = child;
    this.exited = once(child, 'exit');
    child.on('message', (message: FromClient) => this.receive(message));
    await once(child, 'spawn');
  }

  private receive(message: FromClient): void {
    if (message.type === 'records') {
      for (const r of message.sections) this.sink?.section(r);
      for (const r of message.failures) this.sink?.failure(r);
      for (const r of message.stalls) this.sink?.stall?.(r);
      return;
    }
    if (message.type === 'pause-me') {
      if (this.onPauseMe) this.onPauseMe();
      else this.child?.send({ type: 'resumed' } satisfies ToClient); // armed, then given up on: let it write
      return;
    }
    if (message.type === 'fatal') {
      process.stderr.write(`chaos client ${this.id} failed: ${message.message}\n`);
    }
    const queue = this.waiters.get(message.type);
    const waiter = queue?.shift();
    waiter?.(message);
  }

  private request<T extends FromClient['type']>(
    message: ToClient,
    reply: T,
    timeoutMs = 30_000,
  ): Promise<Extract<FromClient, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`chaos client ${this.id}: no '${reply}' within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const queue = this.waiters.get(reply) ?? [];
      queue.push((m) => {
        clearTimeout(timer);
        resolve(m as Extract<FromClient, { type: T }>);
      });
      this.waiters.set(reply, queue);
      this.child!.send(message);
    });
  }

  /** One clock ping-pong (see main.ts, verifySharedClock). */
  async ping(n: number): Promise<PingPong> {
    const parentOriginBefore = performance.timeOrigin + performance.now();
    const before = sharedNow();
    const pong = await this.request({ type: 'clock-ping', n }, 'clock-pong');
    const after = sharedNow();
    const parentOriginAfter = performance.timeOrigin + performance.now();
    return { client: this.id, before, after, parentOriginBefore, parentOriginAfter, child: pong.reading };
  }

  async start(config: WorkloadConfig, sink: RecordSink): Promise<void> {
    if (!this.child) await this.spawn();
    this.sink = sink;
    await this.request({ type: 'start', config }, 'ready');
  }

  async stop(): Promise<number> {
    if (!this.child) return 0;
    this.continueProcess();
    let cycles = 0;
    try {
      const stopped = await this.request({ type: 'stop' }, 'stopped', 20_000);
      cycles = stopped.cycles;
      this.lastReading = stopped.reading;
    } catch (error) {
      process.stderr.write(`${(error as Error).message}; killing it\n`);
    }
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), 3_000);
    await this.exited;
    clearTimeout(timer);
    this.child = undefined;
    return cycles;
  }

  async stall(ms: number): Promise<{ start: number; end: number }> {
    const r = await this.request({ type: 'stall', ms }, 'stalled', ms + 10_000);
    return { start: r.start, end: r.end };
  }

  async probe(round: number, budgetMs: number): Promise<ProbeRecord> {
    const startedAt = sharedNow();
    try {
      return (await this.request({ type: 'probe', round, budgetMs }, 'probe-result', budgetMs + 5_000)).record;
    } catch (error) {
      // No answer in time: a failed probe (the checker fails the run on it), not a crashed harness.
      return { phase: '', client: this.id, round, startedAt, error: (error as Error).message };
    }
  }

  stopProcess(): void {
    this.child?.kill('SIGSTOP');
  }

  continueProcess(): void {
    this.child?.kill('SIGCONT');
  }

  pauseAtNextCommit(ms: number, waitMs: number): Promise<{ start: number; end: number } | undefined> {
    return new Promise((resolve) => {
      const giveUp = setTimeout(() => {
        this.onPauseMe = undefined;
        this.child?.send({ type: 'disarm' } satisfies ToClient);
        resolve(undefined);
      }, waitMs);
      this.onPauseMe = () => {
        clearTimeout(giveUp);
        this.onPauseMe = undefined;
        this.stopProcess();
        const start = sharedNow();
        setTimeout(() => {
          this.continueProcess();
          const end = sharedNow();
          this.child?.send({ type: 'resumed' } satisfies ToClient);
          resolve({ start, end });
        }, ms);
      };
      this.child!.send({ type: 'arm-pause' } satisfies ToClient);
    });
  }

  /** SIGKILL, for emergencies (the run is being interrupted). */
  kill(): void {
    this.child?.kill('SIGCONT');
    this.child?.kill('SIGKILL');
  }
}
