/**
 * Handoff between instances (docs/handoff.md), on real masters: separate OS processes, each with
 * its own `Redlock` and connections and the default retry settings, contend for one key with
 * short holds. Nobody gives up while the lock is handed on, no hold overlaps another (checked on a
 * separate oracle Redis), and no process is starved. A crashed waiter's ticket lapses.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { buildChild } from './child-build.js';
import { HANDOFF_LUA } from '../../lib/core/handoff.js';
import type { HandoffChildConfig, HandoffChildReport } from './fixtures/handoff-child.js';
import { resourceName, timed, useMasters } from '../support/index.js';

const PROCESSES = 6;

describe('handoff between processes (5 masters)', () => {
  const set = useMasters(5);
  let oracle: RedisMasters;
  let child: ReturnType<typeof buildChild>;
  beforeAll(async () => {
    oracle = await startRedisMasters(1);
    child = buildChild('test/core/fixtures/handoff-child.ts');
  });
  afterAll(async () => {
    child?.remove();
    await oracle?.stop();
  });

  it(`${PROCESSES} processes with default settings: 0 give-ups, 0 overlaps, every process served`, async () => {
    const resource = resourceName('handoff');
    const config: HandoffChildConfig = { urls: set.urls, oracle: oracle.urls[0], resource, holdMs: 2, seconds: 4 };
    const children = Array.from({ length: PROCESSES }, () =>
      fork(child.entry, [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] }),
    );
    const reports = children.map((c) => once(c, 'message').then(([m]) => m as HandoffChildReport));
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // let every child connect
    const start = Date.now() + 200;
    for (const c of children) c.send(start);
    const all = await Promise.all(reports);
    for (const c of children) if (c.exitCode === null) await once(c, 'exit');

    const counts = all.map((r) => r.acquisitions);
    expect(all.flatMap((r) => r.errors)).toEqual([]);
    expect(all.map((r) => r.giveUps)).toEqual(new Array(PROCESSES).fill(0));
    expect(all.map((r) => r.overlaps)).toEqual(new Array(PROCESSES).fill(0));
    for (const n of counts) expect(n).toBeGreaterThan(0); // nobody starved
    const sum = counts.reduce((a, b) => a + b, 0);
    const jain = (sum * sum) / (PROCESSES * counts.reduce((a, b) => a + b * b, 0));
    expect(jain).toBeGreaterThan(0.6); // generous: the machine is shared (the bench reports the figure)
    // The keys the handoff used are gone or lapsing: nothing is left held.
    const inspect = new Redis(oracle.urls[0]);
    expect(await inspect.get(`${resource}:inside`)).toBe('0');
    inspect.disconnect();
  }, 60_000);

  it('a release that lands before the waiter is subscribed still reaches it: it tries again once subscribed, not after its retry delay', async () => {
    const resource = resourceName('late-subscribe');
    const holder = await set.redlock();
    const waiter = await set.redlock({ retryDelay: 6_000, retryJitter: 0, retryCount: 3 });
    const held = await holder.acquire(resource, 10_000);
    // The masters confirm the waiter's SUBSCRIBE only after the release below has been published
    // (a slow network or a loaded machine), so its message never reaches the waiter.
    const original = Redis.prototype.subscribe;
    const spy = jest.spyOn(Redis.prototype, 'subscribe').mockImplementation(function (this: Redis, ...args: unknown[]) {
      const subscribe = original as (...a: unknown[]) => ReturnType<Redis['subscribe']>;
      return new Promise<void>((resolve) => setTimeout(resolve, 800)).then(() => subscribe.apply(this, args));
    });
    try {
      const waiting = timed(waiter.acquire(resource, 10_000));
      await new Promise((resolve) => setTimeout(resolve, 250)); // refused once, queued with its ticket
      await held.release(); // hands the key to the waiter's ticket; the message is lost
      const { value: lock, error, ms } = await waiting;
      expect(error).toBeUndefined();
      expect(ms).toBeLessThan(3_500); // without the retry on subscribing it sleeps its 6 s delay
      await lock!.release();
    } finally {
      spy.mockRestore();
    }
  }, 30_000);

  it('a refused attempt sends no clean-up to the masters that had refused it (they wrote nothing)', async () => {
    const resource = resourceName('no-cleanup');
    const holder = await set.redlock();
    const other = await set.redlock();
    const held = await holder.acquire(resource, 10_000);
    const scriptCalls = async (): Promise<number> => {
      let calls = 0;
      for (const c of set.clients) {
        const info = await c.info('commandstats');
        for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
      }
      return calls;
    };
    const before = await scriptCalls();
    await expect(other.tryAcquire(resource, 10_000)).resolves.toBeNull();
    // Decided at the third refusal: only the two masters that had not answered yet may get one.
    expect((await scriptCalls()) - before).toBeLessThanOrEqual(2);
    await held.release();
  }, 30_000);

  it('a release hands the key straight to the first waiter of another process: it holds the lock without an attempt of its own', async () => {
    const resource = resourceName('direct');
    const key = `lock:${resource}`;
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    // A 6 s retry delay: after its first refusal the waiter attempts only when woken.
    const waiter = await set.redlock({ keyPrefix: 'lock:', retryDelay: 6_000, retryJitter: 0, retryCount: 3 });
    const held = await holder.acquire(resource, 10_000);
    const waiting = timed(waiter.acquire(resource, 10_000));
    await new Promise((resolve) => setTimeout(resolve, 300)); // refused, queued with its ticket, subscribed
    const ticketScript = createHash('sha1').update(HANDOFF_LUA.acquire).digest('hex');
    const base = new Redis(set.urls[0]);
    const monitor = await base.monitor();
    const attemptsAfterRelease: string[] = [];
    let released = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (released && args[0]?.toLowerCase() === 'evalsha' && args[1] === ticketScript)
        attemptsAfterRelease.push(args[1]);
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    released = true;
    await held.release();
    const { value: lock, error, ms } = await waiting;
    await new Promise((resolve) => setTimeout(resolve, 100)); // let the monitor catch up
    monitor.disconnect();
    base.disconnect();
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(3_000);
    expect(attemptsAfterRelease).toEqual([]); // the release itself set the waiter's value
    const values = await Promise.all(set.clients.map((c) => c.get(key)));
    expect(values.filter((v) => v === lock!.value).length).toBeGreaterThanOrEqual(3);
    expect(lock!.validity).toBeGreaterThan(10_000 - 3_000);
    await lock!.release();
  }, 30_000);

  it('a split handover (the masters queued different first waiters) is resolved at once: the waiter behind gives its masters on', async () => {
    const resource = resourceName('split-handover');
    const key = `lock:${resource}`;
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    const options = { keyPrefix: 'lock:', retryDelay: 400, retryJitter: 0, retryCount: 6 };
    const [a, b, c] = await Promise.all([set.redlock(options), set.redlock(options), set.redlock(options)]);
    const held = await holder.acquire(resource, 10_000);
    const results: { who: string; error?: unknown }[] = [];
    const take = async (redlock: typeof a, who: string): Promise<void> => {
      try {
        const lock = await redlock.acquire(resource, 10_000);
        results.push({ who });
        await lock.release();
      } catch (error) {
        results.push({ who, error });
      }
    };
    const runs: Promise<void>[] = [];
    for (const [redlock, who] of [
      [a, 'a'],
      [b, 'b'],
      [c, 'c'],
    ] as const) {
      runs.push(take(redlock, who));
      await new Promise((resolve) => setTimeout(resolve, 30)); // arrival order a, b, c
    }
    await new Promise((resolve) => setTimeout(resolve, 300)); // all three queued on every master
    // As if a's ticket had not yet reached masters 2-4, nor b's master 4, when the release ran:
    // masters 0-1 hand the key to a, 2-3 to b, 4 to c. Nobody has a quorum.
    const order = await set.clients[0].zrange(`${key}:handoff:queue`, '0', '-1');
    expect(order).toHaveLength(3);
    const [ta, tb] = order;
    await Promise.all(
      set.clients.map(async (client, i) => {
        const drop = i >= 4 ? [ta, tb] : i >= 2 ? [ta] : [];
        for (const member of drop) {
          await client.zrem(`${key}:handoff:queue`, member);
          await client.zrem(`${key}:handoff:lease`, member);
        }
      }),
    );
    const start = Date.now();
    await held.release();
    await Promise.all(runs);
    // Without giving on, a and b each keep two masters and c one until a's retries run out (6 × 400 ms).
    expect(results.filter((r) => r.error)).toEqual([]);
    expect(results.map((r) => r.who)).toEqual(['a', 'b', 'c']);
    expect(Date.now() - start).toBeLessThan(2_400);
  }, 30_000);

  it('a waiter that aborts after a release handed it the key frees it at once: the next waiter gets it', async () => {
    const resource = resourceName('abort-handed');
    const holder = await set.redlock();
    const slow = { retryDelay: 6_000, retryJitter: 0, retryCount: 3 };
    const [first, second] = await Promise.all([set.redlock(slow), set.redlock(slow)]);
    const held = await holder.acquire(resource, 10_000);
    // Neither waiter hears the release (its SUBSCRIBE is confirmed late): the first never learns it was handed the key.
    const original = Redis.prototype.subscribe;
    const spy = jest.spyOn(Redis.prototype, 'subscribe').mockImplementation(function (this: Redis, ...args: unknown[]) {
      const subscribe = original as (...a: unknown[]) => ReturnType<Redis['subscribe']>;
      return new Promise<void>((resolve) => setTimeout(resolve, 1_500)).then(() => subscribe.apply(this, args));
    });
    try {
      const abort = new AbortController();
      const firstWaiting = timed(first.acquire(resource, 10_000, { signal: abort.signal }));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const secondWaiting = timed(second.acquire(resource, 10_000));
      await new Promise((resolve) => setTimeout(resolve, 250)); // both queued, first ahead
      await held.release(); // hands the key to the first waiter's value
      await new Promise((resolve) => setTimeout(resolve, 100));
      abort.abort(new Error('caller gave up'));
      const abortedAt = Date.now();
      expect((await firstWaiting).error).toEqual(new Error('caller gave up'));
      const { value: lock, error } = await secondWaiting;
      expect(error).toBeUndefined();
      // Without dropping its handed value, the key stays the aborted waiter's until its 10 s TTL.
      expect(Date.now() - abortedAt).toBeLessThan(4_500);
      await lock!.release();
    } finally {
      spy.mockRestore();
    }
  }, 30_000);

  it('uncontended, an acquire and release send what they did before tickets: one SET and one script per master', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('uncontended');
    const calls = async (): Promise<{ set: number; scripts: number }> => {
      const total = { set: 0, scripts: 0 };
      for (const c of set.clients) {
        const info = await c.info('commandstats');
        total.set += Number(/cmdstat_set:calls=(\d+)/.exec(info)?.[1] ?? 0);
        for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) total.scripts += Number(m[1]);
      }
      return total;
    };
    const before = await calls();
    const lock = await redlock.acquire(resource, 10_000);
    await lock.release();
    await new Promise((resolve) => setTimeout(resolve, 100)); // nothing else follows (no withdrawal)
    const after = await calls();
    expect(after.set - before.set).toBe(5);
    expect(after.scripts - before.scripts).toBe(5);
  }, 30_000);

  it('a crashed waiter holds nothing up for longer than its ticket lease: the next waiter gets the lock', async () => {
    const resource = resourceName('crashed-waiter');
    const key = `lock:${resource}`;
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    const waiter = await set.redlock({ keyPrefix: 'lock:', retryDelay: 100, retryJitter: 0, retryCount: 30 });
    const held = await holder.acquire(resource, 5_000);
    // A waiter that queued, then crashed: its ticket is first on every master, leased for 800 ms more.
    await Promise.all(
      set.clients.map(async (c) => {
        const [sec, micro] = await c.time();
        const masterNow = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
        await c.zadd(`${key}:handoff:queue`, 1, 'crashed');
        await c.zadd(`${key}:handoff:lease`, masterNow + 800, 'crashed');
      }),
    );
    const waiting = waiter.acquire(resource, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 150));
    // The release hands the key to the crashed ticket (a reservation); it lapses with the ticket.
    await held.release();
    const releasedAt = Date.now();
    const values = await Promise.all(set.clients.map((c) => c.get(key)));
    expect(values.filter((v) => v === '~crashed').length).toBeGreaterThanOrEqual(3);
    const lock = await waiting;
    expect(lock.isHeld).toBe(true);
    expect(Date.now() - releasedAt).toBeLessThan(800 + 3_000); // the lease, and head-room for a loaded machine
    await lock.release();
  }, 30_000);
});
