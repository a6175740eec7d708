/**
 * Waiting is bounded wherever a waiter stands in the masters' queue (docs/handoff.md, *Bounds*), on
 * real masters: a first waiter that cannot finish (paused or killed in its own OS process) holds a
 * free key back only for its claim window, not its ticket lease; a waiter behind others honours its
 * `retryCount` and `acquireTimeout`; a paused master cannot hold an acquisition in the yield round
 * past its retry budget; and `close()` leaves no ticket queued.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { ProxyFarm } from '../../chaos/proxy.js';
import { buildChild } from './child-build.js';
import type { FromWaiter, WaiterChildConfig } from './fixtures/waiter-child.js';
import { LockAcquisitionError, RedlockClosedError } from '../../lib/errors/index.js';
import type { Lock } from '../../lib/index.js';
import { now, rejectionOf, resourceName, sleep, timed, useMasters, waitFor, whilePaused } from '../support/index.js';

/** Head-room for a loaded machine (2 cores shared by many test runs) on top of each bound. */
const SLACK = 700;

/** Every master's queue of `key` holds at least `n` tickets. */
function queuedEverywhere(clients: { zcard(key: string): Promise<number> }[], key: string, n: number) {
  return async (): Promise<boolean> =>
    (await Promise.all(clients.map((c) => c.zcard(`${key}:handoff:queue`)))).every((q) => q >= n);
}

