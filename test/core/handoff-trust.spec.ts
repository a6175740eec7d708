import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis, type RedisOptions } from 'ioredis';
import { createClient } from 'redis';
import { LockAcquisitionError, Redlock, type Lock, type RedlockNode } from '../../lib/index.js';
import { fakeClock, type FakeClock } from '../../tools/fake-clock.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { driftOf, inspector, now, rejectionOf, resourceName, useMasters, waitFor } from '../support/index.js';

/**
 * Handover evidence (docs/handoff.md *Safety*): a release message that hands a waiter the key is a
 * vote. It counts only from a server the restart guard has vetted, on the connection it came from,
 * and its validity rests on the waiter's own clock.
 */

/** The lock key and the handoff queue keys of a resource (default `keyPrefix`). */
const keysOf = (resource: string) => {
  const key = `lock:${resource}`;
  return { key, queue: `${key}:handoff:queue`, lease: `${key}:handoff:lease` };
};

describe('handover evidence counts like a vote (3 masters, restart guard on)', () => {
  const set = useMasters(3);
  const ttl = 4_000;
  const guard = { largestTtl: ttl };

  /** Every master trusted by `redlock` (fresh servers are distrusted for the guard: ttl + drift). */
  const allTrusted = (redlock: Redlock) =>
    waitFor(() => redlock.masterStates().every((m) => m.trusted), 2 * ttl + 4_000, 50);

  /** Subscriber connections on master `i` (CLIENT LIST shows their subscriptions). */
  const subscribersOn = async (i: number) =>
    String(await set.clients[i].call('CLIENT', 'LIST'))
      .split('\n')
      .filter((line) => / sub=[1-9]/.test(line)).length;

  /**
   * Master 2 restarts and keeps the waiter's ticket but not the holder's key (an AOF that lost its
   * last second: the queue keys are saved before the kill and restored after the restart). The
   * waiter's subscriber comes back before its command connection, so the guard has not seen the
   * new server yet. A newcomer's failed first attempt then hands the key to the waiter on master 0
   * (free) and on the new master 2: the holder still has masters 1 and the old 2, a quorum.
   */
  async function restartedMasterScenario(waiter: Redlock): Promise<void> {
    const resource = resourceName('restarted-handover');
    const { key, queue, lease } = keysOf(resource);
    const holder = await set.redlock({ retryCount: 0 });
    expect(await allTrusted(waiter)).toBe(true);

    // A leftover value on master 0 (another client's failed attempt) keeps the holder off it.
    await set.clients[0].set(key, 'leftover', 'PX', 600);
    const a = await holder.acquire(resource, ttl);
    expect(await set.clients[0].get(key)).toBe('leftover');

    let grantedAt: number | undefined;
    let validityLeftAtGrant = 0;
    const waiting = waiter.acquire(resource, ttl).then((lock) => {
      grantedAt = now();
      validityLeftAtGrant = a.validity;
      return lock;
    });
    waiting.catch(() => undefined);
    expect(
      await waitFor(async () => (await Promise.all(set.clients.map((c) => c.zcard(queue)))).every((n) => n === 1)),
    ).toBe(true);
    expect(await waitFor(async () => (await set.clients[0].exists(key)) === 0)).toBe(true); // the leftover lapsed

    const saved = await Promise.all(
      [queue, lease].map(async (k) => [k, await set.clients[2].dumpBuffer(k), await set.clients[2].pttl(k)] as const),
    );
    set.clients[2].disconnect();
    await set.masters[2].kill();
    await set.masters[2].restart();
    set.clients[2] = inspector(set.urls[2]);
    for (const [k, dump, pttl] of saved) await set.clients[2].restore(k, pttl, dump);

    // The waiter's subscriber is back on the new server; its command connection is not (yet).
    expect(await waitFor(async () => (await subscribersOn(2)) > 0, 5_000)).toBe(true);
    expect(waiter.masterStates()[2].connected).toBe(false);

    const newcomer = await set.redlock({ restartGuard: guard, retryCount: 0 });
    expect(newcomer.masterStates()[2].trusted).toBe(false); // a fresh server to it
    expect(await rejectionOf(newcomer.acquire(resource, ttl))).toBeInstanceOf(LockAcquisitionError);
    // Its clean-up handed the key to the waiter's ticket on masters 0 and 2.
    const handed = (v: string | null) => v !== null && v !== a.value && v !== 'leftover';
    expect(
      await waitFor(async () => handed(await set.clients[0].get(key)) && handed(await set.clients[2].get(key))),
    ).toBe(true);

    // Until the waiter's command connection is back and its guard has seen the new server, only the
    // new server's message could give it a quorum: it must not have been granted.
    expect(await waitFor(() => waiter.masterStates()[2].distrust === 'restarted', 10_000, 20)).toBe(true);
    expect({ grantedWhileHeld: grantedAt !== undefined, overlapMs: Math.round(validityLeftAtGrant) }).toEqual({
      grantedWhileHeld: false,
      overlapMs: 0,
    });

    const releasedAt = now();
    await a.release();
    const b: Lock = await waiting;
    expect(grantedAt!).toBeGreaterThanOrEqual(releasedAt);
    await b.release();
  }

  /** A jittered reconnect delay: `late` ms for the connections `isLate` picks, 50 ms for the others. */
  function lateFor(isLate: (options: RedisOptions) => boolean, late = 2_500) {
    return function (this: RedisOptions): number {
      return (isLate(this) ? late : 50) + Math.random() * 100;
    };
  }

  it('a handover from a restarted master that kept the ticket does not count before the guard vetted it', async () => {
    // The library's own connections: the command connection (the one that would resubscribe, had it
    // subscribed) comes back after its subscriber.
    const retryStrategy = lateFor((options) => options.autoResubscribe !== false);
    const nodes: RedlockNode[] = set.masters.map((m, i) => ({
      host: '127.0.0.1',
      port: m.port,
      ...(i === 2 ? { retryStrategy } : {}),
    }));
    const waiter = await set.redlock({ nodes, restartGuard: guard, retryDelay: 10_000, retryJitter: 0, retryCount: 5 });
    await restartedMasterScenario(waiter);
  }, 40_000);

  it('the same with an app-supplied ioredis client whose retryStrategy is jittered', async () => {
    // Jitter draws either order of reconnection; this pins the one at fault: the app's client last.
    const app: Redis = new Redis(set.urls[2], {
      retryStrategy: lateFor((options) => options === app.options),
      maxRetriesPerRequest: 1,
    });
    try {
      const nodes: RedlockNode[] = [set.urls[0], set.urls[1], app];
      const waiter = await set.redlock({
        nodes,
        restartGuard: guard,
        retryDelay: 10_000,
        retryJitter: 0,
        retryCount: 5,
      });
      await restartedMasterScenario(waiter);
    } finally {
      app.disconnect();
    }
  }, 40_000);

  it('the same with an app-supplied node-redis client: its subscriber reads INFO on each new connection before it subscribes', async () => {
    // The app's client reconnects late; the library's subscriber, a fresh connection each time, soon.
    const app = createClient({ url: set.urls[2], socket: { reconnectStrategy: () => 2_500 + Math.random() * 100 } });
    app.on('error', () => undefined);
    try {
      const nodes: RedlockNode[] = [set.urls[0], set.urls[1], app];
      const waiter = await set.redlock({
        nodes,
        restartGuard: guard,
        retryDelay: 10_000,
        retryJitter: 0,
        retryCount: 5,
      });
      await restartedMasterScenario(waiter);
    } finally {
      if (app.isOpen) app.destroy();
    }
  }, 40_000);
});

