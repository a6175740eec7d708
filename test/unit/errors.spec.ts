import { describe, expect, it } from '@jest/globals';
import { quote } from '../../lib/errors/quote.js';
import {
  LockAcquisitionError,
  LockExtensionError,
  LockLostError,
  RedlockClosedError,
  RedlockError,
} from '../../lib/index.js';

describe('quote()', () => {
  it('quotes every resource of a short list', () => {
    expect(quote(['a', 'b"c'])).toBe('"a", "b\\"c"');
  });

  it('lists a few resources and says how many more', () => {
    const many = Array.from({ length: 150_000 }, (_, i) => `r${i}`);
    expect(quote(many)).toBe('"r0", "r1", "r2", "r3", "r4" and 149995 more');
  });

  it('cuts a very long name', () => {
    expect(quote(['x'.repeat(1_000_000)]).length).toBeLessThan(100);
  });
});

describe('errors own their messages and carry a reason', () => {
  const many = Array.from({ length: 10_000 }, (_, i) => `seat:${i}`);

  it.each([
    ['not-renewed', LockLostError.notRenewed(['a']), /was not renewed/],
    ['lapsed', LockLostError.lapsed(['a']), /lapsed/],
    ['majority-lost', LockLostError.majorityLost(['a'], 2, 3), /2 of 3 masters no longer hold it/],
    ['released', LockLostError.released(['a']), /already released/],
    ['shutdown', LockLostError.shutdown(['a']), /shutting down/],
    ['resigned', LockLostError.resigned(['a']), /was resigned/],
    ['not-leader', LockLostError.notLeader(['a'], 'standing by'), /Not the leader of "a": standing by/],
  ] as const)('LockLostError %s', (reason, error, message) => {
    expect(error).toBeInstanceOf(RedlockError);
    expect(error.reason).toBe(reason);
    expect(error.resources).toEqual(['a']);
    expect(error.message).toMatch(message);
    expect(error.name).toBe('LockLostError');
  });

  it('LockAcquisitionError.of builds the message from the reason and the budget, capped', () => {
    const outcomes = [
      { master: 'a:1', status: 'refused' as const },
      { master: 'b:1', status: 'granted' as const },
      { master: 'c:1', status: 'timeout' as const },
    ];
    const votes = LockAcquisitionError.of({
      resources: many,
      attempts: 3,
      outcomes,
      reason: 'votes',
      budget: { retryCount: 2 },
    });
    expect(votes.reason).toBe('votes');
    expect(votes.message).toContain('after 3 attempts (`retryCount` 2)');
    expect(votes.message).toContain('and 9995 more');
    expect(votes.message.length).toBeLessThan(400);
    expect(votes.busy).toBe(true);
    const late = LockAcquisitionError.of({
      resources: ['a'],
      attempts: 1,
      outcomes,
      reason: 'too-late',
      budget: { acquireTimeout: 50 },
    });
    expect(late.reason).toBe('too-late');
    expect(late.message).toContain('within `acquireTimeout` (50 ms)');
    expect(late.message).toContain('too late');
  });

  it('LockExtensionError.of caps its message', () => {
    const error = LockExtensionError.of(many, [{ master: 'a:1', status: 'timeout' }], 120.4);
    expect(error.message).toContain('and 9995 more');
    expect(error.message).toContain('120 ms');
  });

  it('RedlockClosedError is a RedlockError of its own', () => {
    const error = new RedlockClosedError();
    expect(error).toBeInstanceOf(RedlockError);
    expect(error.name).toBe('RedlockClosedError');
    expect(error.message).toMatch(/closed/);
  });
});
