/**
 * The oracle of the leadership process test tells a late write (checked in its term, sent after a
 * pause) from two leaders at once (checked after the next term began), on hand-made logs.
 */
import { describe, expect, it } from '@jest/globals';
import type { LoggedWrite } from './fixtures/fenced-register.js';
import { judgeLeaderWrites, type TermStart } from './leader-writes-oracle.js';

const write = (id: string, token: number, checkedAt: number, accepted = true): LoggedWrite => ({
  id,
  term: 1,
  token,
  checkedAt,
  accepted,
  arrivedAt: checkedAt + 1,
});

/** Term a#1 (token 7) began at 0, term b#1 (token 8) at 1000. */
const starts: TermStart[] = [
  { id: 'a', term: 1, token: 7, at: 0 },
  { id: 'b', term: 1, token: 8, at: 1_000 },
];

describe('the oracle of the leaders’ writes', () => {
  it('a handover: the writes of each term in order, nothing late', () => {
    const verdict = judgeLeaderWrites([write('a', 7, 10), write('a', 7, 20), write('b', 8, 1_010)], starts);
    expect(verdict).toEqual({ terms: ['a#1', 'b#1'], accepted: 3, refused: 0, late: 0, problems: [] });
  });

  it('a write checked in its term that arrived after the next term wrote is late and refused, not an overlap', () => {
    const log = [write('a', 7, 10), write('b', 8, 1_010), write('a', 7, 990, false)];
    expect(judgeLeaderWrites(log, starts)).toEqual({
      terms: ['a#1', 'b#1'],
      accepted: 2,
      refused: 1,
      late: 1,
      problems: [],
    });
  });

  it('a write checked after the next term began is two leaders at once, refused or not', () => {
    const refused = judgeLeaderWrites([write('a', 7, 10), write('b', 8, 1_010), write('a', 7, 1_020, false)], starts);
    expect(refused.problems).toEqual([
      'two leaders at once: a#1 (token 7) checked isLeader 20.0 ms after b#1 (token 8) began (1 write(s))',
    ]);
    const beforeNextWrote = judgeLeaderWrites([write('a', 7, 10), write('a', 7, 1_002), write('b', 8, 1_010)], starts);
    expect(beforeNextWrote.late).toBe(0);
    expect(beforeNextWrote.problems).toEqual([
      'two leaders at once: a#1 (token 7) checked isLeader 2.0 ms after b#1 (token 8) began (1 write(s))',
    ]);
  });

  it('a term whose start was not reported began no later than its first check', () => {
    const verdict = judgeLeaderWrites([write('b', 8, 500), write('a', 7, 600, false)], starts.slice(0, 1));
    expect(verdict.problems).toEqual([
      'two leaders at once: a#1 (token 7) checked isLeader 100.0 ms after b#1 (token 8) began (1 write(s))',
    ]);
  });

  it('a register that takes a late write, or two terms with one token, are reported', () => {
    expect(judgeLeaderWrites([write('b', 8, 1_010), write('a', 7, 20)], starts).problems).toEqual([
      'a late write of a#1 (token 7) was accepted',
      'a#1 (token 7) was accepted after token 8: the accepted writes interleave terms',
    ]);
    const shared = judgeLeaderWrites([write('a', 7, 10), write('b', 7, 1_010)], starts.slice(0, 1));
    expect(shared.problems).toEqual(['terms a#1 and b#1 have the same token 7']);
  });
});
