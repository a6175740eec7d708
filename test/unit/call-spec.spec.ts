import { describe, expect, it } from '@jest/globals';
import { callSpec, type AcquireOptions } from '../../lib/engine/call-spec.js';
import { resolveOptions } from '../../lib/options/redlock-options.js';

describe('callSpec retry policy', () => {
  const defaults = resolveOptions({ nodes: ['redis://127.0.0.1:1'] });

  it('resolves the retry options of one options object once, as a @Locked method passes the same object on every call', () => {
    const options: AcquireOptions = { retryCount: 7, retryDelay: 20 };
    const first = callSpec(defaults, 'using', 'r', 1_000, options).attempt.retry;
    const second = callSpec(defaults, 'using', 'r', 1_000, options).attempt.retry;
    expect(first).toEqual({ retryCount: 7, retryDelay: 20, retryJitter: first.retryJitter, acquireTimeout: undefined });
    expect(second).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
  });

  it('resolves them again when the object was changed since, and still refuses a bad value naming the option', () => {
    const options: AcquireOptions = { retryCount: 7, retryDelay: 20 };
    callSpec(defaults, 'acquire', 'r', 1_000, options);
    options.retryCount = 2;
    expect(callSpec(defaults, 'acquire', 'r', 1_000, options).attempt.retry.retryCount).toBe(2);
    options.retryCount = -1;
    expect(() => callSpec(defaults, 'acquire', 'r', 1_000, options)).toThrow(/retryCount/);
  });

  it('keeps per-call options apart: another object with other values gets its own policy', () => {
    const a = callSpec(defaults, 'acquire', 'r', 1_000, { retryCount: 1 }).attempt.retry;
    const b = callSpec(defaults, 'acquire', 'r', 1_000, { retryCount: 4 }).attempt.retry;
    expect([a.retryCount, b.retryCount]).toEqual([1, 4]);
  });
});
