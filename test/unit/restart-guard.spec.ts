import { describe, expect, it } from '@jest/globals';
import { now } from '../../lib/util/clock.js';
import { RestartGuard } from '../../lib/backend/health/restart-guard.js';

describe('RestartGuard arithmetic (what INFO said, on the monotonic clock)', () => {
  const guardMs = 1_012; // a 1 s TTL plus its drift

  it('a master trusted by an earlier INFO is not distrusted again by a later, coarser uptime of the same server', () => {
    const guard = new RestartGuard(1, () => guardMs);
    const t = now();
    guard.connecting(0, t - 2_000);
    // read 2 s ago with an uptime (whole seconds, one short) of 0: trusted 1,012 ms later, i.e. by now
    guard.observed(0, 'first', 0, t - 2_000);
    expect(guard.trusts(0)).toBe(true);
    // a health check now: Redis's whole-second uptime reads 2 s, counted as 1 s (< 1,012 ms); the
    // server has not changed, so the earlier reading still proves it has been up long enough
    guard.observed(0, 'same', 1_000, now());
    expect(guard.trusts(0)).toBe(true);
    expect(guard.distrustedFor(0)).toBe(0);
  });

  it('a restarted server is judged by its own uptime, not by the readings of the server before it', () => {
    const guard = new RestartGuard(1, () => guardMs);
    guard.observed(0, 'first', 60_000, now());
    expect(guard.trusts(0)).toBe(true);
    guard.connecting(0);
    guard.observed(0, 'restarted', 0, now());
    expect(guard.trusts(0)).toBe(false);
    expect(guard.why(0)).toBe('restarted');
    expect(guard.distrustedFor(0)).toBeGreaterThan(guardMs - 50);
  });

  it('a failover stays distrusted for the whole guard through a reconnect to the same (long-up) server', () => {
    const guard = new RestartGuard(1, () => guardMs);
    guard.observed(0, 'first', 60_000, now());
    guard.observed(0, 'failover', 3_600_000, now());
    expect(guard.why(0)).toBe('failover');
    guard.connecting(0); // a reconnect: pending until INFO is read
    guard.observed(0, 'same', 3_600_000, now());
    expect(guard.trusts(0)).toBe(false);
    expect(guard.why(0)).toBe('failover');
  });

  it('a larger guard (a larger TTL seen since) still applies to a trusted master at its next INFO', () => {
    let ms = guardMs;
    const guard = new RestartGuard(1, () => ms);
    guard.observed(0, 'first', 2_000, now());
    expect(guard.trusts(0)).toBe(true);
    ms = 10_100; // a 10 s TTL now: a master up 2 s may have forgotten such a lock
    guard.observed(0, 'same', 2_000, now());
    expect(guard.trusts(0)).toBe(false);
  });

  it('a moved cluster slot is distrusted for the whole guard, and keeps its reason through a reconnect', () => {
    const guard = new RestartGuard(1, () => 5_000);
    guard.observed(0, 'first', 60_000, now());
    expect(guard.trusts(0)).toBe(true);
    guard.observed(0, 'slot-moved', 60_000, now());
    expect(guard.why(0)).toBe('slot-moved');
    expect(guard.distrustedFor(0)).toBeGreaterThan(4_900);
    expect(guard.failovers[0]).toBe(1);
    guard.connecting(0);
    guard.observed(0, 'same', 61_000, now());
    expect(guard.why(0)).toBe('slot-moved');
  });
});
