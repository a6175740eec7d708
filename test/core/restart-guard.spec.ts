import { describe, expect, it } from '@jest/globals';
import { LockAcquisitionError, Redlock } from '../../lib/index.js';
import { rejectionOf, resourceName, sleep, useMasters, waitFor } from '../support/index.js';
import { startRedisMasters } from '../../tools/redis-masters.js';

describe('restart guard (3 masters)', () => {
  const set = useMasters(3);
  const largestTtl = 3_000;

  it('distrusts masters that have been up for less than the largest TTL plus drift, then trusts them', async () => {
    // These masters were started a moment ago, as after a restart (INFO's uptime is whole seconds,
    // so with a 3 s guard at least a second of distrust is left however slow start-up was).
    const redlock = await set.redlock({ ttl: 1_000, restartGuard: { largestTtl }, retryCount: 0 });
    expect(await waitFor(() => redlock.distrustedFor.every((ms) => ms < Infinity), 1_000, 10)).toBe(true);
    const guarded = redlock.distrustedFor;
    for (const ms of guarded) {
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThanOrEqual(largestTtl + largestTtl * 0.01 + 2);
    }
    const error = await rejectionOf(redlock.acquire(resourceName('fresh'), 2_000));
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).outcomes.map((o) => o.status)).toEqual([
      'restarted',
      'restarted',
      'restarted',
    ]);
    expect((error as LockAcquisitionError).message).toContain('restartGuard');
    expect((error as LockAcquisitionError).busy).toBe(false);

    expect(await waitFor(() => redlock.distrustedFor.every((ms) => ms === 0), Math.max(...guarded) + 200, 20)).toBe(
      true,
    );
    const lock = await redlock.acquire(resourceName('trusted'), 2_000);
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  it('a master killed and restarted empty grants a second holder under plain Redlock, and not with the guard', async () => {
    const resource = resourceName('double-grant');
    const key = `lock:${resource}`;
    const ttl = 10_000;
    const holderA = await set.redlock({ restartGuard: false });
    // A long-lived guarded client that will see master 0 restart through its reconnect.
    const watcher = await set.redlock({ restartGuard: { largestTtl: ttl }, retryCount: 0 });

    const a = await holderA.acquire(resource, ttl);
    await set.clients[2].del(key); // A's key is lost on master 2 (stands in for a clock jump there)
    set.clients[0].disconnect();
    await set.masters[0].kill(); // and master 0 restarts without its data
    await set.masters[0].restart();
    set.clients[0] = set.clients[0].duplicate();
    await set.clients[0].ping();

    // Plain Redlock: masters 0 and 2 are empty now, so a second client wins while A still holds.
    const plain = await set.redlock({ restartGuard: false, retryCount: 0 });
    const b = await plain.acquire(resource, ttl);
    expect(a.isHeld && b.isHeld).toBe(true); // two holders: the violation the guard exists for
    await b.release();
    await set.clients[2].del(key);

    // With the guard: a new client distrusts the restarted master 0 at once...
    const guarded = await set.redlock({ restartGuard: { largestTtl: ttl }, retryCount: 0 });
    const refused = await rejectionOf(guarded.acquire(resource, ttl));
    expect(refused).toBeInstanceOf(LockAcquisitionError);
    expect((refused as LockAcquisitionError).outcomes[0].status).toBe('restarted');

    // ...and so does a client that was connected before, once it has reconnected.
    // Reconnected means the connection is ready again and the guard distrusts what it found there
    // (`distrustedFor` alone is also above 0 while the connection is still down, when a vote errors).
    const reconnectedAndGuarded = (): boolean => {
      const state = watcher.masterStates()[0];
      return (
        state.connected &&
        watcher.distrustedFor[0] > 0 &&
        state.distrust !== undefined &&
        state.distrust !== 'unreachable'
      );
    };
    expect(await waitFor(reconnectedAndGuarded, 10_000, 20)).toBe(true);
    const alsoRefused = await rejectionOf(watcher.acquire(resource, ttl));
    expect(alsoRefused).toBeInstanceOf(LockAcquisitionError);
    expect((alsoRefused as LockAcquisitionError).outcomes[0].status).toBe('restarted');

    await a.release();
  });

  it('never guards for less than the TTLs this instance uses, whatever largestTtl says', async () => {
    const redlock = await set.redlock({ ttl: 5_000, restartGuard: { largestTtl: 100 } });
    expect(await waitFor(() => redlock.distrustedFor.every((ms) => ms < Infinity), 1_000, 10)).toBe(true);
    // The masters are a few seconds old at most: a 100 ms guard would trust them already.
    expect(Math.max(...redlock.distrustedFor)).toBeGreaterThan(0);
  });

  it('refuses a malformed restartGuard option', () => {
    expect(() => new Redlock({ nodes: set.urls, restartGuard: { largestTtl: 0 } })).toThrow(/restartGuard\.largestTtl/);
    expect(() => new Redlock({ nodes: set.urls, restartGuard: 'yes' as never })).toThrow(/restartGuard/);
  });

  it('gives up distrust only after the guard time, counted from the uptime the master reports', async () => {
    const redlock = await set.redlock({ ttl: 1_000, restartGuard: { largestTtl: 3_000 } });
    await sleep(50);
    // Masters here have been up for well under 3 s plus drift in this file's first seconds, or not:
    // either way no master may be distrusted for longer than the guard itself.
    for (const ms of redlock.distrustedFor) expect(ms).toBeLessThanOrEqual(3_000 + 3_000 * 0.01 + 2);
  });

  it('a fresh master, once trusted, stays trusted through health checks whose whole-second uptime reads low', async () => {
    // A master started now: the guard (1 s TTL: 1,012 ms) reads its uptime in whole seconds, one
    // short. Right after it is trusted, a fresh INFO still says 2 s (counted 1 s < 1,012 ms).
    const fresh = await startRedisMasters(1);
    const lines: string[] = [];
    const note = (m: string): number => lines.push(m);
    const logger = { log: note, warn: note, error: note };
    const redlock = new Redlock({ nodes: fresh.urls, ttl: 1_000, restartGuard: { largestTtl: 1_000 }, logger });
    try {
      await redlock.connect();
      await redlock.whenTrusted({ timeout: 10_000 });
      const seen = lines.length;
      const untrusted: string[] = [];
      for (const until = performance.now() + 2_500; performance.now() < until;) {
        const [state] = await redlock.refreshMasterStates();
        if (!state.trusted)
          untrusted.push(`${state.distrust} for ${state.distrustedFor} ms (uptime ${state.uptimeMs})`);
        await sleep(50);
      }
      expect(untrusted).toEqual([]);
      expect(lines.slice(seen).filter((l) => l.includes('distrusted'))).toEqual([]);
    } finally {
      await redlock.close();
      await fresh.stop();
    }
  });
});

