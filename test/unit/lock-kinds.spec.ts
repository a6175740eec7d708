import { describe, expect, it } from '@jest/globals';
import { RedlockConfigError, RedlockError, lockModeOf } from '../../lib/index.js';
import { Lock, type LockIssuer } from '../../lib/lock/lock.js';
import { checkLockMode, KINDS } from '../../lib/kinds/lock-mode.js';
import type { KindRequest } from '../../lib/kinds/lock-kind.js';

// The rules each kind answers for itself, read through the one choice of kind (`checkLockMode`):
// the reentrancy cover (the library and the testing stand-in both ask it) and the stand-in's
// admit rule. Each row is docs/read-write-and-counting-locks.md's rule for that pair.

const issuer: LockIssuer = {
  extendLock: async () => undefined,
  releaseLock: async () => undefined,
  toHandle: () => {
    throw new Error('not used');
  },
};

const WRITE = checkLockMode(undefined);
const READ = checkLockMode({ mode: 'read' });
const permits = (limit: number): KindRequest => checkLockMode({ limit });

/** A lock of `request`'s kind, as a grant among `holders` would make it (a permit takes the lowest free slot). */
function holding(request: KindRequest, holders: Lock[] = []): Lock {
  const state = request.kind.placeAmong?.(holders, request.state, 'r') ?? request.state;
  return Lock.create(issuer, request.kind, state, ['r'], ['lock:r'], `v${holders.length}`, 1_000, Infinity);
}

describe('lock kinds: reentrancy cover', () => {
  it.each([
    ['write', 'write', WRITE, WRITE],
    ['write', 'read', WRITE, READ],
    ['read', 'read', READ, READ],
    ['permit 2', 'permit 2', permits(2), permits(2)],
  ])('a %s lock covers a nested %s request', (_h, _r, held, requested) => {
    expect(requested.kind.covers(holding(held), requested.state, 'r')).toBe(true);
  });

  it('refuses a write inside a read (the writer would wait for its own reader)', () => {
    expect(() => WRITE.kind.covers(holding(READ), WRITE.state, 'r')).toThrow(RedlockError);
    expect(() => WRITE.kind.covers(holding(READ), WRITE.state, 'r')).not.toThrow(RedlockConfigError);
  });

  it.each([
    ['permit 3', 'permit 2', permits(3), permits(2)],
    ['write', 'permit 2', WRITE, permits(2)],
    ['read', 'permit 2', READ, permits(2)],
    ['permit 2', 'write', permits(2), WRITE],
    ['permit 2', 'read', permits(2), READ],
  ])('refuses a %s lock serving a nested %s request, naming `limit`', (_h, _r, held, requested) => {
    expect(() => requested.kind.covers(holding(held), requested.state, 'r')).toThrow(
      expect.objectContaining({ option: 'limit' }),
    );
  });
});

describe('lock kinds: the testing stand-in admit rule', () => {
  it('admits a writer only beside permits (other keys)', () => {
    expect(WRITE.kind.admits([], WRITE.state, 'r')).toBe(true);
    expect(WRITE.kind.admits([holding(permits(2))], WRITE.state, 'r')).toBe(true);
    expect(WRITE.kind.admits([holding(READ)], WRITE.state, 'r')).toBe(false);
    expect(WRITE.kind.admits([holding(WRITE)], WRITE.state, 'r')).toBe(false);
  });

  it('admits a reader beside readers and permits, never beside a writer', () => {
    expect(READ.kind.admits([holding(READ), holding(permits(2))], READ.state, 'r')).toBe(true);
    expect(READ.kind.admits([holding(WRITE)], READ.state, 'r')).toBe(false);
  });

  it('admits up to `limit` permits, each on its own slot, and refuses another limit', () => {
    const request = permits(2);
    const first = holding(request);
    const second = holding(request, [first]);
    expect(lockModeOf(second)).toEqual({ mode: 'write', limit: 2 });
    expect([first, second].map((l) => (l.kindState as { slot: number }).slot)).toEqual([0, 1]);
    expect(request.kind.admits([first, holding(WRITE)], request.state, 'r')).toBe(true);
    expect(request.kind.admits([first, second], request.state, 'r')).toBe(false);
    expect(() => permits(3).kind.admits([first], permits(3).state, 'r')).toThrow(RedlockConfigError);
  });
});

describe('lock kinds: the registry', () => {
  it('lists each kind once, and lockModeOf reads the lock itself', () => {
    expect(KINDS.map((k) => k.name)).toEqual(['mutex', 'read', 'permit']);
    expect(lockModeOf(holding(WRITE))).toEqual({ mode: 'write' });
    expect(lockModeOf(holding(READ))).toEqual({ mode: 'read' });
  });

  it('asks the mutex and the read lock for no object per call', () => {
    expect(checkLockMode({})).toBe(checkLockMode(undefined));
    expect(checkLockMode({ mode: 'write' })).toBe(WRITE);
    expect(checkLockMode({ mode: 'read' })).toBe(READ);
  });
});