describe('handover validity rests on the waiter clock (3 masters whose wall clock steps)', () => {
  let clock: FakeClock;
  let redis: RedisMasters;
  let clients: Redis[] = [];
  const redlocks: Redlock[] = [];
  const ttl = 10_000; // its drift allowance (102 ms) covers a loaded machine's message delay: see docs/handoff.md

  beforeAll(async () => {
    clock = await fakeClock();
    redis = await startRedisMasters(3, { env: clock.env });
    clients = redis.urls.map((url) => inspector(url));
  });
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.close()));
    for (const c of clients) c.disconnect();
    await redis?.stop();
    await clock?.dispose();
  });

  /** Successful script calls on each master so far (every ticketed attempt is one). */
  const scriptCalls = () =>
    Promise.all(
      clients.map(async (c) => {
        const stats = await c.info('commandstats');
        let calls = 0;
        for (const m of stats.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+),.*failed_calls=(\d+)/gm))
          calls += Number(m[1]) - Number(m[2]);
        return calls;
      }),
    );

  it('a forward step of the masters’ clock between the ticket reply and the handover does not lengthen validity', async () => {
    const open = async (options: ConstructorParameters<typeof Redlock>[0]) => {
      const r = new Redlock(options);
      redlocks.push(r);
      await r.connect();
      return r;
    };
    const holder = await open({ nodes: redis.urls, restartGuard: false, retryCount: 0 });
    const waiter = await open({
      nodes: redis.urls,
      restartGuard: false,
      retryDelay: 10_000,
      retryJitter: 0,
      retryCount: 5,
    });
    const resource = resourceName('clock-step');
    const { key } = keysOf(resource);

    const a = await holder.acquire(resource, ttl);
    const before = await scriptCalls();
    const waiting = waiter.acquire(resource, ttl);
    // Its ticket (the anchor: each reply carries the master's time) and the check once subscribed.
    expect(await waitFor(async () => (await scriptCalls()).every((n, i) => n >= before[i] + 2))).toBe(true);

    await clock.step(1.5);
    await a.release();
    const b = await waiting;
    const t1 = now();
    const validity = b.validity;
    const pttls = await Promise.all(clients.map(async (c) => ((await c.get(key)) === b.value ? c.pttl(key) : -1)));
    const t2 = now();
    // The key lives on a quorum for the quorum-th longest PTTL: that is all the lock has.
    const onQuorum = [...pttls].sort((x, y) => y - x)[1];
    await b.release();

    // Its own clock vouches for no more than the TTL from the handover's arrival, less drift...
    expect(validity).toBeLessThanOrEqual(ttl - driftOf(ttl));
    // ...and never more than the masters hold the key.
    expect(validity).toBeLessThanOrEqual(onQuorum + (t2 - t1));
    await clock.step(0);
  }, 30_000);
});

