/**
 * nestjs-quorum-lock/testing: `revoke(resource)` on the Redis-free stand-in behaves as on the real
 * service: every holder of the resource loses its lock with `reason: 'revoked'`, the resource is
 * free at once, and the result says whether anything was held.
 */
import { describe, expect, it } from '@jest/globals';
import { LockKeyError, LockLostError, RedlockConfigError } from '../../lib/index.js';
import { RedlockTestingService } from '../../lib/testing/index.js';

describe('RedlockTestingService.revoke', () => {
  it("ends the holder's lock with reason 'revoked' and frees the resource", async () => {
    const redlock = new RedlockTestingService();
    const lock = await redlock.acquire('nightly-report', 5_000);
    const result = await redlock.revoke('nightly-report', { reason: 'stuck since 02:00' });
    expect(result).toEqual({ revoked: true, holder: lock.value, owner: null });
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as LockLostError).reason).toBe('revoked');
    expect(redlock.heldResources).toEqual([]);
    expect(await redlock.tryAcquire('nightly-report')).not.toBeNull();
  });

  it('removes every reader and every permit holder; nothing held resolves revoked: false', async () => {
    const redlock = new RedlockTestingService();
    const readers = [
      await redlock.acquire('catalog', 5_000, { mode: 'read' }),
      await redlock.acquire('catalog', 5_000, { mode: 'read' }),
    ];
    expect((await redlock.revoke('catalog')).revoked).toBe(true);
    expect(readers.every((r) => r.signal.aborted)).toBe(true);
    expect(await redlock.revoke('catalog')).toEqual({ revoked: false, holder: null, owner: null });
  });

  it('a @Locked-style using() call whose lock is revoked rejects with it after its work settles', async () => {
    const redlock = new RedlockTestingService();
    let release!: () => void;
    const work = new Promise<void>((resolve) => (release = resolve));
    const running = redlock.using('job', 5_000, () => work);
    await redlock.revoke('job');
    release();
    const error = await running.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('revoked');
  });

  it('refuses a bad resource or reason, naming it', async () => {
    const redlock = new RedlockTestingService();
    await expect(redlock.revoke('')).rejects.toBeInstanceOf(LockKeyError);
    const bad = await redlock.revoke('x', { reason: 42 as unknown as string }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(RedlockConfigError);
    expect((bad as RedlockConfigError).option).toBe('reason');
  });
});
