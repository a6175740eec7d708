/**
 * Reentrancy is scoped to the call that holds the lock, and reentrant siblings take turns: on real
 * masters (3 redis-server processes started by the test).
 */
import { describe, expect, it } from '@jest/globals';
import { now, resourceName, sleep, timed, useMasters, valuesOn, expectAbsentOnAll, waitFor } from '../support/index.js';
import { currentLock, LockAcquisitionError, LockLostError, type Lock, type Redlock } from '../../lib/index.js';

/** Counts how many bodies run at once. */
function concurrency() {
  let inside = 0;
  const state = { most: 0, order: [] as string[] };
  const body = async (label: string, ms = 60): Promise<string> => {
    inside++;
    state.most = Math.max(state.most, inside);
    state.order.push(`in ${label}`);
    await sleep(ms);
    state.order.push(`out ${label}`);
    inside--;
    return label;
  };
  return { state, body };
}

describe('reentrancy is scoped to the call that holds the lock (3 masters)', () => {
  const set = useMasters(3);
  const noWaiting = { retryCount: 0 };

  it('a fire-and-forget reentrant call keeps the holder’s lock held (and renewed) until it settles; nobody else gets the lock meanwhile', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const contender = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('fire-and-forget');
    const key = `lock:${resource}`;
    let holder: Lock | undefined;
    let innerDone = false;
    let contenderGotItWhileInnerRan = false;
    const ttl = 300; // the inner call outlives several TTLs: renewal must go on

    const returnedAt = { outer: 0, inner: 0 };
    const outer = redlock.using(resource, ttl, async (lock) => {
      holder = lock;
      void redlock.using(resource, ttl, async () => {
        await sleep(1_000); // still running long after the holder's body returned
        innerDone = true;
        returnedAt.inner = now();
      });
      return 'outer body done';
    });
    // While the inner call runs, the lock stays on the masters with the holder's value.
    await sleep(500);
    expect(innerDone).toBe(false);
    expect((await valuesOn(set.clients, key)).filter((v) => v === holder!.value).length).toBeGreaterThanOrEqual(2);
    const grabbed = await contender.tryAcquire(resource, 1_000);
    if (grabbed) {
      contenderGotItWhileInnerRan = !innerDone;
      await grabbed.release();
    }
    expect(contenderGotItWhileInnerRan).toBe(false);

    await expect(outer).resolves.toBe('outer body done');
    returnedAt.outer = now();
    expect(innerDone).toBe(true); // the holder's call settled only after the inner one
    expect(returnedAt.outer).toBeGreaterThanOrEqual(returnedAt.inner);
    await expectAbsentOnAll(set.clients, key);
  });

  it('a call started by a timer that fires after the holder returned does not inherit: it acquires the lock itself', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const other = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('late-timer');
    const key = `lock:${resource}`;
    let late: Promise<unknown> | undefined;
    let firstValue = '';
    const seen: { inherited: boolean; value: string | undefined; otherHeld: boolean } = {
      inherited: false,
      value: undefined,
      otherHeld: true,
    };
    const holding: { other?: Lock } = {};

    await redlock.using(resource, 2_000, async (lock) => {
      firstValue = lock.value;
      setTimeout(() => {
        late = redlock.using(
          resource,
          2_000,
          async (mine) => {
            seen.inherited = mine.value === firstValue;
            seen.value = (await valuesOn(set.clients, key)).find((v) => v === mine.value) ?? undefined;
            seen.otherHeld = holding.other?.isHeld ?? false;
          },
          { retryCount: 100, retryDelay: 30, retryJitter: 10 },
        );
      }, 150);
    });
    // The holder returned and released; another process takes the lock before the timer fires.
    const otherLock = (holding.other = await other.acquire(resource, 2_000, noWaiting));
    await sleep(300); // the timer has fired: its call must be waiting for `other`
    expect(late).toBeDefined();
    expect(seen.value).toBeUndefined(); // not run yet
    await otherLock.release();
    await late;
    expect(seen.inherited).toBe(false);
    expect(seen.value).toBeDefined(); // ran under its own lock, on the masters
    expect(seen.otherHeld).toBe(false);
  });

  it('currentLock() is undefined in work left running after the holder returned', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    let later: Lock | undefined | 'unset' = 'unset';
    await redlock.using(resourceName('current-after'), 2_000, async () => {
      setTimeout(() => (later = currentLock()), 50);
    });
    await sleep(150);
    expect(later).toBeUndefined();
  });

  it('a lost lock is never inherited: a nested call is refused with LockLostError before it runs', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('lost-inherit');
    let ran = false;
    let nested: unknown;
    const outer = redlock.using(
      resource,
      2_000,
      async (lock) => {
        await new Promise((resolve) => lock.signal.addEventListener('abort', resolve)); // maxHold ends the hold
        nested = await redlock
          .using(
            resource,
            2_000,
            async () => {
              ran = true;
            },
            noWaiting,
          )
          .catch((e: unknown) => e);
      },
      { maxHold: 200 },
    );
    await expect(outer).rejects.toBeInstanceOf(LockLostError);
    expect(nested).toBeInstanceOf(LockLostError);
    expect(nested).not.toBeInstanceOf(LockAcquisitionError);
    expect(ran).toBe(false);
  });
});

