/**
 * A master that loses its script cache while the connection stays up (SCRIPT FLUSH, or a cache that
 * kept some scripts and not others) answers NOSCRIPT to a call already in flight. Sending that call
 * again as EVAL lets every command written after it on the connection run first: a failed attempt's
 * undo, sent at once behind the attempt, would then run before the attempt's own write, and the
 * attempt's key would stay on that master for its whole TTL. Calls that commands overtook on the
 * connection are not sent again; a call nothing overtook still is (plain-batch-edges.spec.ts).
 */
import { describe, expect, it } from '@jest/globals';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { SCRIPTS } from '../../lib/lua/scripts.generated.js';
import { noScriptErrors, resourceName, useMasters, waitFor } from '../support/index.js';

describe('a script cache lost under a live connection (3 masters)', () => {
  const set = useMasters(3);

  it('a failed attempt whose acquire script meets NOSCRIPT behind its own undo leaves no key on that master', async () => {
    const redlock = await set.redlock({ retryCount: 0 });
    // Both scripts are loaded over these connections: the next calls leave as EVALSHA.
    const warm = await redlock.acquire(resourceName('warm'), 10_000, { fencing: true });
    await warm.release();
    const resource = resourceName('cache-lost');
    const key = `lock:${resource}`;
    const holder = await redlock.acquire(resource, 10_000);
    // The holder keeps a quorum (masters 2 and 3); master 1 is free, so the attempt below takes it there.
    await set.clients[0].del(key);
    // Master 1 loses the fenced acquire script but has the release script (another client's EVAL
    // cached it again), and answers nothing for a moment, so the attempt's undo is written behind it.
    await set.clients[0].script('FLUSH');
    await set.clients[0].script('LOAD', SCRIPTS.plainRelease.lua);
    const before = await noScriptErrors(set.clients[0]);
    await set.clients[0].call('CLIENT', 'PAUSE', '300', 'ALL');
    // Refused by masters 2 and 3 (the holder's): failed at once, and its undo is sent to master 1 too.
    expect(await redlock.tryAcquire(resource, 10_000, { fencing: true })).toBeNull();
    // Master 1 runs the acquire (NOSCRIPT), then the undo; the client reads the NOSCRIPT reply in
    // the loop turn that reads this answer or an earlier one.
    expect(await waitFor(async () => (await noScriptErrors(set.clients[0])) > before, 5_000)).toBe(true);
    await nextTurn();
    // Anything the client sent to master 1 on reading the NOSCRIPT reply has run once an INFO sent now answers.
    expect((await redlock.refreshMasterStates())[0].connected).toBe(true);
    expect(await set.clients[0].get(key)).toBeNull();
    expect(await set.clients[1].get(key)).toBe(holder.value);
    await holder.release();
  }, 30_000);
});
