import { describe, expect, it } from '@jest/globals';
import { commandTimeoutFor, driftOf, lossMarginOf, now, validUntilOf } from '../../lib/util/clock.js';

describe('clock arithmetic', () => {
  it('driftOf is ttl × driftFactor + 2 ms', () => {
    expect(driftOf(10_000, 0.01)).toBe(102);
    expect(driftOf(1_000, 0.01)).toBe(12);
    expect(driftOf(1_000, 0)).toBe(2);
    expect(driftOf(400, 0.25)).toBe(102);
  });

  it('validUntilOf is start + ttl - drift', () => {
    expect(validUntilOf(0, 1_000, 0.01)).toBe(988);
    expect(validUntilOf(5_000.5, 10_000, 0.01)).toBeCloseTo(14_898.5, 9);
    expect(validUntilOf(100, 300, 0)).toBe(398);
  });

  it('lossMarginOf is 5 % of the TTL, rounded up, at least 2 ms', () => {
    expect(lossMarginOf(10_000)).toBe(500);
    expect(lossMarginOf(600)).toBe(30);
    expect(lossMarginOf(41)).toBe(3); // ceil(2.05)
    expect(lossMarginOf(30)).toBe(2); // ceil(1.5) = 2
    expect(lossMarginOf(10)).toBe(2); // floor of 2 ms
    expect(lossMarginOf(1)).toBe(2);
  });

  it('commandTimeoutFor caps commandTimeout at a third of the TTL, and is at least 1 ms', () => {
    expect(commandTimeoutFor(10_000, 500)).toBe(500);
    expect(commandTimeoutFor(900, 500)).toBe(300);
    expect(commandTimeoutFor(1_000, 500)).toBe(333);
    expect(commandTimeoutFor(300, 100)).toBe(100);
    expect(commandTimeoutFor(2, 500)).toBe(1);
    expect(commandTimeoutFor(1, 500)).toBe(1);
  });

  it('now is a monotonic millisecond clock (performance.now), not the wall clock', () => {
    const a = now();
    const b = now();
    expect(b).toBeGreaterThanOrEqual(a);
    expect(Math.abs(a - performance.now())).toBeLessThan(50);
    expect(a).toBeLessThan(Date.now() - 1e9); // far from an epoch timestamp
  });
});
