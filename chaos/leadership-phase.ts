/**
 * The leadership phase of `npm run chaos`: several client processes campaign for one resource
 * (`lead()`, fencing on) while a nemesis makes the leader resign, SIGKILLs it (and starts a new
 * process), SIGSTOPs it past its TTL, or hangs a minority of masters meanwhile. Measures each
 * takeover (from the fault to the next leader's own report of its term) and checks, on the register
 * server's log of the leaders' work, that no earlier term worked after a later one began and that
 * fencing tokens only increase.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { RedisMaster } from '../tools/redis-masters.js';
import type { FromLeaderClient, LeaderClientConfig, ToLeaderClient } from './leader-client.js';

const LEADER_CLIENT_JS = fileURLToPath(new URL('./leader-client.js', import.meta.url));
const wallNow = (): number => performance.timeOrigin + performance.now();

export type LeadershipEvent = 'resign' | 'sigkill' | 'sigstop' | 'sigkill+hung-master' | 'sigstop+hung-master';

export interface Takeover {
  event: LeadershipEvent;
  /** From the fault (or the resign request) to the next leader's report of its term, ms. */
  ms: number;
  /** The bound it must meet: a few round trips for resign, `ttl + retryDelay` (+ jitter) otherwise, plus slack. */
  boundMs: number;
}

export interface LeadershipResult {
  seconds: number;
  clients: number;
  ttl: number;
  retryDelay: number;
  terms: number;
  takeovers: Takeover[];
  /** Writes by a term after a later term had begun writing. */
  overlaps: number;
  /** Terms whose token was not above the previous term's. */
  tokenInversions: number;
  /** Faults after which no other process led within the bound. */
  missedTakeovers: number;
}

export interface LeadershipSettings {
  seconds: number;
  clients: number;
  /** Masters the clients lock on (plain addresses, no proxies), and the processes to hang. */
  masters: readonly RedisMaster[];
  registerUrl: string;
  log: (line: string) => void;
}

const TTL = 1_000;
const RETRY_DELAY = 200;
const COMMAND_TIMEOUT = 100;
/** Head-room for a loaded machine on top of each bound. */
const SLACK = 1_000;

class LeaderClient {
  readonly changes: Extract<FromLeaderClient, { type: 'change' }>[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<unknown>;
  private readonly ready: Promise<void>;
  private onResigned: (() => void) | undefined;

  constructor(readonly config: LeaderClientConfig) {
    this.child = fork(LEADER_CLIENT_JS, [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
    });
    this.exited = once(this.child, 'exit');
    this.ready = new Promise((resolve) => {
      this.child.on('message', (m: FromLeaderClient) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'change') this.changes.push(m);
        else if (m.type === 'resigned') this.onResigned?.();
      });
    });
  }

  whenReady(): Promise<void> {
    return this.ready;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  get leading(): boolean {
    return this.alive && this.changes.at(-1)?.leading === true;
  }

  get ledSince(): number | undefined {
    const last = this.changes.at(-1);
    return last?.leading ? last.at : undefined;
  }

  resign(): Promise<void> {
    return new Promise((resolve) => {
      this.onResigned = resolve;
      this.child.send({ type: 'resign' } satisfies ToLeaderClient);
    });
  }

  signal(name: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT'): void {
    this.child.kill(name);
  }

  async stop(): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGCONT');
    this.child.send({ type: 'stop' } satisfies ToLeaderClient, () => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3_000);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): void {
    this.child.kill('SIGCONT');
    this.child.kill('SIGKILL');
  }
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) return false;
    await sleep(5);
  }
  return true;
}

