/**
 * Leader election across OS processes on real masters: three client processes campaign for one
 * resource; the leader resigns, is killed (SIGKILL) or paused (SIGSTOP), also while a master hangs.
 * Measures takeover times, and checks on a separate oracle Redis that the leaders' work never
 * overlaps: the leaders write to a fenced register with their term's token, and every write must
 * have been checked (`isLeader`) before any later term began (`leader-writes-oracle.ts`).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { buildChild } from './child-build.js';
import type { ChildConfig, FromChild, ToChild } from './fixtures/leader-child.js';
import { readFencedLog } from './fixtures/fenced-register.js';
import { judgeLeaderWrites, type LeaderWritesVerdict } from './leader-writes-oracle.js';
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
  readonly id: string;

  constructor(entry: string, config: ChildConfig) {
    this.id = config.id;
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

  /** Makes the child keep its writes from now on (a late write, injected); resolves once it kept one. */
  hold(): Promise<void> {
    const holding = this.reply('holding');
    this.child.send({ type: 'hold' } satisfies ToChild);
    return holding.then(() => undefined);
  }

  /** Sends the kept writes; resolves to how many, once all reached the register. */
  flush(): Promise<number> {
    const flushed = this.reply('flushed');
    this.child.send({ type: 'flush' } satisfies ToChild);
    return flushed.then((message) => (message.type === 'flushed' ? message.count : 0));
  }

  private reply(type: FromChild['type']): Promise<FromChild> {
    return new Promise((resolve) => {
      const listen = (message: FromChild): void => {
        if (message.type !== type) return;
        this.child.off('message', listen);
        resolve(message);
      };
      this.child.on('message', listen);
    });
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
/** Late writes per run: checked in their term, arrived after the next term had written (refused). */
const late: number[] = [];

beforeAll(async () => {
  child = buildChild('test/core/fixtures/leader-child.ts', ['test/core/fixtures/fenced-register.ts']);
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
      `leadership takeover times (3 client processes, 3 masters, ttl ${TTL} ms, retryDelay ${RETRY_DELAY} ms):\n${measured.join('\n')}\nlate writes refused by the fence, per run: ${late.join(', ')}`,
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
 * Judges the leaders' writes to the register of `resource` (once the processes have stopped) and
 * expects no overlap; returns the verdict (terms that wrote, late writes the fence refused).
 */
async function expectNoOverlap(resource: string, procs: LeaderProcess[]): Promise<LeaderWritesVerdict> {
  const starts = procs.flatMap((p) => p.changes.filter((change) => change.leading));
  const verdict = judgeLeaderWrites(await readFencedLog(oracle, resource), starts);
  expect(verdict.problems).toEqual([]);
  late.push(verdict.late);
  return verdict;
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
    expect((await expectNoOverlap(resource, procs)).terms.length).toBeGreaterThanOrEqual(2);
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
    expect((await expectNoOverlap(resource, procs)).terms.length).toBeGreaterThanOrEqual(2);
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
    expect((await expectNoOverlap(resource, procs)).terms.length).toBeGreaterThanOrEqual(2);
  });

  it('a write held past its term (injected) reaches the register after the next term wrote: the fence refuses it, the oracle calls it late, not an overlap', async () => {
    const { resource, procs, leader } = await campaign();
    await leader.hold(); // the leader checks isLeader and keeps the write instead of sending it
    await leader.resign();
    const { leader: next } = await newLeader(procs, leader, RETRY_DELAY + SLACK);
    const nextWrote = async (): Promise<boolean> =>
      (await readFencedLog(oracle, resource)).some((write) => write.id === next.id && write.accepted);
    expect(await waitFor(nextWrote, 3_000)).toBe(true);
    const held = await leader.flush();
    expect(held).toBeGreaterThan(0);
    await stopAll(procs);
    const verdict = await expectNoOverlap(resource, procs);
    // Arrival order alone calls each of them an earlier term's write after a later term's.
    expect(verdict.late).toBe(held);
    expect(verdict.refused).toBe(held);
    expect(verdict.terms.length).toBeGreaterThanOrEqual(2);
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
        expect((await expectNoOverlap(resource, procs)).terms.length).toBeGreaterThanOrEqual(2);
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
        expect((await expectNoOverlap(resource, procs)).terms.length).toBeGreaterThanOrEqual(3);
      }
    } finally {
      redis.masters[0].resume();
    }
  }, 40_000);
});
