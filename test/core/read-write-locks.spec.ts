import { describe, expect, it } from '@jest/globals';
import {
  abortOf,
  dbsizesOn,
  timed,
  rejectionOf,
  resourceName,
  sleep,
  useMasters,
  waitFor,
  whilePaused,
} from '../support/index.js';
import {
  LockAcquisitionError,
  LockLostError,
  RedlockConfigError,
  RedlockError,
  lockModeOf,
  type Lock,
  type Redlock,
} from '../../lib/index.js';

describe("read-write locks: `mode: 'read' | 'write'` (5 masters)", () => {
  const set = useMasters(5);
  const patient = { retryCount: Infinity, retryDelay: 20, retryJitter: 10, acquireTimeout: 30_000 };

  it('readers share; a writer (explicit or a call without `mode`) is refused beside them, and readers beside a writer', async () => {
    const [a, b] = [await set.redlock(), await set.redlock()];
    const resource = resourceName('share');
    const readers = await Promise.all([a, b, a].map((r) => r.tryAcquire(resource, 5_000, { mode: 'read' })));
    expect(readers.every((l) => l !== null)).toBe(true);
    expect(lockModeOf(readers[0]!)).toEqual({ mode: 'read' });
    expect(await b.tryAcquire(resource, 5_000, { mode: 'write' })).toBeNull();
    expect(await b.tryAcquire(resource, 5_000)).toBeNull(); // today's exclusive lock: same keys
    await Promise.all(readers.map((l) => l!.release()));

    const writer = await a.acquire(resource, 5_000); // no `mode`: the existing mutex
    expect(await b.tryAcquire(resource, 5_000, { mode: 'read' })).toBeNull();
    expect(await b.tryAcquire(resource, 5_000, { mode: 'write' })).toBeNull();
    await writer.release();
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('a writer queued behind readers is refused cleanly (no script error) and its ticket holds new readers off; readers return once it leaves', async () => {
    const [a, b] = [await set.redlock(), await set.redlock()];
    const resource = resourceName('queued-writer');
    const reader = await a.acquire(resource, 5_000, { mode: 'read' });
    const writing = rejectionOf(b.acquire(resource, 5_000, { retryCount: 3, retryDelay: 150, retryJitter: 0 }));
    const queue = `lock:${resource}:handoff:queue`;
    await waitFor(async () => (await Promise.all(set.clients.map((c) => c.zcard(queue)))).every((n) => n === 1));
    // No intent key is written for a queued writer: its live ticket is what refuses new readers.
    expect(await a.tryAcquire(resource, 5_000, { mode: 'read' })).toBeNull();
    const error = await writing;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    // Each master answered "taken" (readers hold the key), not an error of the ticket script.
    expect((error as LockAcquisitionError).outcomes.map((o) => o.status)).toEqual(Array(5).fill('refused'));
    expect(await Promise.all(set.clients.map((c) => c.exists(`lock:${resource}:writer-waiting`)))).toEqual([
      0, 0, 0, 0, 0,
    ]);
    // The writer left the queue (its withdrawal is sent without waiting): readers are admitted again.
    await waitFor(async () => (await Promise.all(set.clients.map((c) => c.zcard(queue)))).every((n) => n === 0));
    const next = await a.tryAcquire(resource, 5_000, { mode: 'read' });
    expect(next).not.toBeNull();
    await Promise.all([reader.release(), next!.release()]);
    expect(await dbsizesOn(set.clients, 1_000)).toEqual([0, 0, 0, 0, 0]);
  });

  it('mixed readers and writers across two instances: never a reader beside a writer, readers do overlap, all complete', async () => {
    const [a, b] = [await set.redlock({ commandTimeout: 200 }), await set.redlock({ commandTimeout: 200 })];
    const resource = resourceName('mixed');
    const counterKey = `count:${resource}`;
    let readers = 0;
    let writers = 0;
    let mostReaders = 0;
    let violations = 0;
    const call = (r: Redlock, i: number) => {
      const mode = i % 4 === 0 ? 'write' : 'read';
      return r.using(
        resource,
        2_000,
        async () => {
          if (mode === 'write') {
            writers++;
            if (writers > 1 || readers > 0) violations++;
            // Redis-side: a writer finds the shared counter at 0 and raises it by 1000.
            if ((await set.clients[0].incrby(counterKey, 1000)) !== 1000) violations++;
            await sleep(20);
            await set.clients[0].decrby(counterKey, 1000);
            writers--;
          } else {
            readers++;
            mostReaders = Math.max(mostReaders, readers);
            if (writers > 0) violations++;
            if ((await set.clients[0].incr(counterKey)) >= 1000) violations++;
            await sleep(40);
            await set.clients[0].decr(counterKey);
            readers--;
          }
          return i;
        },
        { ...patient, mode },
      );
    };
    const calls = Array.from({ length: 24 }, (_, i) => call(i % 2 ? a : b, i));
    expect(await Promise.all(calls)).toEqual(calls.map((_, i) => i));
    expect(violations).toBe(0);
    expect(mostReaders).toBeGreaterThan(1);
    await set.clients[0].del(counterKey);
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('writer starvation is bounded: a writer gets in while a stream of overlapping readers continues', async () => {
    const [a, b] = [await set.redlock({ commandTimeout: 200 }), await set.redlock({ commandTimeout: 200 })];
    const resource = resourceName('starve');
    let stop = false;
    let readsDuringStream = 0;
    let readerHeld = 0;
    let writerBesideReader = false;
    // Each reader holds 150 ms and a new one starts every 50 ms: without writer preference the
    // resource is never free of readers for the 8 s the stream lasts.
    const stream = (async () => {
      const started: Promise<unknown>[] = [];
      const end = performance.now() + 8_000;
      for (let i = 0; !stop && performance.now() < end; i++) {
        started.push(
          (i % 2 ? a : b)
            .using(
              resource,
              2_000,
              async () => {
                readerHeld++;
                readsDuringStream++;
                await sleep(150);
                readerHeld--;
              },
              { mode: 'read', ...patient },
            )
            .catch(() => undefined),
        );
        await sleep(50);
      }
      await Promise.all(started);
    })();
    await sleep(400);
    expect(readerHeld).toBeGreaterThan(0);
    const { ms, error } = await timed(
      b.using(
        resource,
        2_000,
        async () => {
          writerBesideReader = readerHeld > 0;
          await sleep(50);
        },
        { mode: 'write', retryCount: Infinity, retryDelay: 50, retryJitter: 10, acquireTimeout: 6_000 },
      ),
    );
    const readsBeforeWriter = readsDuringStream;
    await sleep(500);
    const readsAfterWriter = readsDuringStream - readsBeforeWriter;
    stop = true;
    await stream;
    expect(error).toBeUndefined();
    expect(writerBesideReader).toBe(false);
    expect(ms).toBeLessThan(6_000);
    expect(readsAfterWriter).toBeGreaterThan(0); // readers resume after the writer
    expect(await dbsizesOn(set.clients, 1_000)).toEqual([0, 0, 0, 0, 0]);
  });

  it('auto-renewal keeps a reader past its TTL; a reader gone from a majority is reported by extend and the signal', async () => {
    const redlock = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('renew');
    const key = `lock:${resource}`;
    const renewed = await redlock.acquire(resource, 300, { mode: 'read', autoExtend: true });
    await sleep(900);
    expect(renewed.isHeld).toBe(true);
    expect(renewed.signal.aborted).toBe(false);
    expect(await redlock.tryAcquire(resource, 1_000)).toBeNull();

    const doomed = await redlock.acquire(resource, 5_000, { mode: 'read' });
    const aborted = abortOf(doomed.signal);
    await Promise.all(set.clients.slice(0, 3).map((c) => c.zrem(key, doomed.value)));
    expect(await rejectionOf(doomed.extend())).toBeInstanceOf(LockLostError);
    expect((await aborted).reason).toBeInstanceOf(LockLostError);
    await Promise.all([renewed.release(), doomed.release()]);
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('an unrenewed reader signals its loss before its validity ends, and its key expires with it', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('expire');
    const lock = await redlock.acquire(resource, 400, { mode: 'read' });
    const deadline = performance.now() + lock.validity;
    const { at, reason } = await abortOf(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(at).toBeLessThan(deadline);
    await sleep(100);
    expect(await dbsizesOn(set.clients, 500)).toEqual([0, 0, 0, 0, 0]);
    await lock.release();
  });

  it('2 of 5 masters hung: readers and a writer work; 3 of 5 hung: LockAcquisitionError in bounded time, not busy', async () => {
    const redlock = await set.redlock({ commandTimeout: 150 });
    const resource = resourceName('hung');
    await whilePaused(set.masters.slice(3), async () => {
      const readers = await Promise.all(
        [1, 2].map(() => redlock.acquire(resource, 3_000, { mode: 'read', retryCount: 0 })),
      );
      expect(await redlock.tryAcquire(resource, 3_000, { mode: 'write' })).toBeNull();
      await Promise.all(readers.map((l) => l.release()));
      const writer = await redlock.acquire(resource, 3_000, { mode: 'write', retryCount: 0 });
      await writer.release();
    });
    const { ms, error } = await whilePaused(set.masters.slice(0, 3), () =>
      timed(redlock.acquire(resource, 3_000, { mode: 'read', retryCount: 2, retryDelay: 30, retryJitter: 5 })),
    );
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).busy).toBe(false);
    expect(ms).toBeLessThan(3 * 150 + 3 * 35 + 2_000);
    expect(await dbsizesOn(set.clients, 2_000)).toEqual([0, 0, 0, 0, 0]);
  });

  it('fencing tokens for readers and writers increase across holders', async () => {
    const redlock = await set.redlock({ fencing: true });
    const resource = resourceName('fence');
    const r1 = await redlock.acquire(resource, 2_000, { mode: 'read' });
    const r2 = await redlock.acquire(resource, 2_000, { mode: 'read' });
    await Promise.all([r1.release(), r2.release()]);
    const w = await redlock.acquire(resource, 2_000);
    await w.release();
    expect(r2.fencingToken!).toBeGreaterThan(r1.fencingToken!);
    expect(w.fencingToken!).toBeGreaterThan(r2.fencingToken!);
    await Promise.all(set.clients.map((c) => c.del(`fence:${resource}`)));
  });

  it('a writer released wakes a waiting reader of this process promptly, and the readers behind it too', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('wake');
    const writer = await redlock.acquire(resource, 10_000);
    const slow = {
      mode: 'read' as const,
      retryCount: Infinity,
      retryDelay: 5_000,
      retryJitter: 0,
      acquireTimeout: 20_000,
    };
    const readers = [0, 1, 2].map(async (i) => {
      await sleep(i * 20);
      return redlock.acquire(resource, 10_000, slow);
    });
    await sleep(200);
    const start = performance.now();
    await writer.release();
    const held: Lock[] = await Promise.all(readers);
    expect(performance.now() - start).toBeLessThan(4_000); // woken, not the 5 s retry delay
    expect(held.every((l) => l.isHeld)).toBe(true);
    await Promise.all(held.map((l) => l.release()));
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it('reentrancy: read inside read or inside write reuses the outer lock; write inside read is refused', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('reenter');
    await redlock.using(resource, 2_000, async (outer) => {
      await redlock.using(resource, 2_000, (inner) => expect(inner).toBe(outer), { mode: 'read', retryCount: 0 });
    });
    await redlock.using(
      resource,
      2_000,
      async (outer) => {
        await redlock.using(resource, 2_000, (inner) => expect(inner).toBe(outer), { mode: 'read', retryCount: 0 });
        const error = await rejectionOf(redlock.using(resource, 2_000, () => 1, { retryCount: 0 }));
        expect(error).toBeInstanceOf(RedlockError);
        expect((error as Error).message).toMatch(/inside a read lock/);
      },
      { mode: 'read' },
    );
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });

  it("refuses a `mode` other than 'read' or 'write', naming it", async () => {
    const redlock = await set.redlock();
    for (const mode of ['shared', 'READ', 1, null]) {
      const error = await rejectionOf(redlock.acquire(resourceName('bad'), 1_000, { mode } as never));
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).option).toBe('mode');
    }
    expect(await dbsizesOn(set.clients)).toEqual([0, 0, 0, 0, 0]);
  });
});
