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
import { SCRIPTS } from '../../lib/lua/scripts.generated.js';
import { releaseChannelOf } from '../../lib/kinds/channels.js';
import type { HandoffChildConfig, HandoffChildReport } from './fixtures/handoff-child.js';
import { resourceName, sleep, startMonitor, timed, useMasters, waitFor } from '../support/index.js';

const PROCESSES = 6;

/** The sha1 of the ticket script, as EVALSHA names it. */
const TICKET_SCRIPT = createHash('sha1').update(SCRIPTS.ticketAcquire.lua).digest('hex');

/** True for a command (or MONITOR line: name, then arguments) that runs the ticket script. */
function isTicketAttempt(name: string | undefined, script: unknown): boolean {
  const command = name?.toLowerCase();
  return (
    (command === 'evalsha' && script === TICKET_SCRIPT) || (command === 'eval' && script === SCRIPTS.ticketAcquire.lua)
  );
}

/**
 * A MONITOR connection. ioredis enters monitoring mode only after MONITOR's reply, and leaves it on
 * disconnect(): lines read in the same chunk as that reply, or still buffered at the end, come as
 * replies to no command (an `error` event), which are ignored here; they fall outside what is counted.
 */

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
    const ticketScript = createHash('sha1').update(SCRIPTS.ticketAcquire.lua).digest('hex');
    const monitor = await startMonitor(set.urls[0]);
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

  it('uncontended, the release script carries the lock key and the value only, as a compare-and-delete does (its queue keys are named on the master)', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('short-release');
    const monitor = await startMonitor(set.urls[0]);
    const scripts: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^eval(sha)?$/i.test(String(args[0])) && args.includes(`lock:${resource}`)) scripts.push(args.map(String));
    });
    try {
      const lock = await redlock.acquire(resource, 10_000);
      await lock.release();
      expect(await waitFor(() => scripts.length >= 1, 5_000)).toBe(true);
      // name, script, number of keys, keys, arguments
      const [, , numKeys, ...rest] = scripts[0];
      expect({ numKeys, key: rest[0], value: rest[1], args: rest.length - 1 }).toEqual({
        numKeys: '1',
        key: `lock:${resource}`,
        value: lock.value,
        args: 2,
      });
    } finally {
      monitor.disconnect();
    }
  }, 30_000);

  it('on connections with an ioredis keyPrefix (which prefixes keys, not channels) a release announces on the channel the waiters follow', async () => {
    const resource = resourceName('prefixed');
    const nodes = set.masters.map((m) => ({ host: '127.0.0.1', port: m.port, keyPrefix: 'app:' }));
    const redlock = await set.redlock({ nodes });
    const monitor = await startMonitor(set.urls[0]);
    const published: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (String(args[0]).toLowerCase() === 'publish') published.push(String(args[1]));
    });
    try {
      const lock = await redlock.acquire(resource, 10_000);
      expect(await set.clients[0].get(`app:lock:${resource}`)).toBe(lock.value);
      await lock.release();
      expect(await waitFor(() => published.length >= 1, 5_000)).toBe(true);
      expect(published).toContain(releaseChannelOf(`lock:${resource}`)); // what a waiter subscribes to
    } finally {
      monitor.disconnect();
    }
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

  it("after its release handed the key on, a process's next acquisition of that key queues with its first attempt: no SET NX", async () => {
    const resource = resourceName('contended-first');
    const key = `lock:${resource}`;
    const p = await set.redlock({ keyPrefix: 'lock:' });
    const w = await set.redlock({ keyPrefix: 'lock:', retryDelay: 6_000, retryJitter: 0, retryCount: 3 });
    const sets = async (): Promise<number> => {
      let calls = 0;
      for (const c of set.clients)
        calls += Number(/cmdstat_set:calls=(\d+)/.exec(await c.info('commandstats'))?.[1] ?? 0);
      return calls;
    };
    const first = await p.acquire(resource, 10_000);
    const waiting = w.acquire(resource, 10_000);
    await waitFor(async () =>
      (await Promise.all(set.clients.map((c) => c.zcard(`${key}:handoff:queue`)))).every((q) => q >= 1),
    ); // w refused, queued with its ticket everywhere
    await first.release(); // hands the key straight to w's ticket: p has seen a handover of it
    const heldByW = await waiting;

    // A key p never saw contended: its first attempt is the plain SET NX, one per master.
    let before = await sets();
    const plain = await p.acquire(resourceName('never-contended'), 10_000);
    await waitFor(async () => (await sets()) - before >= 5); // the last masters' SETs land after the quorum answered
    expect((await sets()) - before).toBe(5);
    await plain.release();

    // The contended key: p's first attempt is the ticket script (refused: w holds), no SET NX.
    // Nothing else sends a SET meanwhile: w holds, and a handover's SET comes with its release only.
    before = await sets();
    const again = timed(p.acquire(resource, 10_000, { retryDelay: 2_000, retryJitter: 0 }));
    await sleep(300); // the first attempt was refused; p waits for its turn
    expect((await sets()) - before).toBe(0);
    const queued = await Promise.all(set.clients.map((c) => c.zcard(`${key}:handoff:queue`)));
    expect(queued.filter((n) => n === 1).length).toBeGreaterThanOrEqual(3); // p's ticket, with that attempt
    await heldByW.release(); // hands the key to p's ticket
    const { value: lock, error } = await again;
    expect(error).toBeUndefined();
    expect(lock!.isHeld).toBe(true);
    await lock!.release();
  }, 30_000);

  it('a waiter behind others does not poll: with a 10 ms retryDelay it makes a handful of attempts per second, not a hundred', async () => {
    const resource = resourceName('patient');
    const key = `lock:${resource}`;
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    const fast = { keyPrefix: 'lock:', retryDelay: 10, retryJitter: 5, retryCount: 10_000 };
    const [w1, w2] = await Promise.all([set.redlock(fast), set.redlock(fast)]);
    const order: string[] = [];
    const take = async (redlock: typeof w1, who: string): Promise<void> => {
      const lock = await redlock.acquire(resource, 10_000);
      order.push(who);
      await sleep(20);
      await lock.release();
    };
    const held = await holder.acquire(resource, 10_000);
    const first = take(w1, 'w1');
    await sleep(50); // arrival order w1, w2
    const second = take(w2, 'w2');
    await waitFor(async () =>
      (await Promise.all(set.clients.map((c) => c.zcard(`${key}:handoff:queue`)))).every((q) => q >= 2),
    ); // both refused once and queued with their tickets
    const queue = await set.clients[0].zrange(`${key}:handoff:queue`, '0', '-1');
    expect(queue).toHaveLength(2);
    const [id1, id2] = queue.map((member) => member.split(' ')[0]); // entries are `id ttl value`
    // Each ticketed attempt names its ticket id last: count each waiter's attempts on one master.
    const monitor = await startMonitor(set.urls[0]);
    const attempts = new Map([
      [id1, 0],
      [id2, 0],
    ]);
    let counting = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      const id = args[args.length - 1];
      if (counting && isTicketAttempt(args[0], args[1]) && attempts.has(id)) attempts.set(id, attempts.get(id)! + 1);
    });
    try {
      await sleep(50);
      counting = true;
      await sleep(1_000); // the holder still holds: w1 is first in line, w2 behind it
      counting = false;
    } finally {
      monitor.disconnect();
    }
    order.push('holder');
    await held.release();
    await Promise.all([first, second]);
    expect(order).toEqual(['holder', 'w1', 'w2']);
    // Its lease is 2 × (10 + 5) + 2 × 500 + 100 ms: an attempt every third of it renews the ticket.
    // Polling every 10 ms it would make dozens; the first in line does (and shows the count works).
    expect(attempts.get(id2)).toBeGreaterThanOrEqual(1);
    expect(attempts.get(id2)).toBeLessThanOrEqual(8);
    expect(attempts.get(id1)).toBeGreaterThan(attempts.get(id2)!);
  }, 30_000);

  it("a handover that reaches the waiter before its first ticketed attempt's replies is counted: it holds the lock at once", async () => {
    const resource = resourceName('early-handover');
    const key = `lock:${resource}`;
    // A 3 s retry delay: a waiter that missed its handover holds the lock only after it.
    const options = { keyPrefix: 'lock:', retryDelay: 3_000, retryJitter: 0, retryCount: 3, commandTimeout: 2_000 };
    const [a, p, w] = await Promise.all([set.redlock(options), set.redlock(options), set.redlock(options)]);
    // p waits for a's lock and is handed it, so its subscription to the key's channel stays a while
    // (no new SUBSCRIBE, whose confirmation would wake it, below). Then p's release hands it to w:
    // p's next acquisition of the key sends its ticket script first.
    const heldByA = await a.acquire(resource, 10_000);
    const pWaiting = p.acquire(resource, 10_000);
    await waitFor(async () =>
      (await Promise.all(set.clients.map((c) => c.zcard(`${key}:handoff:queue`)))).every((q) => q >= 1),
    ); // p queued with its ticket everywhere
    await heldByA.release();
    const heldByP = await pWaiting;
    const wWaiting = w.acquire(resource, 10_000);
    await waitFor(async () =>
      (await Promise.all(set.clients.map((c) => c.zcard(`${key}:handoff:queue`)))).every((q) => q >= 1),
    ); // w queued with its ticket everywhere
    await heldByP.release();
    const heldByW = await wWaiting;
    // p's ticketed attempt reaches the masters at once, but their replies reach p 300 ms late.
    let delaying = false;
    let sent!: () => void;
    const attemptSent = new Promise<void>((resolve) => (sent = resolve));
    const original = Redis.prototype.sendCommand;
    const spy = jest.spyOn(Redis.prototype, 'sendCommand').mockImplementation(function (
      this: Redis,
      ...args: Parameters<Redis['sendCommand']>
    ) {
      const reply = original.apply(this, args);
      const [command] = args;
      if (!delaying || !isTicketAttempt(command.name, command.args[0])) return reply;
      sent();
      return (reply as Promise<unknown>).then(
        (value) => sleep(300, value),
        (error: unknown) => sleep(300).then(() => Promise.reject(error as Error)),
      );
    });
    try {
      delaying = true;
      const again = p.acquire(resource, 10_000);
      await attemptSent;
      await sleep(100);
      await heldByW.release(); // hands the key to p's ticket: the messages reach p before its replies
      const releasedAt = Date.now();
      const lock = await again;
      const ms = Date.now() - releasedAt;
      delaying = false;
      // Had p dropped the messages (not yet in its process's queue), it would wait its 3 s delay.
      expect(ms).toBeLessThan(1_500);
      const values = await Promise.all(set.clients.map((c) => c.get(key)));
      expect(values.filter((v) => v === lock.value).length).toBeGreaterThanOrEqual(3);
      expect(lock.isHeld).toBe(true);
      await lock.release();
    } finally {
      delaying = false;
      spy.mockRestore();
    }
  }, 30_000);
});
