/**
 * `RedlockService.adopt()` between two Nest applications on the same masters: the second app adopts
 * what the first acquired, renews it, and its `app.close()` releases it like any lock it holds.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { LockLostError, RedlockService, type LockHandle } from '../../lib/index.js';
import { rejectionOf, waitFor } from '../support/index.js';
import { fastOptions, startApp, useNestMasters } from '../support/nest.js';

const masters = useNestMasters(3);

describe('RedlockService.adopt', () => {
  it('an app adopts a lock another app acquired; closing it releases the lock on every master', async () => {
    const routes = await startApp(fastOptions(masters.urls));
    const worker = await startApp(fastOptions(masters.urls));
    try {
      const lock = await routes.get(RedlockService).acquire('nest-adopt:order:42', 600);
      const handle = JSON.parse(JSON.stringify(lock.toHandle())) as LockHandle;
      const adopted = await worker.get(RedlockService).adopt(handle, { autoExtend: true });
      expect(adopted.value).toBe(lock.value);

      // Renewed by the worker past the TTL the route's lock was taken with.
      expect(await waitFor(() => lock.validity === 0, 2_000)).toBe(true);
      expect(await masters.inspector.held('lock:nest-adopt:order:42')).toBe(3);
      expect(adopted.isHeld).toBe(true);

      await worker.close();
      expect((adopted.lostReason as LockLostError).reason).toBe('shutdown');
      expect(await waitFor(async () => (await masters.inspector.held('lock:nest-adopt:order:42')) === 0, 1_000)).toBe(
        true,
      );
      expect(await rejectionOf(lock.extend())).toBeInstanceOf(LockLostError);
    } finally {
      await worker.close();
      await routes.close();
    }
  });
});
