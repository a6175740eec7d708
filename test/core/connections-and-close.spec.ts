import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  abortOf,
  timed,
  rejectionOf,
  resourceName,
  sleep,
  useMasters,
  waitFor,
  expectAbsentOnAll,
  expectHeldOnAll,
} from '../support/index.js';
import { LockAcquisitionError, LockLostError, Redlock, RedlockError } from '../../lib/index.js';

describe('connections: user-supplied instances and owned connections (3 masters)', () => {
  const set = useMasters(3);

  /** `CLIENT LIST` lines on a master whose connection name is `name`. */
  async function clientsNamed(client: Redis, name: string): Promise<string[]> {
    const list = (await client.client('LIST')) as string;
    return list.split('\n').filter((line) => line.includes(` name=${name} `));
  }

  it('uses a user-supplied ioredis instance as a node and leaves it open after close()', async () => {
    const name = `user-supplied-${process.pid}`;
    const mine = new Redis(set.urls[0], { connectionName: name });
    try {
      await mine.ping();
      const redlock = await set.redlock({ nodes: [mine, set.urls[1], set.urls[2]] });
      const resource = resourceName('user-instance');
      const lock = await redlock.acquire(resource, 2_000);
      await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
      await lock.release();

      // The script went through the user's own connection, not a second one the library opened.
      const [line] = await clientsNamed(set.clients[0], name);
      expect(line).toMatch(/ cmd=(evalsha|eval) /);

      await redlock.close();
      expect(mine.status).toBe('ready');
      expect(await mine.ping()).toBe('PONG');
      expect(await clientsNamed(set.clients[0], name)).toHaveLength(1);
    } finally {
      mine.disconnect();
    }
  });

  it('leaves no listeners on a user-supplied instance after close(), however many Redlocks used it', async () => {
    const mine = new Redis(set.urls[0]);
    try {
      await mine.ping();
      const before = mine.listenerCount('ready');
      const redlocks = await Promise.all(
        Array.from({ length: 12 }, () => set.redlock({ nodes: [mine, set.urls[1], set.urls[2]], restartGuard: true })),
      );
      // One listener watches reconnects for all twelve instances (issue 8 item 16): no MaxListenersExceededWarning.
      expect(mine.listenerCount('ready')).toBe(before + 1);
      await Promise.all(redlocks.map((r) => r.close()));
      expect(mine.listenerCount('ready')).toBe(before);
    } finally {
      mine.disconnect();
    }
  });

  it('closes the connections it opened (option-object nodes) on close()', async () => {
    const name = `owned-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const nodes = set.masters.map((m) => ({ host: '127.0.0.1', port: m.port, connectionName: name }));
    const redlock = new Redlock({ nodes });
    try {
      await redlock.connect();
      for (const client of set.clients) expect(await clientsNamed(client, name)).toHaveLength(1);
    } finally {
      await redlock.close();
    }
    const gone = await waitFor(
      async () => (await Promise.all(set.clients.map((c) => clientsNamed(c, name)))).every((l) => l.length === 0),
      1_000,
    );
    expect(gone).toBe(true);
  });

  it('closes the connections it opened (URL nodes) on close()', async () => {
    const count = async (): Promise<number[]> =>
      Promise.all(set.clients.map(async (c) => ((await c.client('LIST')) as string).trim().split('\n').length));
    const before = await count();
    const redlock = new Redlock({ nodes: set.urls });
    try {
      await redlock.connect();
      expect(await count()).toEqual(before.map((n) => n + 1));
    } finally {
      await redlock.close();
    }
    const back = await waitFor(async () => (await count()).every((n, i) => n === before[i]), 1_000);
    expect(back).toBe(true);
  });
});

describe('close() with a master down', () => {
  const set = useMasters(3);

  it('leaves no referenced timer behind that would keep the process alive (ioredis disconnectTimeout)', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    set.clients[2].disconnect(); // our own inspection client must not add timers of its own
    await set.masters[2].kill();
    await sleep(120); // the library's connection notices, and waits to reconnect (retries at ~50, ~150 ms)

    // Record the timers armed while closing, and whether they fired or were cleared.
    const armed: { timer: NodeJS.Timeout; ms: number; done: boolean }[] = [];
    const realSetTimeout = globalThis.setTimeout;
    const realClearTimeout = globalThis.clearTimeout;
    globalThis.setTimeout = ((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      const entry = { timer: undefined as unknown as NodeJS.Timeout, ms: ms ?? 0, done: false };
      entry.timer = realSetTimeout(() => {
        entry.done = true;
        fn(...args);
      }, ms);
      armed.push(entry);
      return entry.timer;
    }) as typeof setTimeout;
    globalThis.clearTimeout = ((timer?: NodeJS.Timeout) => {
      for (const entry of armed) if (entry.timer === timer) entry.done = true;
      realClearTimeout(timer);
    }) as typeof clearTimeout;
    try {
      await redlock.close();
      await sleep(100);
    } finally {
      globalThis.setTimeout = realSetTimeout;
      globalThis.clearTimeout = realClearTimeout;
    }

    const keepingAlive = armed.filter((e) => !e.done && e.timer.hasRef()).map((e) => `${e.ms} ms timer`);
    expect(keepingAlive).toEqual([]);
  });
});

describe('close() (3 masters)', () => {
  const set = useMasters(3);

  it('releases a held lock on every master and aborts its signal with LockLostError', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('held-at-close');
    const lock = await redlock.acquire(resource, 5_000);
    const signal = lock.signal;
    await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);

    await redlock.close();

    await expectAbsentOnAll(set.clients, `lock:${resource}`);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(lock.isHeld).toBe(false);
    await expect(lock.release()).resolves.toBeUndefined(); // releasing afterwards is harmless
  });

  it('aborts the signal of a running using() callback, which then rejects with LockLostError', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('using-at-close');
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const running = redlock.using(resource, 5_000, async (lock) => {
      entered();
      await abortOf(lock.signal);
      return 'stopped';
    });
    await inside;

    await redlock.close();

    const error = await rejectionOf(running);
    expect(error).toBeInstanceOf(LockLostError);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('rejects a pending acquire waiting on a busy resource promptly with a RedlockError', async () => {
    const holder = await set.redlock();
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('pending-at-close');
    const held = await holder.acquire(resource, 5_000);
    try {
      const pending = timed(
        redlock.acquire(resource, 1_000, { retryCount: Infinity, retryDelay: 1_000, retryJitter: 0 }),
      );
      await sleep(100);
      const closedAt = performance.now();
      await redlock.close();
      const { error } = await pending;
      const settledAfterClose = performance.now() - closedAt;

      expect(error).toBeInstanceOf(RedlockError);
      expect(error).not.toBeInstanceOf(LockAcquisitionError);
      expect(settledAfterClose).toBeLessThan(300); // not the remaining ~900 ms of retry delay
      await expectHeldOnAll(set.clients, `lock:${resource}`, held.value);
    } finally {
      await held.release();
    }
  });

  it('after close(), acquire rejects with a RedlockError and close() again is a no-op', async () => {
    const redlock = await set.redlock();
    await redlock.close();
    const resource = resourceName('after-close');
    const error = await rejectionOf(redlock.acquire(resource, 1_000));
    expect(error).toBeInstanceOf(RedlockError);
    await expect(redlock.close()).resolves.toBeUndefined();
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });
});