describe('waiting bounds (5 masters)', () => {
  const set = useMasters(5);
  let child: ReturnType<typeof buildChild>;
  const children: ChildProcess[] = [];
  const measured: string[] = [];
  beforeAll(() => {
    child = buildChild('test/core/fixtures/waiter-child.ts');
  });
  afterAll(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    child?.remove();
    if (measured.length) console.log(`waiting bounds (5 masters):\n${measured.join('\n')}`);
  });

  /** A waiter in its own process, connected and ready to be told to acquire. */
  async function waiterProcess(config: WaiterChildConfig): Promise<ChildProcess> {
    const c = fork(child.entry, [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
    });
    children.push(c);
    const [message] = (await once(c, 'message')) as [FromWaiter];
    expect(message.type).toBe('ready');
    return c;
  }

  // A long command timeout makes the ticket lease (2 × (retryDelay + jitter) + 2 × commandTimeout +
  // 100 = 5.4 s) far longer than the claim window (commandTimeout + retryDelay + jitter + 100 = 2.75 s).
  const WAITER = { commandTimeout: 2_500, retryDelay: 100, retryJitter: 50 };
  const CLAIM_WINDOW = WAITER.commandTimeout + WAITER.retryDelay + WAITER.retryJitter + 100;
  const WAITER_TTL = 10_000;

  /** A fresh resource (and its key), held for 30 s by a Redlock of its own. */
  async function heldResource(label: string): Promise<{ resource: string; key: string; held: Lock }> {
    const resource = resourceName(label);
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    return { resource, key: `lock:${resource}`, held: await holder.acquire(resource, 30_000) };
  }

  /** Polls (up to 5 s) until every master's queue of `key` holds at least `n` tickets. */
  const queued = (key: string, n: number): Promise<boolean> => waitFor(queuedEverywhere(set.clients, key, n), 5_000);

  /**
   * Queues a first waiter, in its own process, for `resource`, then a next waiter, in this process,
   * behind it (both with {@link WAITER} options); returns the first's process and the next's acquisition.
   */
  async function firstAndNext(resource: string, key: string): Promise<{ first: ChildProcess; waiting: Promise<Lock> }> {
    const first = await waiterProcess({
      urls: set.urls,
      resource,
      ttl: WAITER_TTL,
      options: { ...WAITER, keyPrefix: 'lock:' },
    });
    first.send('acquire');
    expect(await queued(key, 1)).toBe(true);
    const next = await set.redlock({ ...WAITER, keyPrefix: 'lock:', retryCount: 1_000 });
    const waiting = next.acquire(resource, WAITER_TTL);
    waiting.catch(() => undefined); // the caller awaits it; a failed check here must not leave it unhandled
    expect(await queued(key, 2)).toBe(true);
    return { first, waiting };
  }

  it.each(['SIGSTOP', 'SIGKILL'] as const)(
    'after the first waiter is stopped (%s), the next waiter gets the lock within TTL + 1 s of the holder’s end',
    async (signal) => {
      const { resource, key, held } = await heldResource('first-stopped');
      const { first, waiting } = await firstAndNext(resource, key);
      first.kill(signal);
      // The holder's last act: it sets a TTL as long as the first waiter's claim window, then never
      // renews (it crashed). The key is free once that TTL has run out.
      const ttl = CLAIM_WINDOW;
      const end = now();
      await held.extend(ttl);
      const lock = await waiting;
      const after = now() - end;
      measured.push(
        `  first waiter ${signal}: next waiter won ${Math.round(after)} ms after the holder's end (key TTL ${ttl} ms)`,
      );
      // Before: the first waiter's ticket kept the free key from everyone for its lease (5.4 s).
      expect(after).toBeLessThan(ttl + 1_000 + SLACK);
      await lock.release();
      first.kill('SIGKILL');
    },
    40_000,
  );

  it('a killed first waiter holds a free key back from a reader no longer than its claim window, not its ticket lease', async () => {
    const { resource, key, held } = await heldResource('first-killed-reader');
    // A long retry delay makes this first waiter's ticket lease (2 × 2000 + 2 × 2500 + 100 = 9.1 s)
    // far longer than its claim window (2000 + 2500 + 100 = 4.6 s).
    const SLOW = { commandTimeout: 2_500, retryDelay: 2_000, retryJitter: 0 };
    const CLAIM = SLOW.commandTimeout + SLOW.retryDelay + SLOW.retryJitter + 100;
    const first = await waiterProcess({
      urls: set.urls,
      resource,
      ttl: WAITER_TTL,
      options: { ...SLOW, keyPrefix: 'lock:' },
    });
    first.send('acquire');
    expect(await queued(key, 1)).toBe(true);
    const readers = await set.redlock({ keyPrefix: 'lock:', retryCount: 1_000, retryDelay: 100, retryJitter: 50 });
    let won: Lock | undefined;
    readers
      .acquire(resource, WAITER_TTL, { mode: 'read' })
      .then((lock) => (won = lock))
      .catch(() => undefined); // the wait is judged below; close() ends it when the test fails
    first.kill('SIGKILL');
    const ttl = CLAIM;
    const end = now();
    await held.extend(ttl);
    const served = await waitFor(() => won !== undefined, ttl + 1_000 + SLACK);
    measured.push(
      `  first waiter SIGKILL, a reader next: ${served ? 'won' : 'had not won'} ${Math.round(now() - end)} ms after the holder's end (key TTL ${ttl} ms)`,
    );
    // Before: the dead waiter's live ticket refused readers for its whole lease.
    expect(served).toBe(true);
    // Its lease still runs (9.1 s), its claim has lapsed: inspect() no longer reports a waiting writer.
    expect((await readers.inspect(resource)).writerWaiting).toBe(false);
    await won!.release();
  }, 40_000);

  it.each([
    ['a queued writer of one key', false],
    ['a writer of several keys (an intent, no ticket)', true],
  ])(
    '%s whose replies come later than commandTimeout does not keep readers out for as long as it retries',
    async (_label, several) => {
      const farm = ProxyFarm.create(set.masters.map((m) => m.port));
      const resource = resourceName('slow-writer');
      const key = `lock:${resource}`;
      const readers = await set.redlock({ keyPrefix: 'lock:', retryCount: 1_000 });
      const reader = await readers.acquire(resource, 1_000, { mode: 'read' });
      // Defaults: a ticket's claim window 200 + 100 + 500 + 100 = 900 ms (its lease 1.7 s); an
      // intent lives 2 × (200 + 100) + 2 × 500 + 50 = 1.65 s after the attempt that set it.
      const HOLD_OFF = 1_650;
      const DELAY = 400; // each way: a round trip of 800 ms, later than the 500 ms commandTimeout
      const slow = await set.redlock({ nodes: await farm.nodesFor('slow'), keyPrefix: 'lock:', retryCount: 1_000 });
      const writing = slow
        .acquire(several ? [resource, resourceName('slow-writer-other')] : resource, 1_000)
        .catch(() => undefined);
      try {
        const waits = several
          ? waitFor(
              async () => (await Promise.all(set.clients.map((c) => c.exists(`${key}:writer-waiting`)))).every(Boolean),
              5_000,
            )
          : queued(key, 1);
        expect(await waits).toBe(true);
        farm.set(['slow'], [0, 1, 2, 3, 4], { kind: 'delay', ms: DELAY });
        await reader.release();
        // Its next late round holds nobody off: a late ticket claims nothing, a late writer sets no
        // intent. Before, every late attempt renewed its lease or its intent, and readers waited for
        // as long as it retried (here: until their 6 s acquireTimeout).
        const start = now();
        const next = await timed(readers.acquire(resource, 1_000, { mode: 'read', acquireTimeout: 6_000 }));
        measured.push(`  ${_label}, slower than commandTimeout: a reader got in after ${Math.round(now() - start)} ms`);
        expect(next.error).toBeUndefined();
        expect(next.ms).toBeLessThan(2 * DELAY + 500 + HOLD_OFF + SLACK);
        await next.value!.release();
      } finally {
        farm.healAll();
        await slow.close();
        await writing;
        await farm.close();
      }
    },
    40_000,
  );

  it('a killed first waiter whose lease and claim the masters lost (evicted key by key) does not hold a free key back for good', async () => {
    const { resource, key, held } = await heldResource('lease-lost');
    const { first, waiting } = await firstAndNext(resource, key);
    first.kill('SIGKILL');
    // An evicting master drops keys one by one: here the queue's leases and claims, not its order.
    // The dead waiter's ticket is then in the queue with no lease to lapse and no claim deadline.
    await Promise.all(set.clients.map((c) => c.del(`${key}:handoff:lease`, `${key}:handoff:claim`)));
    const ttl = CLAIM_WINDOW;
    const end = now();
    await held.extend(ttl);
    let won: Lock | undefined;
    void waiting.then((lock) => (won = lock));
    // Before: the dead ticket was never pruned and claimed the free key for as long as the next
    // waiter's attempts kept the queue alive; it gave up after its retries.
    const bound = ttl + 1_000 + SLACK;
    const served = await waitFor(() => won !== undefined, bound);
    measured.push(
      `  first waiter killed, its lease and claim evicted: next waiter ${served ? 'won' : 'had not won'} ${Math.round(now() - end)} ms after the holder's end (key TTL ${ttl} ms)`,
    );
    expect(served).toBe(true);
    await won!.release();
  }, 40_000);

  it('a release after the first waiter was paused for longer than its claim window hands the key to the next waiter', async () => {
    const { resource, key, held } = await heldResource('release-skips');
    const queue = await firstAndNext(resource, key);
    const { first } = queue;
    const waiting = timed(queue.waiting);
    first.kill('SIGSTOP');
    await sleep(CLAIM_WINDOW + 200); // the scenario: paused for longer than its claim window
    const released = now();
    await held.release();
    const { value: lock, error } = await waiting;
    const after = now() - released;
    measured.push(
      `  first waiter paused past its claim window: next waiter won ${Math.round(after)} ms after the release`,
    );
    expect(error).toBeUndefined();
    // Before: the release handed the key to the paused waiter, which kept it for its TTL (10 s).
    expect(after).toBeLessThan(WAITER.commandTimeout + SLACK);
    await lock!.release();
    first.kill('SIGKILL');
  }, 40_000);

  it('a lead() standby whose replies come later than commandTimeout does not keep a healthy standby from leading', async () => {
    const farm = ProxyFarm.create(set.masters.map((m) => m.port));
    const { resource, key, held } = await heldResource('slow-standby');
    // Standbys: commandTimeout 500 ms (the default), claim window 200 + 50 + 500 + 100 = 850 ms,
    // ticket lease 2 × 250 + 2 × 500 + 100 = 1.6 s.
    const LEAD = { ttl: 3_000, retryDelay: 200 };
    const CLAIM = 850;
    const DELAY = 400; // each way: a round trip of 800 ms, later than the 500 ms commandTimeout
    const slow = await set.redlock({ nodes: await farm.nodesFor('slow'), keyPrefix: 'lock:' });
    const slowLead = slow.lead(resource, LEAD);
    expect(await queued(key, 1)).toBe(true);
    const healthy = await set.redlock({ keyPrefix: 'lock:' });
    const healthyLead = healthy.lead(resource, LEAD);
    try {
      expect(await queued(key, 2)).toBe(true);
      farm.set(['slow'], [0, 1, 2, 3, 4], { kind: 'delay', ms: DELAY });
      // The holder crashes: its key is free 1 s from now. The slow standby is first in line; each of
      // its attempts wins the free key on every master, times out, and undoes it.
      const ttl = 1_000;
      const end = now();
      await held.extend(ttl);
      // Its claim lapses one window after its last attempt that found the key taken; its last
      // take is undone one delayed round trip later; the healthy standby asks within a third of its lease.
      const bound = ttl + CLAIM + (2 * DELAY + 500) + 1_600 / 3 + SLACK;
      const led = await waitFor(() => healthyLead.isLeader, bound, 5);
      measured.push(
        `  slow standby first in line: healthy standby ${led ? 'led' : 'had not led'} ${Math.round(now() - end)} ms after the holder's end (key TTL ${ttl} ms)`,
      );
      expect(led).toBe(true); // before: the slow standby kept the key from it as long as it retried
    } finally {
      farm.healAll();
      await Promise.all([slowLead.resign(), healthyLead.resign()]);
      await farm.close();
    }
  }, 40_000);

  it('a first waiter that never hears back keeps a key a release handed it for a bounded time, not as long as it retries', async () => {
    const farm = ProxyFarm.create(set.masters.map((m) => m.port));
    const { resource, key, held } = await heldResource('deaf-first');
    // Defaults: claim window 200 + 100 + 500 + 100 = 900 ms, ticket lease 1.7 s.
    const CLAIM = 900;
    const TTL = 3_000;
    const deaf = await set.redlock({ nodes: await farm.nodesFor('deaf'), keyPrefix: 'lock:', retryCount: 1_000 });
    const deafWait = deaf.acquire(resource, TTL).catch(() => undefined);
    try {
      expect(await queued(key, 1)).toBe(true);
      const next = await set.redlock({ keyPrefix: 'lock:', retryCount: 1_000 });
      const waiting = next.acquire(resource, TTL);
      expect(await queued(key, 2)).toBe(true);
      // Its commands still reach the masters; no reply (nor handover message) reaches it any more.
      farm.set(['deaf'], [0, 1, 2, 3, 4], { kind: 'drop', direction: 'replies' });
      await sleep(CLAIM); // the scenario: it keeps asking while the key is held
      const released = now();
      await held.release(); // hands the key to the deaf waiter, first in line; it never counts it
      let won: Awaited<typeof waiting> | undefined;
      void waiting.then((lock) => (won = lock));
      // Its handed key may be renewed for two claim windows, then lives out its TTL; its ticket,
      // queued again, claims the free key for one more window; the next waiter asks within a third
      // of its lease. Before: every attempt of the deaf waiter renewed the handed key.
      const bound = 2 * CLAIM + TTL + CLAIM + 1_700 / 3 + SLACK;
      const served = await waitFor(() => won !== undefined, bound);
      measured.push(
        `  first waiter deaf to replies, handed the key: next waiter ${served ? 'won' : 'had not won'} ${Math.round(now() - released)} ms after the release`,
      );
      expect(served).toBe(true);
      await won!.release();
    } finally {
      farm.healAll();
      await deaf.close();
      await deafWait;
      await farm.close();
    }
  }, 60_000);

  it('a first waiter whose replies stay later than commandTimeout does not regain its claim again and again: the others keep handing the key on', async () => {
    const farm = ProxyFarm.create(set.masters.map((m) => m.port));
    const resource = resourceName('slow-first');
    const key = `lock:${resource}`;
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    const held = await holder.acquire(resource, 30_000);
    // Defaults: claim window 200 + 100 + 500 + 100 = 900 ms, ticket lease 1.7 s.
    const CLAIM = 900;
    const TTL = 1_000;
    const DELAY = 400; // each way: a round trip of 800 ms, later than the 500 ms commandTimeout
    const slow = await set.redlock({ nodes: await farm.nodesFor('slow'), keyPrefix: 'lock:', retryCount: 1_000 });
    const slowWait = slow.acquire(resource, TTL).catch(() => undefined);
    const healthy = await Promise.all([0, 1].map(() => set.redlock({ keyPrefix: 'lock:', retryCount: 1_000 })));
    const holds: [number, number][] = [];
    let running = true;
    const loop = async (redlock: (typeof healthy)[number]): Promise<void> => {
      while (running) {
        const lock = await redlock.acquire(resource, TTL).catch(() => undefined);
        if (!lock) continue;
        const start = now();
        await sleep(20);
        holds.push([start, now()]);
        await lock.release().catch(() => undefined);
      }
    };
    let loops: Promise<void[]> | undefined;
    try {
      expect(await waitFor(queuedEverywhere(set.clients, key, 1), 5_000)).toBe(true);
      farm.set(['slow'], [0, 1, 2, 3, 4], { kind: 'delay', ms: DELAY });
      loops = Promise.all(healthy.map(loop));
      expect(await waitFor(queuedEverywhere(set.clients, key, 2), 5_000)).toBe(true);
      const released = now();
      await held.release(); // the slow waiter, first in line, may be handed the key this once
      const RUN = 12_000;
      await sleep(RUN);
      running = false;
      // The time no healthy waiter held the lock, in gaps of over half a TTL (a handover takes
      // milliseconds): a slow first waiter that kept regaining its claim stalled the key again and
      // again. Now it claims nothing once it has not heard back in time, so only the first stall
      // remains, bounded as in the test above: two claim windows + TTL + one claim window + a third
      // of the lease.
      const spans = holds.filter(([, b]) => b >= released).sort((x, y) => x[0] - y[0]);
      let idle = 0;
      let longest = 0;
      let from = released;
      for (const [a, b] of spans) {
        if (a - from > TTL / 2) idle += a - from;
        longest = Math.max(longest, a - from);
        from = Math.max(from, b);
      }
      if (released + RUN - from > TTL / 2) idle += released + RUN - from;
      measured.push(
        `  first waiter slower than commandTimeout, 2 healthy waiters handing on for ${RUN} ms: idle ${Math.round(idle)} ms in gaps over ${TTL / 2} ms (longest ${Math.round(longest)} ms), ${spans.length} holds`,
      );
      expect(idle).toBeLessThan(2 * CLAIM + TTL + CLAIM + 1_700 / 3 + SLACK);
    } finally {
      running = false;
      farm.healAll();
      await loops;
      await slow.close();
      await slowWait;
      await farm.close();
    }
  }, 60_000);

  it('a waiter behind others ends its wait after its retryCount, and after its acquireTimeout', async () => {
    const { resource, key, held } = await heldResource('behind');
    const first = await set.redlock({ keyPrefix: 'lock:', retryCount: 10_000 });
    const firstWait = first.acquire(resource, 10_000).catch(() => undefined);
    expect(await queued(key, 1)).toBe(true);

    // Defaults: ticket lease 2 × (200 + 100) + 2 × 500 + 100 = 1.7 s; a waiter behind tries about
    // every third of it. A queue that does not move ends its wait after retryCount such tries.
    const LEASE = 1_700;
    const byCount = await set.redlock({ keyPrefix: 'lock:', retryCount: 2 });
    const counted = timed(byCount.acquire(resource, 10_000));
    expect(await queued(key, 2)).toBe(true);
    const bound = (2 + 2) * LEASE + SLACK;
    let settled = false;
    void counted.then(() => (settled = true));
    expect(await waitFor(() => settled, bound)).toBe(true); // before: it waited as long as the first waiter
    const { error, ms } = await counted;
    measured.push(`  waiter behind a first waiter that never wins, retryCount 2: gave up after ${Math.round(ms)} ms`);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as Error).message).toContain('(`retryCount` 2)');

    const byTime = await set.redlock({ keyPrefix: 'lock:', retryCount: 10_000, acquireTimeout: 1_500 });
    const timedOut = await timed(byTime.acquire(resource, 10_000));
    measured.push(`  waiter behind, acquireTimeout 1500 ms: gave up after ${Math.round(timedOut.ms)} ms`);
    expect(timedOut.error).toBeInstanceOf(LockAcquisitionError);
    expect(timedOut.ms).toBeLessThan(1_500 + SLACK);

    await held.release();
    const won = await firstWait;
    await won?.release();
  }, 40_000);

  it('a paused master holds no acquisition past its retry budget, in the yield round too', async () => {
    const { resource, key, held } = await heldResource('yield-paused');
    const RETRY = { retryCount: 3, retryDelay: 1_000, retryJitter: 0, commandTimeout: 500 };
    const waiter = await set.redlock({ keyPrefix: 'lock:', ...RETRY });
    let settled = false;
    const waiting = timed(waiter.acquire(resource, 10_000)).finally(() => (settled = true));
    expect(await queued(key, 1)).toBe(true);
    const [entry] = await set.clients[0].zrange(`${key}:handoff:queue`, '0', '0');
    const score = Number(await set.clients[0].zscore(`${key}:handoff:queue`, entry));
    const value = entry.split(' ')[2];
    // A split handover: masters 0 and 1 handed the key to this waiter (its ticket left their queues);
    // on masters 2 and 3 a waiter ahead of it holds the key, so it must give 0 and 1 on (yield).
    for (const c of set.clients.slice(0, 2)) {
      await c.set(key, value, 'PX', 30_000);
      await c.zrem(`${key}:handoff:queue`, entry);
      await c.zrem(`${key}:handoff:lease`, entry);
    }
    for (const c of set.clients.slice(2, 4)) await c.set(key, `${score - 1}.ahead.x`, 'PX', 30_000);
    await whilePaused([set.masters[4]], async () => {
      // Each attempt: one round, one yield round, one clean-up, each bounded by commandTimeout.
      const budget = (RETRY.retryCount + 1) * (RETRY.retryDelay + 3 * RETRY.commandTimeout);
      expect(await waitFor(() => settled, budget + SLACK)).toBe(true); // before: until the master resumed
    });
    const { error, ms } = await waiting;
    measured.push(`  split handover with one master paused, retryCount 3: gave up after ${Math.round(ms)} ms`);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await held.release();
    for (const c of set.clients) await c.del(key);
  }, 40_000);

  it('close() withdraws a queued waiter: once the holder releases, the key is free on every master', async () => {
    const { resource, key, held } = await heldResource('close-queued');
    const waiter = await set.redlock({ keyPrefix: 'lock:' });
    const waiting = rejectionOf(waiter.acquire(resource, 10_000));
    expect(await queued(key, 1)).toBe(true);
    await waiter.close();
    expect(await waiting).toBeInstanceOf(RedlockClosedError);
    await held.release();
    // Within a round trip of the release (commandTimeout bounds one): nothing handed to the closed waiter.
    const free = async (): Promise<boolean> =>
      (await Promise.all(set.clients.map((c) => c.exists(key, `${key}:handoff:queue`)))).every((n) => n === 0);
    expect(await waitFor(free, 500)).toBe(true);
  }, 30_000);

  it('close() withdraws a waiting writer of several keys: its intent does not hold readers off after close', async () => {
    const resource = resourceName('close-writer');
    const other = resourceName('close-writer-other');
    const readers = await set.redlock({ keyPrefix: 'lock:' });
    const reader = await readers.acquire(resource, 30_000, { mode: 'read' });
    // A writer of two keys does not queue: it registers an intent on every master instead.
    const writer = await set.redlock({ keyPrefix: 'lock:', retryCount: 1_000 });
    const writing = rejectionOf(writer.acquire([resource, other], 10_000));
    const intent = `lock:${resource}:writer-waiting`;
    const intents = async (): Promise<number[]> => Promise.all(set.clients.map((c) => c.exists(intent)));
    expect(await waitFor(async () => (await intents()).every((n) => n === 1), 5_000)).toBe(true);
    await writer.close();
    expect(await writing).toBeInstanceOf(RedlockClosedError);
    // Gone from every master by the time close() returned: readers are admitted at once.
    expect(await intents()).toEqual([0, 0, 0, 0, 0]);
    const next = await readers.tryAcquire(resource, 5_000, { mode: 'read' });
    expect(next).not.toBeNull();
    await Promise.all([reader.release(), next!.release()]);
  }, 30_000);

  it('close() withdraws a lead() standby queued for the key: once the leader resigns, the key is free on every master', async () => {
    const resource = resourceName('close-standby');
    const key = `lock:${resource}`;
    const leaderSide = await set.redlock({ keyPrefix: 'lock:' });
    const leader = leaderSide.lead(resource, { ttl: 10_000 });
    expect(await waitFor(() => leader.isLeader, 5_000)).toBe(true);
    const standbySide = await set.redlock({ keyPrefix: 'lock:' });
    const standby = standbySide.lead(resource, { ttl: 10_000 });
    expect(await queued(key, 1)).toBe(true);
    await standbySide.close();
    expect(standby.isLeader).toBe(false);
    await leader.resign();
    const free = async (): Promise<boolean> =>
      (await Promise.all(set.clients.map((c) => c.exists(key, `${key}:handoff:queue`)))).every((n) => n === 0);
    expect(await waitFor(free, 500)).toBe(true);
  }, 30_000);

  it('close() gives on a key a release already handed to a queued waiter', async () => {
    const { resource, key, held } = await heldResource('close-handed');
    // A 6 s retry delay: the waiter makes no attempt of its own while the test runs.
    const waiter = await set.redlock({ keyPrefix: 'lock:', retryDelay: 6_000, retryJitter: 0 });
    const waiting = rejectionOf(waiter.acquire(resource, 10_000));
    expect(await queued(key, 1)).toBe(true);
    const [entry] = await set.clients[0].zrange(`${key}:handoff:queue`, '0', '0');
    // What a release's handover does on each master (its message is not sent: the waiter has not
    // counted the lock): the key holds the waiter's value, its ticket has left the queue.
    for (const c of set.clients) {
      await c.set(key, entry.split(' ')[2], 'PX', 30_000);
      await c.zrem(`${key}:handoff:queue`, entry);
      await c.zrem(`${key}:handoff:lease`, entry);
    }
    await waiter.close();
    expect(await waiting).toBeInstanceOf(RedlockClosedError);
    const free = async (): Promise<boolean> =>
      (await Promise.all(set.clients.map((c) => c.exists(key)))).every((n) => n === 0);
    expect(await waitFor(free, 500)).toBe(true); // before: the key stayed for the closed waiter's TTL
    await held.release(); // its value is gone: nothing to release
  }, 30_000);
});
