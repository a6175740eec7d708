/**
 * Where portable handles meet `owner` and `revoke()`: an adopted lock is the same holder on the
 * masters (same value, so the same owner), and revoking it ends it in every process that holds it.
 */
import { describe, expect, it } from '@jest/globals';
import { LockLostError, type Lock, type LockHandle } from '../../lib/core.js';
import { resourceName, useMasters, waitFor } from '../support/index.js';

/** Long enough that no renewal (a third of it) nor expiry happens while a test waits: only the revocation can end the lock. */
const LONG_TTL = 60_000;

/** The handle as it arrives in another process: through JSON text. */
const viaJson = (lock: Lock): LockHandle => JSON.parse(JSON.stringify(lock.toHandle())) as LockHandle;

/** Resolves once `lock` is lost, with the reason of its `LockLostError`. */
async function lostReason(lock: Lock): Promise<string | undefined> {
  expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
  const reason: unknown = lock.signal.reason;
  expect(reason).toBeInstanceOf(LockLostError);
  return (reason as LockLostError).reason;
}

describe('adopt() meets owner and revoke() (3 masters)', () => {
  const set = useMasters(3);

  it("an adopted lock keeps its acquirer's owner: inspect and revoke name it, not the adopter's", async () => {
    const route = await set.redlock({ owner: 'http-route' });
    const worker = await set.redlock({ owner: 'queue-worker' });
    const resource = resourceName('adopt-owner');
    const lock = await route.acquire(resource, LONG_TTL);
    const adopted = await worker.adopt(viaJson(lock));

    const view = await worker.inspect(resource);
    expect(view.holder).toBe(adopted.value);
    expect(view.owner).toBe('http-route');
    expect(view.masters.map((m) => m.owner)).toEqual(['http-route', 'http-route', 'http-route']);
    const result = await worker.revoke(resource);
    expect(result).toEqual({ revoked: true, holder: lock.value, owner: 'http-route' });
  });

  it('a lock whose owner is the longest allowed (256 characters, 3 bytes each in UTF-8) can be adopted', async () => {
    const owner = '日'.repeat(256);
    const route = await set.redlock({ owner });
    const worker = await set.redlock();
    const resource = resourceName('adopt-long-owner');
    const lock = await route.acquire(resource, LONG_TTL);
    const adopted = await worker.adopt(viaJson(lock));
    expect(adopted.value).toBe(lock.value);
    expect((await worker.inspect(resource)).owner).toBe(owner);
    await adopted.release();
    expect(lock.isHeld).toBe(true); // its instance finds out at its next extension
  });

  it.each([
    ['an exclusive lock', {}],
    ['a read lock', { mode: 'read' as const }],
    ['a permit of a counting lock', { limit: 2 }],
  ])('revoking %s adopted in another instance aborts both holders with reason revoked', async (_, options) => {
    const route = await set.redlock();
    const worker = await set.redlock();
    const operator = await set.redlock();
    const resource = resourceName('adopt-revoke');
    const lock = await route.acquire(resource, LONG_TTL, options);
    const adopted = await worker.adopt(viaJson(lock), { autoExtend: true });

    const result = await operator.revoke(resource, { reason: 'handed job stuck' });

    expect(result.revoked).toBe(true);
    expect(result.holder).toBe(lock.value);
    for (const holder of [adopted, lock]) {
      expect(await lostReason(holder)).toBe('revoked');
      expect((holder.signal.reason as LockLostError).message).toContain('handed job stuck');
    }
  });

  it('an instance that holds nothing but the adopted lock hears its revocation at once (it follows the channel)', async () => {
    const route = await set.redlock();
    const worker = await set.redlock({ owner: 'worker' });
    const operator = await set.redlock();
    const resource = resourceName('adopt-revoke-only');
    const lock = await route.acquire(resource, LONG_TTL);
    const adopted = await worker.adopt(viaJson(lock)); // no autoExtend: no renewal could find it out
    await operator.revoke(resource);
    expect(await lostReason(adopted)).toBe('revoked');
  });
});