/** Runs the phase; always stops its processes and resumes any master it hung. */
export async function runLeadershipPhase(settings: LeadershipSettings): Promise<LeadershipResult> {
  const resource = `chaos-leader:${Date.now()}`;
  const logKey = `leadership-log:${resource}`;
  const register = new Redis(settings.registerUrl, { maxRetriesPerRequest: 1 });
  const nodes = settings.masters.map((m) => m.url);
  const clients: LeaderClient[] = [];
  let spawned = 0;
  const spawn = async (): Promise<LeaderClient> => {
    const client = new LeaderClient({
      id: `l${++spawned}`,
      nodes,
      registerUrl: settings.registerUrl,
      logKey,
      resource,
      ttl: TTL,
      retryDelay: RETRY_DELAY,
      commandTimeout: COMMAND_TIMEOUT,
    });
    clients.push(client);
    await client.whenReady();
    return client;
  };
  const takeovers: Takeover[] = [];
  let missedTakeovers = 0;
  const hung: RedisMaster[] = [];
  const events: LeadershipEvent[] = ['resign', 'sigkill', 'sigstop', 'sigkill+hung-master', 'sigstop+hung-master'];
  try {
    await Promise.all(Array.from({ length: settings.clients }, spawn));
    // Freshly started masters do not vote until the restart guard trusts them: wait for a first leader.
    if (!(await until(() => clients.some((c) => c.leading), 15_000))) missedTakeovers++;
    const end = performance.now() + settings.seconds * 1_000;
    for (let round = 0; performance.now() < end; round++) {
      if (!(await until(() => clients.some((c) => c.leading), TTL + RETRY_DELAY + SLACK))) {
        missedTakeovers++;
        continue;
      }
      await sleep(300 + Math.random() * 400); // the leader works for a while
      const leader = clients.find((c) => c.leading);
      if (!leader) continue;
      const event = events[round % events.length];
      if (event.endsWith('hung-master')) {
        const master = settings.masters[Math.floor(Math.random() * settings.masters.length)];
        master.pause();
        hung.push(master);
      }
      const start = wallNow();
      if (event === 'resign') await leader.resign();
      else if (event.startsWith('sigkill')) leader.signal('SIGKILL');
      else leader.signal('SIGSTOP');
      const bound = event === 'resign' ? RETRY_DELAY + SLACK : TTL + RETRY_DELAY * 1.5 + SLACK;
      const others = () => clients.filter((c) => c !== leader && c.leading);
      if (await until(() => others().length > 0, bound)) {
        takeovers.push({ event, ms: others()[0].ledSince! - start, boundMs: bound });
      } else missedTakeovers++;
      await sleep(200);
      if (event.startsWith('sigstop')) leader.signal('SIGCONT');
      for (const master of hung.splice(0)) master.resume();
      if (event === 'resign' || event.startsWith('sigkill')) {
        // Keep the number of campaigning processes: a resigned one leaves, a killed one is replaced.
        if (event === 'resign') await leader.stop();
        clients.splice(clients.indexOf(leader), 1);
        await spawn();
      }
    }
    await sleep(300);
  } finally {
    for (const master of hung) master.resume();
    await Promise.all(clients.map((c) => c.stop().catch(() => c.kill())));
  }

  // The leaders' work, in the order the register server received it.
  const log = (await register.lrange(logKey, 0, -1)).map((line) => {
    const [id, term, token] = line.split('|');
    return { term: `${id}#${term}`, token: Number(token) };
  });
  await register.del(logKey);
  register.disconnect();
  const finished = new Set<string>();
  let current: string | undefined;
  let lastToken = -Infinity;
  let overlaps = 0;
  let tokenInversions = 0;
  let terms = 0;
  for (const entry of log) {
    if (entry.term !== current) {
      if (finished.has(entry.term)) overlaps++;
      else {
        terms++;
        if (!(entry.token > lastToken)) tokenInversions++;
      }
      if (current) finished.add(current);
      current = entry.term;
    }
    if (entry.token < lastToken) tokenInversions++;
    lastToken = Math.max(lastToken, entry.token);
  }
  return {
    seconds: settings.seconds,
    clients: settings.clients,
    ttl: TTL,
    retryDelay: RETRY_DELAY,
    terms,
    takeovers,
    overlaps,
    tokenInversions,
    missedTakeovers,
  };
}

/** Problems that fail the run. */
export function leadershipProblems(result: LeadershipResult): string[] {
  const problems: string[] = [];
  if (result.overlaps)
    problems.push(`leadership: ${result.overlaps} writes by an earlier term after a later term began`);
  if (result.tokenInversions)
    problems.push(`leadership: ${result.tokenInversions} fencing tokens not above the previous term's`);
  if (result.missedTakeovers)
    problems.push(`leadership: ${result.missedTakeovers} faults not taken over within their bound`);
  const late = result.takeovers.filter((t) => t.ms > t.boundMs);
  if (late.length) problems.push(`leadership: ${late.length} takeovers beyond their bound`);
  return problems;
}

/** The report's section for the phase. */
export function renderLeadership(result: LeadershipResult): string {
  const byEvent = new Map<LeadershipEvent, number[]>();
  for (const t of result.takeovers) byEvent.set(t.event, [...(byEvent.get(t.event) ?? []), t.ms]);
  const rows = [...byEvent.entries()].map(([event, list]) => {
    const sorted = [...list].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    return `| ${event} | ${list.length} | ${median.toFixed(0)} ms | ${sorted.at(-1)!.toFixed(0)} ms |`;
  });
  return [
    '',
    '## Leadership phase',
    '',
    `${result.clients} client processes campaign with \`lead()\` (ttl ${result.ttl} ms, retryDelay ${result.retryDelay} ms, fencing) for ${result.seconds} s while the nemesis makes the leader resign, SIGKILLs it (a new process replaces it), SIGSTOPs it past its TTL, or does either while one master is hung (SIGSTOP). Takeover: from the fault to the next leader's own report of its term. The leaders append to a log on the register server while \`isLeader\`; see [docs/leadership.md](../leadership.md).`,
    '',
    '| fault | takeovers | median | max |',
    '|---|---|---|---|',
    ...rows,
    '',
    `Terms: ${result.terms}. Overlapping terms (an earlier term writing after a later one began): **${result.overlaps}**. Token inversions: **${result.tokenInversions}**. Faults not taken over within the bound: **${result.missedTakeovers}**.`,
    '',
  ].join('\n');
}
