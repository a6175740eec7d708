/**
 * Issue 17, item 1: after a synchronous stall of the event loop longer than the validity left, no
 * timer has run, yet `lock.signal` must already read aborted with `LockLostError`, and agree with
 * `isHeld` and `validity`. Real masters, a real busy loop.
 */
import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib/index.js';
import { rejectionOf, resourceName, useMasters } from '../support/index.js';

/** Blocks the event loop for `ms`: no timer, no I/O callback runs meanwhile. */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* busy */
  }
}

describe('a lock after an event-loop stall longer than its validity (3 masters)', () => {
  const set = useMasters(3);

  it('a signal read before the stall reads aborted with LockLostError right after it, with no timer run', async () => {
    const holder = await set.redlock();
    const other = await set.redlock({ retryCount: 0 });
    const resource = resourceName('stall-before');
    const lock = await holder.acquire(resource, 1_000);
    const signal = lock.signal; // arms the loss timer, which cannot run during the stall
    expect(signal.aborted).toBe(false);
    stall(lock.validity + 100);
    // Synchronously, before any timer or I/O callback could run:
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(() => signal.throwIfAborted()).toThrow(LockLostError);
    expect(lock.isHeld).toBe(false);
    expect(lock.validity).toBe(0);
    expect(lock.signal).toBe(signal);
    expect(lock.lostReason).toBe(signal.reason);
    // And the keys have expired on the masters: another client can take the lock now.
    const second = await other.acquire(resource, 1_000);
    expect(second.isHeld).toBe(true);
    await second.release();
    await lock.release();
  });

  it('a signal first read after the stall is already aborted, as the README pattern signal.throwIfAborted() needs', async () => {
    const holder = await set.redlock();
    const lock = await holder.acquire(resourceName('stall-after'), 1_000);
    stall(lock.validity + 100);
    expect(() => lock.signal.throwIfAborted()).toThrow(LockLostError);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.isHeld).toBe(false);
    await lock.release();
  });

  it('using() rejects with LockLostError when its body stalled past the validity, even though no timer ran', async () => {
    const holder = await set.redlock();
    const error = await rejectionOf(
      holder.using(resourceName('stall-using'), 1_000, (lock) => {
        stall(lock.validity + 100);
        return 'done';
      }),
    );
    expect(error).toBeInstanceOf(LockLostError);
  });

  it('isHeld, validity and signal agree while the lock is valid', async () => {
    const holder = await set.redlock();
    const lock = await holder.acquire(resourceName('agree'), 2_000);
    stall(200);
    expect(lock.isHeld).toBe(true);
    expect(lock.validity).toBeGreaterThan(0);
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
    expect(lock.signal.aborted).toBe(false); // a normal release does not abort
  });
});