describe('restart guard: a slow INFO reply', () => {
  it('never trusts a master early when its INFO is answered late (the uptime is counted from the reply)', async () => {
    // A server's uptime is read when the server answers, so the moment it started is at most the
    // reply's arrival minus that uptime. Counted from when INFO was sent, a reply held up by a pause
    // would date the start too early and end the guard before the largest TTL has passed.
    const spawned = performance.now(); // the server starts after this instant
    const fresh = await startRedisMasters(1);
    const largestTtl = 10_000;
    const guardMs = largestTtl + largestTtl * 0.01 + 2;
    const redlock = new Redlock({
      nodes: fresh.urls,
      ttl: 1_000,
      commandTimeout: 8_000,
      restartGuard: { largestTtl },
      logger: false,
    });
    try {
      await redlock.connect();
      expect(await waitFor(() => redlock.masterStates()[0].uptimeMs !== undefined, 5_000, 10)).toBe(true);
      const [master] = fresh.masters;
      master.pause();
      const refreshed = redlock.refreshMasterStates(); // its INFO waits for the server
      await sleep(2_500);
      master.resume();
      await refreshed;
      expect(redlock.masterStates()[0].uptimeMs).toBeGreaterThanOrEqual(1_000); // the late reading was recorded
      const trustedAt = performance.now() + redlock.distrustedFor[0];
      expect(trustedAt).toBeGreaterThanOrEqual(spawned + guardMs - 5);
    } finally {
      await redlock.close();
      await fresh.stop();
    }
  });
});
