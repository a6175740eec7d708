import { describe, expect, it } from '@jest/globals';
import { abortableSleep, jitteredDelay } from '../../lib/core/retry.js';

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
  it('resolves after the delay', async () => {
    const start = performance.now();
    await abortableSleep(30);
    expect(performance.now() - start).toBeGreaterThanOrEqual(25);
  });

  it('rejects at once with the reason of an already aborted signal', async () => {
    const reason = new Error('gone');
    await expect(abortableSleep(10_000, [undefined, AbortSignal.abort(reason)])).rejects.toBe(reason);
  });

  it('rejects promptly with the reason of whichever signal aborts first', async () => {
    const a = new AbortController();
    const b = new AbortController();
    const reason = new Error('b first');
    const start = performance.now();
    const sleeping = abortableSleep(10_000, [a.signal, b.signal]);
    setTimeout(() => b.abort(reason), 20);
    await expect(sleeping).rejects.toBe(reason);
    expect(performance.now() - start).toBeLessThan(1_000);
    a.abort(new Error('later')); // no effect once settled
  });
});
