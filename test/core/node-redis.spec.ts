import { afterAll, describe, expect, it } from '@jest/globals';
import { createClient, createClientPool, createCluster, createSentinel, type RedisClientType } from 'redis';
import diagnostics from 'node:diagnostics_channel';
import { LockAcquisitionError, RedlockConfigError, type RedlockNode } from '../../lib/index.js';
import { freePort } from '../../tools/redis-masters.js';
import {
  inspector,
  rejectionOf,
  resourceName,
  sleep,
  timed,
  useMasters,
  waitFor,
  whilePaused,
} from '../support/index.js';

/**
 * node-redis v5 clients (`createClient()` from the `redis` package) as `nodes` entries, alone and
 * mixed with ioredis ones, on real masters: every feature works on them as on ioredis, and the
 * library never closes them.
 */
describe('node-redis clients as nodes (3 masters)', () => {
  const set = useMasters(3);
  const opened: RedisClientType[] = [];

  /** A node-redis client on master `i`, not connected unless `connected`; destroyed after the file. */
  async function nodeRedis(i: number, connected = false, RESP: 2 | 3 = 2): Promise<RedisClientType> {
    const client = createClient({ url: set.urls[i], RESP }) as RedisClientType;
    client.on('error', () => undefined); // a killed master: the app's own handler
    opened.push(client);
    if (connected) await client.connect();
    return client;
  }

  afterAll(() => {
    for (const c of opened) if (c.isOpen) c.destroy();
  });

  /** Three node-redis clients (the first connected, the others not), or the first two mixed with an ioredis URL. */
  async function nodesOf(
    kind: 'node-redis' | 'mixed' | 'RESP3',
  ): Promise<{ nodes: RedlockNode[]; clients: RedisClientType[] }> {
    const resp = kind === 'RESP3' ? 3 : 2;
    const clients = [await nodeRedis(0, true, resp), await nodeRedis(1, false, resp)];
    if (kind !== 'mixed') clients.push(await nodeRedis(2, false, resp));
    return { nodes: kind === 'mixed' ? [...clients, set.urls[2]] : clients, clients };
  }

  /** Subscriber connections on master `i` (CLIENT LIST shows their subscriptions). */
  const subscribersOn = async (i: number) =>
    String(await set.clients[i].call('CLIENT', 'LIST'))
      .split('\n')
      .filter((line) => / sub=[1-9]/.test(line)).length;

  it.each(['node-redis', 'mixed', 'RESP3'] as const)(
    '%s: acquire, extend, release and auto-renew; the clients, connected or not, stay open after close()',
    async (kind) => {
      const { nodes, clients } = await nodesOf(kind);
      const redlock = await set.redlock({ nodes });
      expect(clients.every((c) => c.isReady)).toBe(true); // the library connected those that were not
      const resource = resourceName(`basic-${kind}`);
      const key = `lock:${resource}`;

      const lock = await redlock.acquire(resource, 2_000);
      expect(await Promise.all(set.clients.map((c) => c.get(key)))).toEqual([lock.value, lock.value, lock.value]);
      expect(await redlock.tryAcquire(resource, 2_000)).toBeNull();
      await lock.extend(8_000);
      expect(Math.min(...(await Promise.all(set.clients.map((c) => c.pttl(key)))))).toBeGreaterThan(2_000);
      await lock.release();
      expect(
        await waitFor(async () => (await Promise.all(set.clients.map((c) => c.exists(key)))).every((n) => !n)),
      ).toBe(true);

      // Auto-renewal: a 600 ms lock outlives several TTLs while held.
      const renewed = await redlock.acquire(resource, 600, { autoExtend: true });
      await sleep(1_500);
      expect(renewed.isHeld).toBe(true);
      expect(await set.clients[1].get(key)).toBe(renewed.value);
      await renewed.release();

      await redlock.close();
      expect(clients.every((c) => c.isOpen)).toBe(true);
      expect(await clients[0].ping()).toBe('PONG');
    },
  );

  it.each(['mixed', 'RESP3'] as const)('%s: fencing tokens, read locks and counting locks', async (kind) => {
    const { nodes } = await nodesOf(kind);
    const redlock = await set.redlock({ nodes });
    const resource = resourceName('kinds');

    const first = await redlock.acquire(resource, 5_000, { fencing: true });
    await first.release();
    const second = await redlock.acquire(resource, 5_000, { fencing: true });
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken!);
    await second.release();

    const readers = await Promise.all([1, 2].map(() => redlock.acquire(resource, 5_000, { mode: 'read' })));
    expect(await redlock.tryAcquire(resource, 5_000)).toBeNull(); // a writer waits for the readers
    const view = await redlock.inspect(resource);
    expect(view.readers.map((r) => r.held)).toEqual([true, true]);
    for (const r of readers) await r.release();

    const counted = resourceName('permits');
    const permits = await Promise.all([1, 2].map(() => redlock.tryAcquire(counted, 5_000, { limit: 2 })));
    expect(permits.every((p) => p !== null)).toBe(true);
    expect(await redlock.tryAcquire(counted, 5_000, { limit: 2 })).toBeNull();
    await permits[0]!.release();
    const third = await redlock.tryAcquire(counted, 5_000, { limit: 2 });
    expect(third).not.toBeNull();
    for (const p of [permits[1], third]) await p!.release();
  });

  it("calls to one master go out in call order: a failed attempt's clean-up lands after its acquire on a paused master", async () => {
    const { nodes, clients } = await nodesOf('node-redis');
    const redlock = await set.redlock({ nodes, commandTimeout: 100, retryCount: 0 });
    const resource = resourceName('order');
    const key = `lock:${resource}`;
    await set.clients[1].set(key, 'another', 'PX', 10_000); // master 1 refuses
    // Master 2 hangs: the attempt's script and then its clean-up wait on that connection, in that order.
    const error = await whilePaused([set.masters[2]], async () => {
      const failed = await rejectionOf(redlock.acquire(resource, 10_000));
      expect(await set.clients[0].exists(key)).toBe(0); // cleaned up at once on master 0
      return failed;
    });
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).outcomes.map((o) => o.status)).toEqual(['granted', 'refused', 'timeout']);
    // Once master 2 answers, the acquire runs and then the clean-up: nothing is left there. A PING on
    // the same client is answered after everything queued before it.
    expect(await clients[2].ping()).toBe('PONG');
    expect(await set.clients[2].exists(key)).toBe(0);
    await set.clients[1].del(key);
  });

  it('lead(): a leadership on node-redis clients wins a term and resigns', async () => {
    const { nodes } = await nodesOf('node-redis');
    const redlock = await set.redlock({ nodes });
    const leadership = redlock.lead(resourceName('leader'), { ttl: 1_000 });
    expect(await waitFor(() => leadership.isLeader, 5_000)).toBe(true);
    await leadership.resign();
    expect(leadership.isLeader).toBe(false);
  });

  it.each(['node-redis', 'RESP3'] as const)('%s: inspect() reads the holder', async (kind) => {
    const { nodes } = await nodesOf(kind);
    const redlock = await set.redlock({ nodes });
    const resource = resourceName('inspect');
    const lock = await redlock.acquire(resource, 5_000, { fencing: true });
    const view = await redlock.inspect(resource);
    expect(view.held).toBe(true);
    expect(view.holder).toBe(lock.value);
    expect(view.agreeing).toBe(3);
    expect(view.masters.map((m) => m.holder)).toEqual([lock.value, lock.value, lock.value]);
    expect(view.fencingCounter).toBe(lock.fencingToken);
    await lock.release();
  });

  it('a release wakes a waiter of another instance on node-redis clients and hands it the key', async () => {
    const holder = await set.redlock({ nodes: (await nodesOf('RESP3')).nodes });
    const waiter = await set.redlock({
      nodes: (await nodesOf('mixed')).nodes,
      retryDelay: 6_000,
      retryJitter: 0,
      retryCount: 3,
    });
    const resource = resourceName('handoff');
    const held = await holder.acquire(resource, 10_000);
    const waiting = timed(waiter.acquire(resource, 10_000));
    // Refused, queued and subscribed on every master (two node-redis subscribers, one ioredis).
    expect(await waitFor(async () => (await Promise.all([0, 1, 2].map(subscribersOn))).every((n) => n >= 1))).toBe(
      true,
    );
    await sleep(100);
    await held.release();
    const { value: lock, error, ms } = await waiting;
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(5_000); // not after its 6 s retry delay
    expect(lock!.isHeld).toBe(true);
    await lock!.release();
  }, 20_000);

  it('a subscriber connection that was killed is replaced: it reads INFO, subscribes again, and the next handover is heard', async () => {
    const { nodes } = await nodesOf('node-redis');
    const holder = await set.redlock({ nodes });
    const waiter = await set.redlock({ nodes, retryDelay: 6_000, retryJitter: 0, retryCount: 3 });
    const resource = resourceName('resubscribe');
    const held = await holder.acquire(resource, 10_000);
    const waiting = timed(waiter.acquire(resource, 10_000));
    expect(await waitFor(async () => (await Promise.all([0, 1, 2].map(subscribersOn))).every((n) => n >= 1))).toBe(
      true,
    );
    // Every subscriber connection is cut; the waiter's new ones must identify their server and subscribe again.
    await Promise.all(set.clients.map((c) => c.call('CONFIG', 'RESETSTAT')));
    await Promise.all(set.clients.map((c) => c.call('CLIENT', 'KILL', 'TYPE', 'pubsub')));
    expect(await waitFor(async () => (await Promise.all([0, 1, 2].map(subscribersOn))).every((n) => n >= 1))).toBe(
      true,
    );
    const infos = await Promise.all(
      set.clients.map(async (c) => /cmdstat_info:calls=(\d+)/.exec(String(await c.info('commandstats')))?.[1]),
    );
    expect(infos.every((calls) => Number(calls) >= 1)).toBe(true); // each new connection read INFO first
    await sleep(100);
    await held.release();
    const { value: lock, error, ms } = await waiting;
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(5_000); // heard on the new connections, not after the 6 s retry delay
    await lock!.release();
  }, 20_000);

  it('close() closes the subscriber connections the library opened, never the node-redis clients', async () => {
    const { nodes, clients } = await nodesOf('node-redis');
    const before = await Promise.all([0, 1, 2].map(subscribersOn));
    const holder = await set.redlock({ nodes });
    const waiter = await set.redlock({ nodes, retryDelay: 50, retryJitter: 0, retryCount: 100 });
    const resource = resourceName('subscribers');
    const held = await holder.acquire(resource, 5_000);
    const waiting = waiter.acquire(resource, 5_000);
    expect(
      await waitFor(async () => (await Promise.all([0, 1, 2].map(subscribersOn))).every((n, i) => n > before[i])),
    ).toBe(true);
    await held.release();
    await (await waiting).release();
    await waiter.close();
    await holder.close();
    expect(
      await waitFor(async () => (await Promise.all([0, 1, 2].map(subscribersOn))).every((n, i) => n === before[i])),
    ).toBe(true);
    expect(clients.every((c) => c.isOpen)).toBe(true);
  });

  it.each(['mixed', 'RESP3'] as const)(
    '%s: health: masterStates() reads each server, and sees one that is down',
    async (kind) => {
      const { nodes } = await nodesOf(kind);
      const redlock = await set.redlock({ nodes });
      const states = await redlock.refreshMasterStates();
      expect(states.map((s) => [s.connected, s.trusted, s.role])).toEqual([
        [true, true, 'master'],
        [true, true, 'master'],
        [true, true, 'master'],
      ]);
      expect(states.every((s) => typeof s.runId === 'string' && typeof s.roundTripMs === 'number')).toBe(true);
      expect(states[0].label).toBe(`127.0.0.1:${set.masters[0].port}`);

      // A client of a master that is down, with no 'error' listener of its own: reported, not thrown.
      const down = createClient({ url: `redis://127.0.0.1:${await freePort()}` });
      opened.push(down as RedisClientType);
      const degraded = await set.redlock({ nodes: [nodes[0], nodes[1], down], connectTimeout: 300 });
      const state = degraded.masterStates()[2];
      expect([state.connected, state.trusted, state.distrust]).toEqual([false, false, 'unreachable']);
      expect(state.lastError).toMatch(/ECONNREFUSED/);
      await (await degraded.acquire(resourceName('two-of-three'), 2_000)).release();
    },
  );

  it('telemetry: the acquire tracing channel reports each master outcome', async () => {
    const { nodes } = await nodesOf('node-redis');
    const redlock = await set.redlock({ nodes });
    const seen: unknown[] = [];
    const channel = diagnostics.tracingChannel('nestjs-quorum-lock:acquire');
    const handlers = {
      start() {},
      end() {},
      asyncStart() {},
      error() {},
      asyncEnd: (ctx: unknown) => seen.push((ctx as { outcome: unknown }).outcome),
    };
    channel.subscribe(handlers);
    try {
      await (await redlock.acquire(resourceName('telemetry'), 2_000)).release();
    } finally {
      channel.unsubscribe(handlers);
    }
    expect(seen).toEqual(['acquired']);
  });

  it('scripts: a master whose script cache was flushed still runs them (EVAL again on NOSCRIPT)', async () => {
    const { nodes } = await nodesOf('node-redis');
    const redlock = await set.redlock({ nodes });
    const resource = resourceName('noscript');
    const lock = await redlock.acquire(resource, 5_000, { fencing: true });
    await lock.extend(5_000);
    await Promise.all(set.clients.map((c) => c.script('FLUSH')));
    await lock.extend(5_000);
    await lock.release();
    expect(await set.clients[0].exists(`lock:${resource}`)).toBe(0);
  });

  it('refuses node-redis cluster, pool and sentinel clients, naming the entry, before sending anything', async () => {
    const dbsizes = () => Promise.all(set.clients.map((c) => c.dbsize()));
    const before = await dbsizes();
    const refused = [
      [createCluster({ rootNodes: [{ url: set.urls[2] }] }), /node-redis cluster client/],
      [createClientPool({ url: set.urls[2] }), /node-redis client pool/],
      [
        createSentinel({ name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: set.masters[2].port }] }),
        /sentinel client/,
      ],
    ] as const;
    for (const [client, named] of refused) {
      const error = await rejectionOf(set.redlock({ nodes: [set.urls[0], set.urls[1], client as never] }));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('nodes[2]');
      expect((error as RedlockConfigError).message).toMatch(named);
    }
    expect(await dbsizes()).toEqual(before);
  });
});

