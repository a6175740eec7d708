/**
 * The plain path keeps its rules where it caches (issue 25): scripts sent as EVALSHA without ioredis's
 * `Script` wrapper load themselves on every new connection, and the one lapse sweep of the held
 * locks keeps a lock that was extended past its first TTL.
 */
import { describe, expect, it } from '@jest/globals';
import {
  expectAbsentOnAll,
  expectHeldOnAll,
  noScriptErrors,
  resourceName,
  sleep,
  useMasters,
  waitFor,
} from '../support/index.js';

describe('the plain path under its caches (3 masters)', () => {
  const set = useMasters(3);

  it('after a master restarts (empty script cache), the release script reaches it as EVAL on the new connection: no NOSCRIPT, and the key is gone', async () => {
    const redlock = await set.redlock({ retryCount: 0 });
    const first = await redlock.acquire(resourceName('before-restart'), 10_000);
    await first.release(); // the release script is now loaded on every master, over these connections
    await set.masters[0].kill();
    await set.masters[0].restart();
    await waitFor(async () => (await redlock.refreshMasterStates())[0].connected, 10_000, 20);
    const resource = resourceName('after-restart');
    const lock = await redlock.acquire(resource, 10_000);
    await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
    await lock.release();
    // A release decides on a quorum: the restarted master may answer a moment later.
    await waitFor(async () => (await set.clients[0].exists(`lock:${resource}`)) === 0, 5_000);
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
    expect(await noScriptErrors(set.clients[0])).toBe(0);
  }, 30_000);

  it('a lock extended past its first TTL stays tracked by the lapse sweep: close() still releases it on every master', async () => {
    const redlock = await set.redlock({ retryCount: 0 });
    const resource = resourceName('extended-past-lapse');
    const ttl = 300;
    const lock = await redlock.acquire(resource, ttl);
    await lock.extend(10_000);
    // Past the first TTL and the sweep that came with it (which must keep the extended lock).
    await sleep(ttl + 200);
    expect(lock.isHeld).toBe(true);
    await expectHeldOnAll(set.clients, `lock:${resource}`, lock.value);
    await redlock.close();
    await expectAbsentOnAll(set.clients, `lock:${resource}`);
  }, 30_000);
});