describe('reentrant siblings take turns; nesting never deadlocks (3 masters)', () => {
  const set = useMasters(3);
  const noWaiting = { retryCount: 0 };

  it('Promise.all of two reentrant calls on the held resource runs their bodies one at a time, in call order', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('siblings');
    const { state, body } = concurrency();
    const results = await redlock.using(resource, 2_000, async () =>
      Promise.all([
        redlock.using(resource, 2_000, () => body('a'), noWaiting),
        redlock.using(resource, 2_000, () => body('b'), noWaiting),
        redlock.using(resource, 2_000, () => body('c'), noWaiting),
      ]),
    );
    expect(results).toEqual(['a', 'b', 'c']);
    expect(state.most).toBe(1);
    expect(state.order).toEqual(['in a', 'out a', 'in b', 'out b', 'in c', 'out c']);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  });

  it('direct nesting at any depth never deadlocks, also inside siblings that take turns', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('deep');
    const { state, body } = concurrency();
    const nest = (depth: number, label: string): Promise<string> =>
      redlock.using(resource, 2_000, async () => (depth === 0 ? body(label, 5) : nest(depth - 1, label)), noWaiting);
    const results = await redlock.using(resource, 2_000, () => Promise.all([nest(8, 'x'), nest(8, 'y')]), noWaiting);
    expect(results).toEqual(['x', 'y']);
    expect(state.most).toBe(1);
  });

  it("a sibling with onBusy 'skip' resolves to undefined while another sibling has the turn", async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('skip-sibling');
    const { body } = concurrency();
    const results = await redlock.using(resource, 2_000, () =>
      Promise.all([
        redlock.using(resource, 2_000, () => body('a')),
        redlock.using(resource, 2_000, () => body('b'), { onBusy: 'skip' }),
      ]),
    );
    expect(results).toEqual(['a', undefined]);
  });

  it('siblings on [held, other] take turns on the held lock and acquire `other` in turn', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const held = resourceName('held');
    const other = resourceName('other');
    const { state, body } = concurrency();
    await redlock.using(held, 2_000, () =>
      Promise.all([
        redlock.using([held, other], 2_000, () => body('a'), { retryCount: 50, retryDelay: 20, retryJitter: 5 }),
        redlock.using([held, other], 2_000, () => body('b'), { retryCount: 50, retryDelay: 20, retryJitter: 5 }),
      ]),
    );
    expect(state.most).toBe(1);
    await expectAbsentOnAll(set.clients, `lock:${other}`);
  });

  /**
   * H0 holds `c`; H1 = using([a, c]) acquires `a` and inherits `c`; C = using(a) takes H1's turn;
   * X inside C needs `a` and `c`. C holds H1's turn until its own frame drains, so X must find both
   * locks in C's frame and never wait for a turn its own caller holds.
   */
  // Unref'd: a call that settles leaves no timer keeping the test process alive.
  const stuck = (ms: number) => sleep(ms, 'stuck' as const, { ref: false });

  it('a fire-and-forget call needing a lock its parent shares with a grandparent frame runs, under both locks, and its parent returns', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const contender = await set.redlock({ commandTimeout: 200 });
    const a = resourceName('share-a');
    const c = resourceName('share-c');
    const seen: { heldA?: boolean; heldC?: boolean; contender?: unknown } = {};
    const all = redlock.using(c, 2_000, () =>
      redlock.using([a, c], 2_000, () =>
        redlock.using(
          a,
          2_000,
          async () => {
            void redlock
              .using(
                [a, c],
                2_000,
                async () => {
                  seen.heldA = currentLock(a)?.isHeld;
                  seen.heldC = currentLock(c)?.isHeld;
                  seen.contender = await contender.tryAcquire(c, 1_000).catch((error: unknown) => error);
                },
                noWaiting,
              )
              .catch((error: unknown) => (seen.contender = error));
            return 'C done';
          },
          noWaiting,
        ),
      ),
    );
    const { value, error, ms } = await timed(Promise.race([all, stuck(8_000)]));
    expect({ value, error }).toEqual({ value: 'C done', error: undefined });
    expect(ms).toBeLessThan(8_000);
    expect(seen).toEqual({ heldA: true, heldC: true, contender: null });
    await expectAbsentOnAll(set.clients, `lock:${a}`);
    await expectAbsentOnAll(set.clients, `lock:${c}`);
  }, 20_000);

  it('the shared locks pass down the turns: a fire-and-forget call two turns below the frame that inherited `c` runs', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const a = resourceName('share-a');
    const c = resourceName('share-c');
    let ran = false;
    const all = redlock.using(c, 2_000, () =>
      redlock.using([a, c], 2_000, () =>
        redlock.using(
          a,
          2_000,
          () =>
            redlock.using(
              a,
              2_000,
              async () => {
                void redlock.using([a, c], 2_000, () => (ran = true), noWaiting).catch(() => undefined);
                return 'D done';
              },
              noWaiting,
            ),
          noWaiting,
        ),
      ),
    );
    const { value, error } = await timed(Promise.race([all, stuck(8_000)]));
    expect({ value, error, ran }).toEqual({ value: 'D done', error: undefined, ran: true });
  }, 20_000);

  it('the same call awaited inside its parent runs and returns', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const a = resourceName('share-a');
    const c = resourceName('share-c');
    const all = redlock.using(c, 2_000, () =>
      redlock.using([a, c], 2_000, () =>
        redlock.using(a, 2_000, () => redlock.using([a, c], 2_000, () => 'X done', noWaiting), noWaiting),
      ),
    );
    const { value, error } = await timed(Promise.race([all, stuck(8_000)]));
    expect({ value, error }).toEqual({ value: 'X done', error: undefined });
  }, 20_000);
});