describe('node-redis clients and the restart guard (3 masters)', () => {
  const set = useMasters(3);

  it('a master killed and restarted behind a node-redis client is distrusted, then trusted after the guard', async () => {
    const client = createClient({ url: set.urls[0], socket: { reconnectStrategy: () => 50 } });
    client.on('error', () => undefined);
    try {
      const largestTtl = 1_500;
      const redlock = await set.redlock({
        nodes: [client, set.urls[1], set.urls[2]],
        ttl: 1_000,
        restartGuard: { largestTtl },
        retryCount: 0,
      });
      expect(await waitFor(() => redlock.masterStates()[0].trusted, 2 * largestTtl + 4_000, 50)).toBe(true);
      const runId = redlock.masterStates()[0].runId;

      await set.masters[0].kill();
      await set.masters[0].restart();
      set.clients[0] = inspector(set.urls[0]);
      expect(await waitFor(() => redlock.masterStates()[0].distrust === 'restarted', 10_000, 20)).toBe(true);
      expect(redlock.masterStates()[0].runId).not.toBe(runId);
      // Master 1 is held by another value: with master 0's vote not counted, no quorum.
      const resource = resourceName('restarted');
      await set.clients[1].set(`lock:${resource}`, 'another', 'PX', 5_000);
      const error = await rejectionOf(redlock.acquire(resource, 1_000, { retryCount: 0 }));
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect((error as LockAcquisitionError).outcomes[0].status).toBe('restarted');
      expect(await waitFor(() => redlock.masterStates()[0].trusted, 2 * largestTtl + 4_000, 50)).toBe(true);
      expect(client.isOpen).toBe(true);
    } finally {
      client.destroy();
    }
  }, 30_000);
});
