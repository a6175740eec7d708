/**
 * Portable handles on real masters: `lock.toHandle()` as JSON, `adopt(handle)` on another `Redlock`
 * (its own connections) for the exclusive lock on one and several keys, read locks, counting-lock
 * permits and fenced locks; validity measured by the adopter's own round; a lock no longer held
 * refused as `lapsed`; wrong shapes refused naming the field, with nothing sent.
 */
import { describe, expect, it } from '@jest/globals';
import {
  driftOf,
  expectAbsentOnAll,
  pttlsOn,
  rejectionOf,
  now,
  resourceName,
  useMasters,
  valuesOn,
  waitFor,
  whilePaused,
} from '../support/index.js';
import {
  LockExtensionError,
  LockLostError,
  RedlockConfigError,
  RedlockError,
  lockModeOf,
  type Lock,
  type LockHandle,
} from '../../lib/index.js';

/** The handle as it arrives in another process: through JSON text. */
const viaJson = (lock: Lock): LockHandle => JSON.parse(JSON.stringify(lock.toHandle())) as LockHandle;

/** Script calls the masters have run so far (EVAL and EVALSHA), from INFO commandstats. */
async function scriptCalls(set: ReturnType<typeof useMasters>): Promise<number> {
  let total = 0;
  for (const client of set.clients) {
    const info = await client.info('commandstats');
    for (const match of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) total += Number(match[1]);
  }
  return total;
}

