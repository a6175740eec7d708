import { describe, expect, it } from '@jest/globals';
import {
  expectAbsentOnAll,
  expectEventuallyAbsent,
  expectHeldOnAll,
  resourceName,
  timed,
  useMasters,
  whilePaused,
} from '../support/index.js';
import type { Lock } from '../../lib/index.js';

/**
 * A busy connection's writes wait for the replies of its previous write (lib/backend/write-batcher.ts).
 * A paused master never answers: its connection stays busy and its writes wait, but only its own.
 */
describe('write batching with a paused master (5 masters, SIGSTOP)', () => {
  const set = useMasters(5);

  it("a paused master's unanswered commands hold none of the other masters' writes: acquires still decide on quorum", async () => {
    const commandTimeout = 1_000;
    const redlock = await set.redlock({ commandTimeout, retryCount: 0 });
    const paused = set.masters.slice(4);
    const live = set.clients.slice(0, 4);
    const resources = Array.from({ length: 24 }, (_, i) => resourceName(`held-${i}`));

    await whilePaused(paused, async () => {
      // 16 concurrent acquisitions leave 16 commands unanswered on the paused master's connection.
      const first = await Promise.all(resources.slice(0, 16).map((r) => timed(redlock.acquire(r, 10_000))));
      for (const { error, ms } of first) {
        expect(error).toBeUndefined();
        expect(ms).toBeLessThan(commandTimeout);
      }
      // Now that connection is busy and its previous replies never come: each later round's command
      // to it waits, while the same round's commands to the 4 live masters go out and decide.
      for (const resource of resources.slice(16)) {
        const acquired = await timed(redlock.acquire(resource, 10_000));
        expect(acquired.error).toBeUndefined();
        expect(acquired.ms).toBeLessThan(commandTimeout);
        const lock = acquired.value as Lock;
        await expectHeldOnAll(live, `lock:${resource}`, lock.value);
        const released = await timed(lock.release());
        expect(released.ms).toBeLessThan(commandTimeout);
        await expectAbsentOnAll(live, `lock:${resource}`);
      }
      await Promise.all(first.map(({ value }) => (value as Lock).release()));
    });

    // Once it resumes, the paused master runs what was queued for it in call order: every SET is
    // followed by its release, so no key is left behind on it.
    for (const resource of resources) await expectEventuallyAbsent(set.clients, `lock:${resource}`, 5_000);
  });
});
