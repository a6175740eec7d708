/**
 * Leader election across OS processes on real masters: three client processes campaign for one
 * resource; the leader resigns, is killed (SIGKILL) or paused (SIGSTOP), also while a master hangs.
 * Measures takeover times, and checks on a separate oracle Redis that the leaders' work never
 * overlaps: once a term has written, no earlier term writes again, and fencing tokens only increase.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { buildChild } from './child-build.js';
import type { ChildConfig, FromChild, ToChild } from './fixtures/leader-child.js';
import { resourceName, sleep, waitFor } from '../support/index.js';

const TTL = 1_000;
const RETRY_DELAY = 300;
const COMMAND_TIMEOUT = 100;
/** Head-room for a loaded machine (2 cores shared by many test runs) on top of each bound. */
const SLACK = 1_500;

const wallNow = (): number => performance.timeOrigin + performance.now();

type Change = Extract<FromChild, { type: 'change' }>;

class LeaderProcess {
  readonly changes: Change[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<unknown>;
  private resolveResigned: ((at: number) => void) | undefined;

  constructor(entry: string, config: ChildConfig) {
    this.child = fork(entry, [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
    });
    this.exited = once(this.child, 'exit');
    this.child.on('message', (message: FromChild) => {
      if (message.type === 'change') this.changes.push(message);
      if (message.type === 'resigned') this.resolveResigned?.(message.at);
    });
  }

  ready(): Promise<void> {
    return new Promise((resolve) => this.child.on('message', (m: FromChild) => m.type === 'ready' && resolve()));
  }

  get leading(): boolean {
    return this.changes.at(-1)?.leading === true;
  }

  /** When this process last became leader (its own wall clock), or undefined. */
  get ledSince(): number | undefined {
    const last = this.changes.at(-1);
    return last?.leading ? last.at : undefined;
  }

  resign(): Promise<number> {
    return new Promise((resolve) => {
      this.resolveResigned = resolve;
      this.child.send({ type: 'resign' } satisfies ToChild);
    });
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }

  pause(): void {
    this.child.kill('SIGSTOP');
  }

  resume(): void {
    this.child.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGCONT');
    this.child.send({ type: 'close' } satisfies ToChild, () => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3_000);
    await this.exited;
    clearTimeout(timer);
  }
}

let redis: RedisMasters;
let oracle: Redis;
let child: ReturnType<typeof buildChild>;
const running: LeaderProcess[] = [];
const measured: string[] = [];

beforeAll(async () => {
  child = buildChild('test/core/fixtures/leader-child.ts');
  redis = await startRedisMasters(4); // three lock masters and the oracle
  oracle = new Redis(redis.urls[3], { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  for (const m of redis?.masters ?? []) m.resume();
  oracle?.disconnect();
  await redis?.stop();
  child?.remove();
  if (measured.length)
    console.log(
      `leadership takeover times (3 client processes, 3 masters, ttl ${TTL} ms, retryDelay ${RETRY_DELAY} ms):\n${measured.join('\n')}`,
    );
});

/** Starts three campaigning processes on a fresh resource and waits until one of them leads. */
async function campaign(): Promise<{ resource: string; procs: LeaderProcess[]; leader: LeaderProcess }> {
  const resource = resourceName('lead-proc');
  const procs = ['a', 'b', 'c'].map(
    (id) =>
      new LeaderProcess(child.entry, {
        id,
        urls: redis.urls.slice(0, 3),
        oracle: redis.urls[3],
        resource,
        ttl: TTL,
        retryDelay: RETRY_DELAY,
        commandTimeout: COMMAND_TIMEOUT,
      }),
  );
  running.push(...procs);
  await Promise.all(procs.map((p) => p.ready()));
  expect(await waitFor(() => procs.some((p) => p.leading), 5_000)).toBe(true);
  await sleep(300); // the leader works for a while
  return { resource, procs, leader: procs.find((p) => p.leading)! };
}

/** Waits for a process other than `old` to lead; returns it and when it took over (its clock). */
async function newLeader(
  procs: LeaderProcess[],
  old: LeaderProcess,
  timeoutMs: number,
): Promise<{ leader: LeaderProcess; at: number }> {
  const others = procs.filter((p) => p !== old);
  expect(await waitFor(() => others.some((p) => p.leading), timeoutMs, 5)).toBe(true);
  const leader = others.find((p) => p.leading)!;
  return { leader, at: leader.ledSince! };
}

/**
 * The oracle's log of the leaders' work: once a term (process, term number) has written, no other
 * term may write again before it (no overlap), and fencing tokens never go down.
 */
async function expectNoOverlap(resource: string): Promise<number> {
  const log = (await oracle.lrange(`actions:${resource}`, 0, -1)).map((line) => {
    const [id, term, token] = line.split('|');
    return { term: `${id}#${term}`, token: Number(token) };
  });
  const finished = new Set<string>();
  let current: string | undefined;
  let lastToken = -Infinity;
  for (const entry of log) {
    if (entry.term !== current) {
      if (current) finished.add(current);
      expect(finished.has(entry.term)).toBe(false); // an earlier term wrote after a later one began
      expect(entry.token).toBeGreaterThan(lastToken);
      current = entry.term;
    }
    expect(entry.token).toBeGreaterThanOrEqual(lastToken);
    lastToken = entry.token;
  }
  return finished.size + (current ? 1 : 0);
}

async function stopAll(procs: LeaderProcess[]): Promise<void> {
  await Promise.all(procs.map((p) => p.stop()));
}

describe('leadership across processes (3 masters)', () => {
  it('leader resigns: a standby takes over within a few round trips', async () => {
    const { resource, procs, leader } = await campaign();
    const asked = wallNow();
    await leader.resign();
    const { at } = await newLeader(procs, leader, RETRY_DELAY + SLACK);
    measured.push(`  resign:                       ${(at - asked).toFixed(1)} ms`);
    await sleep(200);
    await stopAll(procs);
    expect(await expectNoOverlap(resource)).toBeGreaterThanOrEqual(2);
  });

  it('leader killed (SIGKILL): a standby takes over within the TTL plus one retry', async () => {
    const { resource, procs, leader } = await campaign();
    const killed = wallNow();
    leader.kill();
    const { at } = await newLeader(procs, leader, TTL + RETRY_DELAY * 1.25 + SLACK);
    expect(at - killed).toBeLessThan(TTL + RETRY_DELAY * 1.25 + SLACK);
    measured.push(`  SIGKILL:                      ${(at - killed).toFixed(1)} ms`);
    await sleep(200);
    await stopAll(procs);
    expect(await expectNoOverlap(resource)).toBeGreaterThanOrEqual(2);
  });

  it('leader paused (SIGSTOP): a standby takes over; resumed, the old leader knows it lost and does no work', async () => {
    const { resource, procs, leader } = await campaign();
    const paused = wallNow();
    leader.pause();
    const { at } = await newLeader(procs, leader, TTL + RETRY_DELAY * 1.25 + SLACK);
    measured.push(`  SIGSTOP:                      ${(at - paused).toFixed(1)} ms`);
    await sleep(300); // the new leader works while the old one is still stopped
    leader.resume();
    expect(await waitFor(() => !leader.leading, 3_000)).toBe(true);
    await sleep(300); // the old leader's timers have run: any work it still did would be in the log now
    await stopAll(procs);
    expect(await expectNoOverlap(resource)).toBeGreaterThanOrEqual(2);
  });

  it('with one master hung (SIGSTOP): SIGKILL and SIGSTOP of the leader are still taken over, with no overlap', async () => {
    redis.masters[0].pause();
    try {
      {
        const { resource, procs, leader } = await campaign();
        const killed = wallNow();
        leader.kill();
        const { at } = await newLeader(procs, leader, TTL + RETRY_DELAY * 1.25 + SLACK);
        measured.push(`  SIGKILL, one master hung:     ${(at - killed).toFixed(1)} ms`);
        await sleep(200);
        await stopAll(procs);
        expect(await expectNoOverlap(resource)).toBeGreaterThanOrEqual(2);
      }
      {
        const { resource, procs, leader } = await campaign();
        const paused = wallNow();
        leader.pause();
        const { at } = await newLeader(procs, leader, TTL + RETRY_DELAY * 1.25 + SLACK);
        measured.push(`  SIGSTOP, one master hung:     ${(at - paused).toFixed(1)} ms`);
        await sleep(300);
        leader.resume();
        expect(await waitFor(() => !leader.leading, 3_000)).toBe(true);
        await sleep(300);
        const asked = wallNow();
        const current = procs.find((p) => p.leading)!;
        await current.resign();
        const { at: next } = await newLeader(procs, current, RETRY_DELAY + SLACK);
        measured.push(`  resign, one master hung:      ${(next - asked).toFixed(1)} ms`);
        await sleep(200);
        await stopAll(procs);
        expect(await expectNoOverlap(resource)).toBeGreaterThanOrEqual(3);
      }
    } finally {
      redis.masters[0].resume();
    }
  }, 40_000);
});