describe('a call never runs inside a lock that is gone (3 masters)', () => {
  const set = useMasters(3);
  const patient = { retryCount: 500, retryDelay: 10, retryJitter: 5 };

  /** Another instance takes `resource` as soon as it can and holds it 300 ms; records when. */
  function contend(other: Redlock, resource: string) {
    const seen: { acquired?: number; released?: number } = {};
    const done = other.acquire(resource, 2_000, patient).then(async (lock) => {
      seen.acquired = now();
      await sleep(300);
      seen.released = now();
      await lock.release();
    });
    return { seen, done };
  }

  it('a detached call waiting for its turn on one held lock keeps the other lock it inherited held: no other instance gets it before the call settles', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const other = await set.redlock({ commandTimeout: 200 });
    const a = resourceName('turn-a');
    const b = resourceName('turn-b');
    const inner: { start?: number; end?: number; heldB?: boolean; onMasters?: number } = {};
    let detached: Promise<unknown> | undefined;
    let contender: ReturnType<typeof contend> | undefined;
    await redlock.using(a, 2_000, () =>
      Promise.all([
        // Holds a's turn until the contender has b, or 1 s if it cannot get it.
        redlock.using(a, 2_000, () => waitFor(() => contender?.seen.acquired !== undefined, 1_000)),
        redlock.using(b, 2_000, async () => {
          // Fire and forget, on [a, b]: it inherits both, and must wait for a's turn.
          detached = redlock.using([a, b], 2_000, async () => {
            inner.start = now();
            const lockB = currentLock(b);
            inner.heldB = lockB?.isHeld ?? false;
            const values = await valuesOn(set.clients, `lock:${b}`);
            inner.onMasters = values.filter((v) => lockB && v === lockB.value).length;
            await sleep(50);
            inner.end = now();
          });
          // b's holder returns at once, and another instance wants b from now on.
          contender = contend(other, b);
        }),
      ]),
    );
    await detached;
    await contender!.done;
    expect(inner.heldB).toBe(true);
    expect(inner.onMasters).toBeGreaterThanOrEqual(2);
    // Never at once: the other instance got b only once the detached call had settled.
    expect(contender!.seen.acquired!).toBeGreaterThanOrEqual(inner.end!);
    await expectAbsentOnAll(set.clients, `lock:${b}`);
  });

  it('a call waiting for its turn on a lock that its holder released acquires the lock anew, after the other instance that took it', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const other = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('released-turn');
    const second: { start?: number; inherited?: boolean; held?: boolean } = {};
    let contender: ReturnType<typeof contend> | undefined;
    await redlock.using(resource, 2_000, async (lock) => {
      // `first` has the turn until the other instance holds the resource (or 1 s).
      const first = redlock.using(resource, 2_000, () => waitFor(() => contender?.seen.acquired !== undefined, 1_000));
      const waiting = redlock.using(
        resource,
        2_000,
        async (mine) => {
          second.start = now();
          second.inherited = mine === lock;
          second.held = mine.isHeld;
        },
        patient,
      );
      await lock.release(); // the holder gives the lock up while `waiting` waits for its turn
      contender = contend(other, resource);
      await Promise.all([first, waiting]);
    });
    await contender!.done;
    expect(second.inherited).toBe(false);
    expect(second.held).toBe(true);
    expect(second.start!).toBeGreaterThanOrEqual(contender!.seen.released!);
  });

  it('currentLock() never returns a released lock: once the body released it, the chain holds nothing', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('current-released');
    const seen: { before?: Lock; after?: (Lock | undefined)[] } = {};
    await redlock.using(resource, 2_000, async (lock) => {
      seen.before = currentLock(resource);
      await lock.release();
      seen.after = [currentLock(), currentLock(resource)];
    });
    expect(seen.before?.resources).toEqual([resource]);
    expect(seen.after).toEqual([undefined, undefined]);
  });
});
