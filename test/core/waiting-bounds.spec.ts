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
import { buildChild } from './child-build.js';
import type { FromWaiter, WaiterChildConfig } from './fixtures/waiter-child.js';
import { LockAcquisitionError, RedlockClosedError } from '../../lib/errors/index.js';
import { now, rejectionOf, resourceName, timed, useMasters, waitFor, whilePaused } from '../support/index.js';

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
  beforeAll(() => {
    child = buildChild('test/core/fixtures/waiter-child.ts');
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    child?.remove();
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

  it.each(['SIGSTOP', 'SIGKILL'] as const)(
    'after the first waiter is stopped (%s), the next waiter gets the lock within TTL + 1 s of the holder’s end',
    async (signal) => {
      const resource = resourceName('first-stopped');
      const key = `lock:${resource}`;
      const holder = await set.redlock({ keyPrefix: 'lock:' });
      const held = await holder.acquire(resource, 30_000);
      const first = await waiterProcess({
        urls: set.urls,
        resource,
        ttl: WAITER_TTL,
        options: { ...WAITER, keyPrefix: 'lock:' },
      });
      first.send('acquire');
      expect(await waitFor(queuedEverywhere(set.clients, key, 1), 5_000)).toBe(true);
      const next = await set.redlock({ ...WAITER, keyPrefix: 'lock:', retryCount: 1_000 });
      const waiting = next.acquire(resource, WAITER_TTL);
      expect(await waitFor(queuedEverywhere(set.clients, key, 2), 5_000)).toBe(true);
      first.kill(signal);
      // The holder's last act: it sets a TTL as long as the first waiter's claim window, then never
      // renews (it crashed). The key is free once that TTL has run out.
      const ttl = CLAIM_WINDOW;
      const end = now();
      await held.extend(ttl);
      const lock = await waiting;
      const after = now() - end;
      // Before: the first waiter's ticket kept the free key from everyone for its lease (5.4 s).
      expect(after).toBeLessThan(ttl + 1_000 + SLACK);
      await lock.release();
      first.kill('SIGKILL');
    },
    40_000,
  );

  it('a waiter behind others ends its wait after its retryCount, and after its acquireTimeout', async () => {
    const resource = resourceName('behind');
    const key = `lock:${resource}`;
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    const held = await holder.acquire(resource, 30_000);
    const first = await set.redlock({ keyPrefix: 'lock:', retryCount: 10_000 });
    const firstWait = first.acquire(resource, 10_000).catch(() => undefined);
    expect(await waitFor(queuedEverywhere(set.clients, key, 1), 5_000)).toBe(true);

    // Defaults: ticket lease 2 × (200 + 100) + 2 × 500 + 100 = 1.7 s; a waiter behind tries about
    // every third of it. A queue that does not move ends its wait after retryCount such tries.
    const LEASE = 1_700;
    const byCount = await set.redlock({ keyPrefix: 'lock:', retryCount: 2 });
    const counted = timed(byCount.acquire(resource, 10_000));
    expect(await waitFor(queuedEverywhere(set.clients, key, 2), 5_000)).toBe(true);
    const bound = (2 + 2) * LEASE + SLACK;
    let settled = false;
    void counted.then(() => (settled = true));
    expect(await waitFor(() => settled, bound)).toBe(true); // before: it waited as long as the first waiter
    const { error } = await counted;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as Error).message).toContain('(`retryCount` 2)');

    const byTime = await set.redlock({ keyPrefix: 'lock:', retryCount: 10_000, acquireTimeout: 1_500 });
    const timedOut = await timed(byTime.acquire(resource, 10_000));
    expect(timedOut.error).toBeInstanceOf(LockAcquisitionError);
    expect(timedOut.ms).toBeLessThan(1_500 + SLACK);

    await held.release();
    const won = await firstWait;
    await won?.release();
  }, 40_000);

  it('a paused master holds no acquisition past its retry budget, in the yield round too', async () => {
    const resource = resourceName('yield-paused');
    const key = `lock:${resource}`;
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    const held = await holder.acquire(resource, 30_000);
    const RETRY = { retryCount: 3, retryDelay: 1_000, retryJitter: 0, commandTimeout: 500 };
    const waiter = await set.redlock({ keyPrefix: 'lock:', ...RETRY });
    let settled = false;
    const waiting = timed(waiter.acquire(resource, 10_000)).finally(() => (settled = true));
    expect(await waitFor(queuedEverywhere(set.clients, key, 1), 5_000)).toBe(true);
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
    const { error } = await waiting;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await held.release();
    for (const c of set.clients) await c.del(key);
  }, 40_000);

  it('close() withdraws a queued waiter: once the holder releases, the key is free on every master', async () => {
    const resource = resourceName('close-queued');
    const key = `lock:${resource}`;
    const holder = await set.redlock({ keyPrefix: 'lock:' });
    const held = await holder.acquire(resource, 30_000);
    const waiter = await set.redlock({ keyPrefix: 'lock:' });
    const waiting = rejectionOf(waiter.acquire(resource, 10_000));
    expect(await waitFor(queuedEverywhere(set.clients, key, 1), 5_000)).toBe(true);
    await waiter.close();
    expect(await waiting).toBeInstanceOf(RedlockClosedError);
    await held.release();
    // Within a round trip of the release (commandTimeout bounds one): nothing handed to the closed waiter.
    const free = async (): Promise<boolean> =>
      (await Promise.all(set.clients.map((c) => c.exists(key, `${key}:handoff:queue`)))).every((n) => n === 0);
    expect(await waitFor(free, 500)).toBe(true);
  }, 30_000);
});
