/**
 * Reentrancy is scoped to the call that holds the lock, and reentrant siblings take turns: on real
 * masters (3 redis-server processes started by the test).
 */
import { describe, expect, it } from '@jest/globals';
import { now, resourceName, sleep, useMasters, valuesOn, expectAbsentOnAll } from '../support/index.js';
import { currentLock, LockAcquisitionError, LockLostError, type Lock } from '../../lib/index.js';

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
});