describe('handover messages count on RESP2 connections too (3 masters, restart guard on)', () => {
  const set = useMasters(3);
  const ttl = 2_000;
  /** Connections on master `i` subscribed to something (CLIENT LIST shows their subscriptions). */
  const subscribersOn = async (i: number) =>
    String(await set.clients[i].call('CLIENT', 'LIST'))
      .split('\n')
      .filter((line) => / sub=[1-9]/.test(line))
      .map((line) => /\bid=(\d+)/.exec(line)![1]);
  const nodeOptions = () => set.masters.map((m) => ({ host: '127.0.0.1', port: m.port, protocol: 2 as const }));

  // RESP2 (ioredis 5, or `protocol: 2`) refuses INFO on a subscribed connection: the subscriber must
  // read its server before it subscribes, or every handover is ignored and the waiter sleeps its
  // retry delay.
  for (const [label, nodesOf, reconnect] of [
    ['node options with protocol 2', nodeOptions, false],
    ['app-supplied clients with protocol 2', () => set.urls.map((u) => new Redis(u, { protocol: 2 })), false],
    ['node options with protocol 2, after every subscriber reconnected', nodeOptions, true],
  ] as const) {
    it(`${label}: the release hands the key over at once, not after the waiter's 10 s retry delay`, async () => {
      const nodes: RedlockNode[] = nodesOf();
      const apps = nodes.filter((n): n is Redis => n instanceof Redis);
      try {
        const resource = resourceName('resp2');
        const { queue } = keysOf(resource);
        const common = { nodes, restartGuard: { largestTtl: ttl } };
        const holder = await set.redlock(common);
        const waiter = await set.redlock({ ...common, retryDelay: 10_000, retryJitter: 0, retryCount: 3 });
        // Fresh masters are distrusted for ttl + drift.
        for (const r of [holder, waiter])
          expect(await waitFor(() => r.masterStates().every((m) => m.trusted), 4 * ttl + 4_000, 50)).toBe(true);
        // Held far longer than the test takes: only the release can free it in time.
        const held = await holder.acquire(resource, 10_000);
        const waiting = waiter.acquire(resource, 10_000).then((lock) => ({ lock, at: now() }));
        waiting.catch(() => undefined);
        // Queued on every master, and its subscriber listening on every master.
        expect(
          await waitFor(async () => (await Promise.all(set.clients.map((c) => c.zcard(queue)))).every((n) => n === 1)),
        ).toBe(true);
        expect(
          await waitFor(async () => (await Promise.all([0, 1, 2].map(subscribersOn))).every((ids) => ids.length > 0)),
        ).toBe(true);
        if (reconnect) {
          // The subscriber reads its server again, then subscribes again by itself.
          const before = new Set((await Promise.all([0, 1, 2].map(subscribersOn))).flat());
          for (const c of set.clients) await c.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
          const renewed = async () =>
            (await Promise.all([0, 1, 2].map(subscribersOn))).every((ids) => ids.some((id) => !before.has(id)));
          expect(await waitFor(renewed, 10_000)).toBe(true);
        }
        const releasedAt = now();
        await held.release();
        const { lock, at } = await waiting;
        // Handed over by the release: well under the 10 s the waiter would otherwise sleep.
        expect({ handedOverQuickly: at - releasedAt < 5_000 }).toEqual({ handedOverQuickly: true });
        await lock.release();
      } finally {
        for (const app of apps) app.disconnect();
      }
    }, 40_000);
  }
});
