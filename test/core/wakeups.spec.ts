import { describe, expect, it } from '@jest/globals';
import { timed, resourceName, sleep, useMasters } from '../support/index.js';
import type { Lock } from '../../lib/index.js';

/** `connected_clients` from `INFO clients` on one master. */
async function connectedClients(set: ReturnType<typeof useMasters>, i: number): Promise<number> {
  const info = await set.clients[i].info('clients');
  return Number(/connected_clients:(\d+)/.exec(info)![1]);
}

describe('wake-up on release (3 masters)', () => {
  const set = useMasters(3);

  it('a waiter in another Redlock is woken by the release, long before its retry delay', async () => {
    const holder = await set.redlock();
    const waiter = await set.redlock({ retryDelay: 5_000, retryJitter: 0, retryCount: 2 });
    const resource = resourceName('pubsub');
    const held = await holder.acquire(resource, 10_000);

    await (await waiter.acquire(resourceName('warm-up'), 1_000)).release(); // connected: its first attempt is one round trip
    const waiting = timed(waiter.acquire(resource, 10_000));
    await sleep(150); // the waiter's first attempt has failed and it sleeps on its 5 s fallback
    await held.release();
    const { value: lock, error, ms } = await waiting;

    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(1_500); // without the wake-up it would have slept 5 s
    await lock!.release();
  });

  it('with wakeOnRelease: false, a waiter elsewhere falls back to its retry delay', async () => {
    const holder = await set.redlock();
    const waiter = await set.redlock({ retryDelay: 1_200, retryJitter: 0, retryCount: 2, wakeOnRelease: false });
    const resource = resourceName('no-pubsub');
    const held = await holder.acquire(resource, 10_000);

    // Connected first: a first attempt slowed by connecting could come after the release and win at once.
    await (await waiter.acquire(resourceName('warm-up'), 1_000)).release();
    const waiting = timed(waiter.acquire(resource, 10_000));
    await sleep(150);
    await held.release();
    const { value: lock, error, ms } = await waiting;

    expect(error).toBeUndefined();
    expect(ms).toBeGreaterThanOrEqual(1_100);
    await lock!.release();
  });

  it('with wakeOnRelease: false, a waiter behind another keeps its retry delay: nothing would name it', async () => {
    const holder = await set.redlock();
    const quiet = { retryJitter: 0, retryCount: 100, wakeOnRelease: false };
    const a = await set.redlock({ ...quiet, retryDelay: 1_500 }); // first in line, polls rarely
    const b = await set.redlock({ ...quiet, retryDelay: 50 });
    const resource = resourceName('no-pubsub-queue');
    const held = await holder.acquire(resource, 10_000);
    const first = a.acquire(resource, 10_000);
    await sleep(100);
    const second = b.acquire(resource, 10_000);
    await sleep(300); // both queued on the masters, b behind a
    // Now b's attempts are nearly all the scripts master 0 runs: every 50 ms, not every third of
    // its lease (~400 ms), since no release message will ever name it.
    const scripts = async (): Promise<number> =>
      Number(/cmdstat_evalsha:calls=(\d+)/.exec(await set.clients[0].info('commandstats'))?.[1] ?? 0);
    const before = await scripts();
    await sleep(800);
    expect((await scripts()) - before).toBeGreaterThanOrEqual(8);
    await held.release();
    await (await first).release();
    await (await second).release();
  });

  it('a key nobody waits for any more is unsubscribed once its linger (2 s) is over', async () => {
    const holder = await set.redlock();
    const waiter = await set.redlock({ retryDelay: 5_000, retryJitter: 0 });
    const resource = resourceName('linger');
    const channel = `__quorum-lock__:lock:${resource}`;
    const subscribers = async (): Promise<number> => {
      const counts = await Promise.all(
        set.clients.map((c) => c.call('PUBSUB', 'NUMSUB', channel) as Promise<[string, number]>),
      );
      return counts.reduce((sum, [, n]) => sum + Number(n), 0);
    };
    const held = await holder.acquire(resource, 10_000);
    const waiting = waiter.acquire(resource, 10_000);
    await sleep(200);
    expect(await subscribers()).toBe(3); // the waiter's instance, on every master
    await held.release();
    await (await waiting).release();
    await sleep(500);
    expect(await subscribers()).toBe(3); // still listened to for a while: a key contended again soon
    await sleep(2_500);
    expect(await subscribers()).toBe(0);
    const patterns = await Promise.all(set.clients.map((c) => c.call('PUBSUB', 'CHANNELS', '__quorum-lock__*')));
    expect(patterns.flat()).toEqual([]); // the handover channel too
  });

  it('when a holder dies without releasing, the waiter gets the lock through its fallback retries', async () => {
    const crashed = await set.redlock();
    const waiter = await set.redlock({ retryDelay: 50, retryJitter: 10, retryCount: 40 });
    const resource = resourceName('expired');
    await crashed.acquire(resource, 300); // never released: its keys expire on their own

    const { value: lock, error, ms } = await timed(waiter.acquire(resource, 1_000));

    expect(error).toBeUndefined();
    expect(ms).toBeGreaterThan(200);
    await lock!.release();
  });

  it('waiters in one process are served in arrival order: no caller takes the lock twice while others wait', async () => {
    // A long retry delay: every handoff below must come from a wake-up, not from polling.
    const redlock = await set.redlock({ retryDelay: 1_000, retryJitter: 0, retryCount: 1_000 });
    const resource = resourceName('fifo');
    const callers = 5;
    const rounds = 8;
    const order: number[] = [];
    let holders = 0;
    let overlaps = 0;

    const caller = async (id: number): Promise<void> => {
      for (let r = 0; r < rounds; r++) {
        const lock: Lock = await redlock.acquire(resource, 2_000);
        if (++holders > 1) overlaps++;
        order.push(id);
        await sleep(2);
        holders--;
        await lock.release();
      }
    };
    const { error, ms } = await timed(Promise.all(Array.from({ length: callers }, (_, id) => caller(id))));

    expect(error).toBeUndefined();
    expect(overlaps).toBe(0);
    expect(order).toHaveLength(callers * rounds);
    // Polling with a 1 s delay would need many seconds; wake-ups hand over in milliseconds.
    expect(ms).toBeLessThan(3_000);
    // FIFO: while others wait, the releaser queues behind them, so nobody holds it twice in a row
    // (once the last round starts, callers drop out and repeats become possible).
    const repeats = order.slice(0, callers * (rounds - 1)).filter((id, i, all) => i > 0 && all[i - 1] === id).length;
    expect(repeats).toBe(0);
    const perCaller = Array.from({ length: callers }, (_, id) => order.filter((o) => o === id).length);
    expect(perCaller).toEqual(Array.from({ length: callers }, () => rounds));
  });

  it('a waiter does not poll a lock held in its own process (the release wakes it), yet gets it at once', async () => {
    const redlock = await set.redlock({ retryDelay: 10, retryJitter: 5, retryCount: 200 });
    const resource = resourceName('no-poll');
    const setCalls = async (): Promise<number> =>
      Number(/cmdstat_set:calls=(\d+)/.exec(await set.clients[0].info('commandstats'))?.[1] ?? 0);
    const held = await redlock.acquire(resource, 5_000);
    const before = await setCalls();

    const waiting = timed(redlock.acquire(resource, 5_000));
    await sleep(500); // 50 retry delays: a polling waiter would send ~50 SETs to each master
    const during = (await setCalls()) - before;
    await held.release();
    const { value: lock, error } = await waiting;

    expect(error).toBeUndefined();
    expect(during).toBeLessThanOrEqual(2); // its first attempt, and nothing more while it waited
    await lock!.release();
  });

  it('close() also closes the subscriber connections opened for wake-ups', async () => {
    const before = await connectedClients(set, 0);
    const holder = await set.redlock();
    const waiter = await set.redlock({ retryDelay: 5_000, retryJitter: 0, retryCount: 1 });
    const resource = resourceName('subscribers');
    const held = await holder.acquire(resource, 5_000);
    const waiting = waiter.acquire(resource, 5_000);
    await sleep(150);
    // Two command connections, the waiter's subscriber, and the holder's: an instance holding a lock
    // follows the revocation channel (docs/owner-and-revoke.md).
    expect(await connectedClients(set, 0)).toBe(before + 4);
    await held.release();
    await (await waiting).release();

    await Promise.all([holder.close(), waiter.close()]);
    await sleep(100);
    expect(await connectedClients(set, 0)).toBe(before);
  });
});
