import { describe, expect, it } from '@jest/globals';
import { randomToken } from '../../lib/util/random-token.js';

describe('randomToken (lock values from a pool of random bytes)', () => {
  it('gives 22 base64url characters, never the same twice, across several refills of the pool', () => {
    const tokens = Array.from({ length: 2_000 }, () => randomToken()); // a pool holds 256 tokens
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set(tokens).size).toBe(tokens.length);
  });
});