describe('toHandle / adopt (3 masters)', () => {
  const set = useMasters(3);

  it('toHandle() is plain JSON-safe data: version, resources, prefix, value, ttl, mode', async () => {
    const redlock = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('handle-shape');
    const lock = await redlock.acquire(resource, 2_000);
    try {
      const handle = lock.toHandle();
      expect(handle).toEqual({
        version: 1,
        resources: [resource],
        keyPrefix: 'lock:',
        value: lock.value,
        ttl: 2_000,
        mode: 'write',
      });
      expect(JSON.parse(JSON.stringify(handle))).toEqual(handle);
      expect(Object.getPrototypeOf(handle)).toBe(Object.prototype);
    } finally {
      await lock.release();
    }
    // Written whatever the state here; the masters refuse it when it is adopted.
    expect(lock.toHandle()).toMatchObject({ value: lock.value, resources: [resource] });
    const error = await rejectionOf(redlock.adopt(lock.toHandle()));
    expect((error as LockLostError).reason).toBe('lapsed');
  });

  it('another instance adopts a one-key lock through JSON: extend and release work there, on every master', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    const adopter = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('adopt-one');
    const key = `lock:${resource}`;
    const lock = await holder.acquire(resource, 1_500);
    const adopted = await adopter.adopt(viaJson(lock));
    expect(adopted.resources).toEqual([resource]);
    expect(adopted.value).toBe(lock.value);
    expect(adopted.ttl).toBe(1_500);
    expect(adopted.isHeld).toBe(true);
    expect(adopted.validity).toBeLessThanOrEqual(1_500 - driftOf(1_500));

    await adopted.extend(4_000);
    expect(adopted.validity).toBeGreaterThan(3_000);
    await waitFor(async () => (await pttlsOn(set.clients, key)).every((p) => p > 3_000), 500, 10);
    for (const pttl of await pttlsOn(set.clients, key)) expect(pttl).toBeGreaterThan(3_000);

    await adopted.release();
    await expectAbsentOnAll(set.clients, key);
    // The original holder's lock behaves as a lost one: extend rejects, release resolves.
    const error = await rejectionOf(lock.extend());
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('majority-lost');
    await expect(lock.release()).resolves.toBeUndefined();
  });

  it('a lock on several keys: the original holder releases, the adopted lock then behaves as lost', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    const adopter = await set.redlock({ commandTimeout: 200 });
    const resources = [resourceName('adopt-many'), resourceName('adopt-many')];
    const lock = await holder.acquire(resources, 2_000);
    const handle = viaJson(lock);
    expect(handle.resources).toEqual(resources);
    const adopted = await adopter.adopt(handle);
    expect(adopted.resources).toEqual(resources);

    await lock.extend(); // the original keeps working beside the adopted one
    await adopted.extend();
    await lock.release();
    for (const r of resources) await expectAbsentOnAll(set.clients, `lock:${r}`);
    const error = await rejectionOf(adopted.extend());
    expect(error).toBeInstanceOf(LockLostError);
    expect(adopted.signal.aborted).toBe(true);
    await expect(adopted.release()).resolves.toBeUndefined();
  });

  it('validity comes from the adoption round: a round without a quorum adopts nothing, whatever the handle says', async () => {
    const holder = await set.redlock({ commandTimeout: 100 });
    const adopter = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('adopt-no-quorum');
    const lock = await holder.acquire(resource, 5_000);
    try {
      // A handle claiming more than it is: extra fields are not read.
      const handle = { ...viaJson(lock), validity: 1e9, validUntil: Date.now() + 1e9 } as LockHandle;
      const error = await whilePaused(set.masters.slice(1), () => rejectionOf(adopter.adopt(handle)));
      expect(error).toBeInstanceOf(LockExtensionError);
      expect((error as LockExtensionError).outcomes.map((o) => o.status)).toEqual(['granted', 'timeout', 'timeout']);
      expect((error as Error).message).toMatch(/Could not adopt the lock/);

      // With the masters back, the adoption's validity is its own round's: ttl − drift at most.
      const adopted = await adopter.adopt(handle);
      expect(adopted.validity).toBeGreaterThan(0);
      expect(adopted.validity).toBeLessThanOrEqual(5_000 - driftOf(5_000));
    } finally {
      await lock.release();
    }
  });

  it('the adoption extends by the handle TTL: a lock near its end gets a full TTL again', async () => {
    const holder = await set.redlock({ commandTimeout: 100 });
    const adopter = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('adopt-refresh');
    const lock = await holder.acquire(resource, 1_200);
    await waitFor(() => lock.validity < 700, 2_000, 10);
    const adopted = await adopter.adopt(viaJson(lock));
    try {
      expect(adopted.validity).toBeGreaterThan(lock.validity + 300);
      await waitFor(async () => (await pttlsOn(set.clients, `lock:${resource}`)).every((p) => p > 900), 500, 10);
      for (const pttl of await pttlsOn(set.clients, `lock:${resource}`)) expect(pttl).toBeGreaterThan(900);
    } finally {
      await adopted.release();
    }
  });

  it('adopting a lock no longer held rejects with LockLostError lapsed and writes nothing', async () => {
    const holder = await set.redlock({ commandTimeout: 100 });
    const adopter = await set.redlock({ commandTimeout: 100 });

    // Expired on the masters.
    const expired = resourceName('adopt-expired');
    const short = await holder.acquire(expired, 200);
    const expiredHandle = viaJson(short);
    await waitFor(async () => (await valuesOn(set.clients, `lock:${expired}`)).every((v) => v === null), 2_000, 10);
    const error = await rejectionOf(adopter.adopt(expiredHandle));
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('lapsed');
    expect((error as LockLostError).resources).toEqual([expired]);
    await expectAbsentOnAll(set.clients, `lock:${expired}`);

    // Released, then taken by somebody else: the new holder's keys are left as they are.
    const taken = resourceName('adopt-taken');
    const first = await holder.acquire(taken, 2_000);
    const firstHandle = viaJson(first);
    await first.release();
    const second = await holder.acquire(taken, 2_000);
    try {
      const refused = await rejectionOf(adopter.adopt(firstHandle));
      expect((refused as LockLostError).reason).toBe('lapsed');
      expect(await valuesOn(set.clients, `lock:${taken}`)).toEqual(set.clients.map(() => second.value));
      expect(second.isHeld).toBe(true);
      await second.extend();
    } finally {
      await second.release();
    }
  });

  it('a handle of the wrong shape is refused naming the field, before anything is sent', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('adopt-shape');
    const lock = await holder.acquire(resource, 5_000);
    const good = viaJson(lock);
    const cases: [unknown, string][] = [
      [null, 'handle'],
      [lock, 'handle'],
      ['{"version":1}', 'handle'],
      [{ ...good, version: 2 }, 'handle.version'],
      [{ ...good, version: undefined }, 'handle.version'],
      [{ ...good, value: undefined }, 'handle.value'],
      [{ ...good, value: 42 }, 'handle.value'],
      [{ ...good, value: '' }, 'handle.value'],
      [{ ...good, resources: resource }, 'handle.resources'],
      [{ ...good, resources: [] }, 'handle.resources'],
      [{ ...good, resources: [''] }, 'handle.resources'],
      [{ ...good, resources: [resource, resource] }, 'handle.resources'],
      [{ ...good, keyPrefix: 'other:' }, 'handle.keyPrefix'],
      [{ ...good, keyPrefix: undefined }, 'handle.keyPrefix'],
      [{ ...good, ttl: -1 }, 'handle.ttl'],
      [{ ...good, ttl: '5000' }, 'handle.ttl'],
      [{ ...good, mode: 'exclusive' }, 'handle.mode'],
      [{ ...good, limit: 0, slot: 0 }, 'handle.limit'],
      [{ ...good, limit: 3 }, 'handle.slot'],
      [{ ...good, limit: 3, slot: 3 }, 'handle.slot'],
      [{ ...good, mode: 'read', limit: 3, slot: 0 }, 'handle.mode'],
      [{ ...good, fencingToken: 'x' }, 'handle.fencingToken'],
      [{ ...good, fencingToken: 0 }, 'handle.fencingToken'],
    ];
    try {
      const adopter = await set.redlock({ commandTimeout: 200 });
      const before = await scriptCalls(set);
      for (const [handle, field] of cases) {
        const error = await rejectionOf(adopter.adopt(handle as LockHandle));
        expect(error).toBeInstanceOf(RedlockError);
        expect(error).toBeInstanceOf(RedlockConfigError);
        expect({ field, option: (error as RedlockConfigError).option }).toEqual({ field, option: field });
        expect((error as Error).message).toContain(`\`${field}`);
        expect((error as Error).message).not.toContain(lock.value);
      }
      await expect(adopter.adopt(good, { ttl: 0 })).rejects.toMatchObject({ option: 'ttl' });
      await expect(adopter.adopt(good, { autoRenew: true } as never)).rejects.toMatchObject({ option: 'autoRenew' });
      expect(await scriptCalls(set)).toBe(before);
    } finally {
      await lock.release();
    }
  });

  it('a right-shaped handle with another value adopts nothing and leaves the holder alone', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    const adopter = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('adopt-forged');
    const lock = await holder.acquire(resource, 1_000);
    try {
      await waitFor(async () => (await pttlsOn(set.clients, `lock:${resource}`)).every((p) => p < 800), 2_000, 10);
      const error = await rejectionOf(adopter.adopt({ ...viaJson(lock), value: 'not-the-value', ttl: 60_000 }));
      expect((error as LockLostError).reason).toBe('lapsed');
      for (const pttl of await pttlsOn(set.clients, `lock:${resource}`)) expect(pttl).toBeLessThan(800);
    } finally {
      await lock.release();
    }
  });

  it('read locks: the adopted reader keeps writers out until one side releases it', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    const adopter = await set.redlock({ commandTimeout: 200 });
    const writer = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('adopt-read');
    const reader = await holder.acquire(resource, 2_000, { mode: 'read' });
    const handle = viaJson(reader);
    expect(handle.mode).toBe('read');
    const adopted = await adopter.adopt(handle);
    expect(lockModeOf(adopted)).toEqual({ mode: 'read' });

    await reader.release();
    // The same reader, so the original's release ended it for the adopted lock too.
    expect(await rejectionOf(adopted.extend())).toBeInstanceOf(LockLostError);
    const w = await writer.tryAcquire(resource, 2_000);
    expect(w).not.toBeNull();
    await w!.release();

    // The other way round: the adopted side releases, the writer gets in, the original is lost.
    const reader2 = await holder.acquire(resource, 2_000, { mode: 'read' });
    const adopted2 = await adopter.adopt(viaJson(reader2));
    await adopted2.extend();
    expect(await writer.tryAcquire(resource, 2_000)).toBeNull();
    await adopted2.release();
    const w2 = await writer.tryAcquire(resource, 2_000);
    expect(w2).not.toBeNull();
    await w2!.release();
    expect(await rejectionOf(reader2.extend())).toBeInstanceOf(LockLostError);
  });

  it('counting locks: the handle carries limit and slot, and the adopted permit is that permit', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    const adopter = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('adopt-permit');
    const first = await holder.acquire(resource, 2_000, { limit: 2 });
    const second = await holder.acquire(resource, 2_000, { limit: 2 });
    const handle = viaJson(second);
    expect(handle).toMatchObject({ mode: 'write', limit: 2, slot: expect.any(Number) });
    const adopted = await adopter.adopt(handle);
    expect(lockModeOf(adopted)).toEqual({ mode: 'write', limit: 2 });

    await adopted.extend();
    expect(await holder.tryAcquire(resource, 2_000, { limit: 2 })).toBeNull(); // both permits held
    await adopted.release();
    const third = await holder.tryAcquire(resource, 2_000, { limit: 2 });
    expect(third).not.toBeNull();
    expect(await rejectionOf(second.extend())).toBeInstanceOf(LockLostError);
    await first.extend(); // the other permit is untouched
    await Promise.all([first.release(), third!.release()]);

    // A handle of the wrong slot is a permit this holder does not have.
    const p = await holder.acquire(resource, 2_000, { limit: 2 });
    try {
      const wrong = { ...viaJson(p), slot: 1 - p.toHandle().slot! };
      expect(((await rejectionOf(adopter.adopt(wrong))) as LockLostError).reason).toBe('lapsed');
    } finally {
      await p.release();
    }
  });

  it('fenced locks: the adopted lock carries the handle token; the next holder gets a larger one', async () => {
    const holder = await set.redlock({ commandTimeout: 200, fencing: true });
    const adopter = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('adopt-fenced');
    const lock = await holder.acquire(resource, 2_000);
    expect(lock.fencingToken).toEqual(expect.any(Number));
    const handle = viaJson(lock);
    expect(handle.fencingToken).toBe(lock.fencingToken);
    const adopted = await adopter.adopt(handle);
    expect(adopted.fencingToken).toBe(lock.fencingToken);
    expect(adopted.toHandle().fencingToken).toBe(lock.fencingToken);
    await adopted.release();
    const next = await holder.acquire(resource, 2_000);
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken!);
    await next.release();
  });

  it('autoExtend: the adopted lock renews itself past its TTL, and the original sees it still held', async () => {
    const TTL = 1_000;
    const holder = await set.redlock({ commandTimeout: 100 });
    const adopter = await set.redlock({ commandTimeout: 100 });
    const resource = resourceName('adopt-renew');
    const lock = await holder.acquire(resource, TTL); // not renewed by its first holder
    const adopted = await adopter.adopt(viaJson(lock), { autoExtend: true });
    // Three TTLs: only the adopted lock's renewal keeps the key on every master meanwhile.
    const until = now() + 3 * TTL;
    let missing: (string | null)[] | undefined;
    await waitFor(
      async () => {
        const values = await valuesOn(set.clients, `lock:${resource}`);
        if (values.some((v) => v !== lock.value)) missing = values;
        return missing !== undefined || now() >= until;
      },
      3 * TTL + 5_000,
      25,
    );
    expect(missing).toBeUndefined();
    expect(lock.isHeld).toBe(false); // the original was never renewed: its own validity ended
    expect(adopted.isHeld).toBe(true);
    expect(adopted.signal.aborted).toBe(false);
    await adopted.release();
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
    expect(adopted.signal.aborted).toBe(false); // a release is not a loss
  });

  it('quorum repair: the adoption round puts the key back on a master that lost it', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    const adopter = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('adopt-repair');
    const key = `lock:${resource}`;
    const lock = await holder.acquire(resource, 3_000);
    try {
      await waitFor(async () => (await valuesOn(set.clients, key)).every((v) => v === lock.value), 500, 10);
      await set.clients[2].del(key);
      const adopted = await adopter.adopt(viaJson(lock));
      expect(adopted.isHeld).toBe(true);
      expect(await waitFor(async () => (await set.clients[2].get(key)) === lock.value, 1_000, 10)).toBe(true);
    } finally {
      await lock.release();
    }
  });

  it('the restart guard: masters the adopter does not trust yet do not count toward the adoption', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    // These masters are seconds old: to a guard of ten minutes, each is a fresh server.
    const adopter = await set.redlock({ commandTimeout: 200, restartGuard: { largestTtl: 600_000 } });
    const resource = resourceName('adopt-guard');
    const lock = await holder.acquire(resource, 3_000);
    try {
      const error = await rejectionOf(adopter.adopt(viaJson(lock)));
      expect(error).toBeInstanceOf(LockExtensionError);
      const outcomes = (error as LockExtensionError).outcomes;
      expect(outcomes.map((o) => [o.status, o.distrust])).toEqual(set.urls.map(() => ['restarted', 'fresh']));
      expect(lock.isHeld).toBe(true);
      await lock.extend(); // the holder is not disturbed
    } finally {
      await lock.release();
    }
  });

  it('close() releases an adopted lock like any lock it holds; adopt after close is refused', async () => {
    const holder = await set.redlock({ commandTimeout: 200 });
    const adopter = await set.redlock({ commandTimeout: 200 });
    const resource = resourceName('adopt-close');
    const lock = await holder.acquire(resource, 5_000);
    const other = await holder.acquire(resourceName('adopt-after-close'), 5_000);
    const adopted = await adopter.adopt(viaJson(lock));
    await adopter.close();
    expect((adopted.lostReason as LockLostError).reason).toBe('shutdown');
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
    await expect(adopter.adopt(viaJson(other))).rejects.toMatchObject({ name: 'RedlockClosedError' });
    await other.release();
  });
});
