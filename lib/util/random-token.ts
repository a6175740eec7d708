import { randomFillSync } from 'node:crypto';

/** Bytes drawn from the system's generator at once; each token takes 16 of them. */
const POOL_BYTES = 4096;
const TOKEN_BYTES = 16;

const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

/**
 * 16 cryptographically random bytes as base64url (22 characters): a lock value no other holder can
 * guess. The bytes come from `crypto.randomFillSync`, drawn 4 KiB at a time rather than once per
 * lock (as `crypto.randomUUID` does); each byte is used once.
 *
 * @example
 * const value = randomToken() + ownerSuffix; // 'q3ZV0f5i0eXcGm8v3Zb1tA' + …
 */
export function randomToken(): string {
  if (offset + TOKEN_BYTES > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
}
