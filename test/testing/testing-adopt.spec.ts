/**
 * nestjs-quorum-lock/testing: `adopt(handle)` on the Redis-free stand-in behaves as on the real
 * service: a lock it holds is adopted as the same holder (either side may release, the other then
 * behaves as lost), a lock no longer held is `'lapsed'`, and a wrong shape names the field.
 */
import { describe, expect, it } from '@jest/globals';
import { LockLostError, lockModeOf, RedlockConfigError, type LockHandle } from '../../lib/index.js';
import { RedlockTestingService } from '../../lib/testing/index.js';

const viaJson = (handle: LockHandle): LockHandle => JSON.parse(JSON.stringify(handle)) as LockHandle;

describe('RedlockTestingService.adopt', () => {
  it('adopts a held lock as the same holder; a release on either side ends it for both', async () => {
    const redlock = new RedlockTestingService();
    const lock = await redlock.acquire('order:7', 5_000);
    const adopted = await redlock.adopt(viaJson(lock.toHandle()), { autoExtend: true });
    expect(adopted.value).toBe(lock.value);
    expect(adopted.isHeld).toBe(true);
    expect(redlock.heldResources).toEqual(['order:7']); // one holder, not two
    await adopted.extend();

    await lock.release();
    expect(await redlock.tryAcquire('order:7')).not.toBeNull();
    const error = await Promise.resolve(adopted.extend()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('majority-lost');
    expect(adopted.signal.aborted).toBe(true);
    await expect(adopted.release()).resolves.toBeUndefined();
  });

  it('a permit is adopted as the same slot: the counting lock does not count it twice', async () => {
    const redlock = new RedlockTestingService();
    const permit = await redlock.acquire('export:acme', 5_000, { limit: 2 });
    const adopted = await redlock.adopt(viaJson(permit.toHandle()));
    expect(lockModeOf(adopted)).toEqual({ mode: 'write', limit: 2 });
    expect(adopted.toHandle().slot).toBe(permit.toHandle().slot);
    const second = await redlock.tryAcquire('export:acme', 5_000, { limit: 2 });
    expect(second).not.toBeNull();
    expect(await redlock.tryAcquire('export:acme', 5_000, { limit: 2 })).toBeNull();
    await adopted.release();
    expect(await redlock.tryAcquire('export:acme', 5_000, { limit: 2 })).not.toBeNull();
  });

  it('a lock no longer held is lapsed; a wrong shape is refused naming the field', async () => {
    const redlock = new RedlockTestingService();
    const lock = await redlock.acquire('order:8', 5_000);
    const handle = viaJson(lock.toHandle());
    await lock.release();
    const lapsed = await redlock.adopt(handle).catch((e: unknown) => e);
    expect(lapsed).toBeInstanceOf(LockLostError);
    expect((lapsed as LockLostError).reason).toBe('lapsed');

    const wrong = await redlock.adopt({ ...handle, value: 42 } as unknown as LockHandle).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(RedlockConfigError);
    expect((wrong as RedlockConfigError).option).toBe('handle.value');
  });
});
