import { describe, expect, it } from '@jest/globals';
import { resourceName, useMasters } from '../support/index.js';

describe('Redlock.inspect() of read-write and counting locks', () => {
  const set = useMasters(3);

  /** Every key on every master: to show that inspect() writes nothing. */
  const snapshot = (): Promise<string[][]> => Promise.all(set.clients.map(async (c) => (await c.keys('*')).sort()));

  it('readers: each reader with its remaining time and quorum agreement; no error, no writer; nothing is written', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('catalog');
    const a = await redlock.acquire(resource, 5_000, { mode: 'read' });
    const b = await redlock.acquire(resource, 8_000, { mode: 'read' });
    const before = await snapshot();
    const view = await redlock.inspect(resource);
    expect(view).toMatchObject({ held: false, holder: null, agreeing: 0, validity: 0, writerWaiting: false });
    expect(view.permits).toBeUndefined();
    for (const m of view.masters) {
      expect(m.error).toBeUndefined();
      expect(m.holder).toBeNull();
      expect(m.readers?.map((r) => r.value).sort()).toEqual([a.value, b.value].sort());
      for (const r of m.readers ?? []) {
        expect(r.pttl).toBeGreaterThan(0);
        expect(r.pttl).toBeLessThanOrEqual(r.value === a.value ? 5_000 : 8_000);
      }
    }
    expect(view.readers.map((r) => r.value).sort()).toEqual([a.value, b.value].sort());
    for (const r of view.readers) {
      expect(r).toMatchObject({ agreeing: 3, held: true });
      expect(r.validity).toBeGreaterThan(0);
      const ttl = r.value === a.value ? 5_000 : 8_000;
      expect(r.validity).toBeLessThanOrEqual(ttl - (ttl * 0.01 + 2)); // conservative: less the drift allowance
    }
    expect(await snapshot()).toEqual(before);
    await a.release();
    const after = await redlock.inspect(resource);
    expect(after.readers.map((r) => r.value)).toEqual([b.value]);
    await b.release();
    const gone = await redlock.inspect(resource);
    expect(gone.readers).toEqual([]);
    for (const m of gone.masters) expect(m).toMatchObject({ holder: null, pttl: null, readers: [] });
  });

  it('a reader on a minority of masters is listed but not held', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('minority-reader');
    const key = `lock:${resource}`;
    const t = await set.clients[0].time();
    const serverNow = Number(t[0]) * 1000 + Math.floor(Number(t[1]) / 1000);
    await set.clients[0].zadd(key, serverNow + 5_000, 'stray-reader');
    await set.clients[0].pexpire(key, 5_000);
    const view = await redlock.inspect(resource);
    expect(view.readers).toEqual([{ value: 'stray-reader', agreeing: 1, held: false, validity: 0 }]);
    expect(view.masters.map((m) => m.readers?.length)).toEqual([1, 0, 0]);
    await set.clients[0].del(key);
  });

  it('a waiting writer is reported while readers hold the resource', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('writer-waits');
    const reader = await redlock.acquire(resource, 10_000, { mode: 'read' });
    const writer = redlock.acquire(resource, 10_000, { retryCount: Infinity, retryDelay: 50, acquireTimeout: 20_000 });
    let view = await redlock.inspect(resource);
    for (let i = 0; i < 100 && !view.writerWaiting; i++) {
      await new Promise((r) => setTimeout(r, 50));
      view = await redlock.inspect(resource);
    }
    expect(view.writerWaiting).toBe(true);
    expect(view.held).toBe(false);
    expect(view.readers.map((r) => r.value)).toEqual([reader.value]);
    await reader.release();
    const w = await writer;
    const held = await redlock.inspect(resource);
    expect(held).toMatchObject({ held: true, holder: w.value, readers: [] });
    await w.release();
  });

  it('permits: the limit, each slot holder with its agreement and validity; free slots are not listed; nothing is written', async () => {
    const redlock = await set.redlock({ fencing: true });
    const resource = resourceName('exports');
    const one = await redlock.acquire(resource, 5_000, { limit: 3 });
    const two = await redlock.acquire(resource, 5_000, { limit: 3 });
    const before = await snapshot();
    const view = await redlock.inspect(resource);
    expect(view).toMatchObject({ held: false, holder: null, readers: [] });
    expect(view.permits).toBeDefined();
    const permits = view.permits!;
    expect(permits.limit).toBe(3);
    expect(permits.limits).toBeUndefined();
    expect(permits.held).toBe(2);
    expect(permits.slots.map((s) => s.value).sort()).toEqual([one.value, two.value].sort());
    for (const s of permits.slots) {
      expect(s).toMatchObject({ agreeing: 3, held: true });
      expect(s.slot).toBeGreaterThanOrEqual(0);
      expect(s.slot).toBeLessThan(3);
      expect(s.validity).toBeGreaterThan(0);
      expect(s.validity).toBeLessThanOrEqual(5_000);
    }
    for (const m of view.masters) {
      expect(m.limit).toBe(3);
      expect(m.permits).toHaveLength(3);
      expect(m.permits!.filter((p) => p.holder !== null)).toHaveLength(2);
      for (const p of m.permits!) if (p.holder === null) expect(p.pttl).toBeNull();
    }
    expect(await snapshot()).toEqual(before);
    await one.release();
    expect((await redlock.inspect(resource)).permits?.slots.map((s) => s.value)).toEqual([two.value]);
    await two.release();
    const gone = await redlock.inspect(resource);
    expect(gone.permits).toBeUndefined();
    for (const m of gone.masters) expect(m).toMatchObject({ limit: null, permits: [] });
  });

  it('masters that disagree on the limit are both reported', async () => {
    const redlock = await set.redlock();
    const resource = resourceName('limits');
    const key = `lock:${resource}`;
    await set.clients[0].set(`${key}:limit`, '2', 'PX', 5_000);
    await set.clients[0].set(`${key}:permit:1`, 'p', 'PX', 5_000);
    await set.clients[1].set(`${key}:limit`, '4', 'PX', 5_000);
    const view = await redlock.inspect(resource);
    expect(view.permits).toMatchObject({ limit: 4, limits: [2, 4], held: 0 });
    expect(view.permits!.slots).toEqual([{ slot: 1, value: 'p', agreeing: 1, held: false, validity: 0 }]);
    await Promise.all(set.clients.map((c) => c.del(`${key}:limit`, `${key}:permit:1`)));
  });
});
