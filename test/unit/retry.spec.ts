import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { jitteredDelay } from '../../lib/waiting/attempt-budget.js';
import { abortableSleep } from '../../lib/waiting/sleep.js';

describe('jitteredDelay', () => {
  it('stays within delay ± jitter and spreads across the range', () => {
    const samples = Array.from({ length: 2_000 }, () => jitteredDelay(200, 100));
    for (const s of samples) {
      expect(s).toBeGreaterThanOrEqual(100);
      expect(s).toBeLessThanOrEqual(300);
    }
    expect(Math.min(...samples)).toBeLessThan(130);
    expect(Math.max(...samples)).toBeGreaterThan(270);
  });

  it('is exactly the delay when jitter is 0, and never negative', () => {
    expect(jitteredDelay(50, 0)).toBe(50);
    for (let i = 0; i < 200; i++) expect(jitteredDelay(0, 0)).toBe(0);
  });
});

describe('abortableSleep', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('resolves after the delay, not before', async () => {
    jest.useFakeTimers();
    let done = false;
    const sleeping = abortableSleep(30).then(() => (done = true));
    await jest.advanceTimersByTimeAsync(29);
    expect(done).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    await sleeping;
    expect(done).toBe(true);
  });

  it('rejects at once with the reason of an already aborted signal', async () => {
    const reason = new Error('gone');
    await expect(abortableSleep(10_000, [undefined, AbortSignal.abort(reason)])).rejects.toBe(reason);
  });

  it('rejects with the reason of whichever signal aborts first, without waiting out the delay', async () => {
    jest.useFakeTimers();
    const a = new AbortController();
    const b = new AbortController();
    const reason = new Error('b first');
    const sleeping = abortableSleep(10_000, [a.signal, b.signal]);
    setTimeout(() => b.abort(reason), 20);
    const outcome = expect(sleeping).rejects.toBe(reason);
    await jest.advanceTimersByTimeAsync(20); // far short of the 10 s delay
    await outcome;
    expect(jest.getTimerCount()).toBe(0); // the sleep's own timer was cleared
    a.abort(new Error('later')); // no effect once settled
  });

  it('ends early when woken through onSleep, and reports the end of the sleep', async () => {
    jest.useFakeTimers();
    const seen: ((() => void) | undefined)[] = [];
    const sleeping = abortableSleep(10_000, [], (wake) => seen.push(wake));
    expect(typeof seen[0]).toBe('function');
    seen[0]!();
    await sleeping;
    expect(seen).toHaveLength(2);
    expect(seen[1]).toBeUndefined();
    expect(jest.getTimerCount()).toBe(0);
  });
});
