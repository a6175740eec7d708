/**
 * The oracle of `leadership-process.spec.ts`: judges the log of the leaders' writes to the fenced
 * register (`fixtures/fenced-register.ts`) against when each term began.
 *
 * A leader checks `isLeader` and writes in one synchronous turn, yet a SIGSTOP between the check
 * and the socket makes the write leave after the resume, possibly inside the next term. Arrival
 * order alone cannot tell that harness window from two leaders at once; the fence and the time of
 * the check can. The claims:
 * - terms and tokens: each term writes with its one token, and no two terms share a token;
 * - the fence: a write is refused exactly when a later term's write arrived before it (a "late"
 *   write), so the accepted writes never interleave terms;
 * - no overlap: every write was checked before any later term (higher token) began. A leader that
 *   believes it leads after the next term began breaks this whether its write is refused or not.
 */
import type { LoggedWrite } from './fixtures/fenced-register.js';

/** A term's start as its leader reported it (wall-clock ms, sent once the term's lock was won). */
export interface TermStart {
  id: string;
  term: number;
  token: number | undefined;
  at: number;
}

/** What the oracle found. */
export interface LeaderWritesVerdict {
  /** The terms that wrote, in token order (`process#term`). */
  terms: string[];
  accepted: number;
  refused: number;
  /** Writes that arrived after a later term's write: what an unfenced log would take for an overlap. */
  late: number;
  /** Every broken claim, in words; empty when the leaders' work never overlapped. */
  problems: string[];
}

const nameOf = (term: { id: string; term: number }): string => `${term.id}#${term.term}`;
const ms = (value: number): string => value.toFixed(1);

/**
 * Judges the writes of a run against the terms' starts.
 *
 * @example
 * const verdict = judgeLeaderWrites(await readFencedLog(oracle, resource), starts);
 * expect(verdict.problems).toEqual([]);
 */
export function judgeLeaderWrites(log: LoggedWrite[], starts: TermStart[]): LeaderWritesVerdict {
  const problems: string[] = [];

  // Terms and tokens.
  const tokenOf = new Map<string, number>();
  const termOfToken = new Map<number, string>();
  const claimToken = (term: string, token: number): void => {
    const known = tokenOf.get(term);
    if (known === undefined) tokenOf.set(term, token);
    else if (known !== token) problems.push(`term ${term} wrote with token ${token}, its token is ${known}`);
    const other = termOfToken.get(token);
    if (other === undefined) termOfToken.set(token, term);
    else if (other !== term) problems.push(`terms ${other} and ${term} have the same token ${token}`);
  };
  for (const start of starts) if (start.token !== undefined) claimToken(nameOf(start), start.token);
  for (const write of log) claimToken(nameOf(write), write.token);

  // The fence, in arrival order.
  let highestArrived = -Infinity;
  let highestAccepted = -Infinity;
  let accepted = 0;
  let late = 0;
  for (const write of log) {
    const term = nameOf(write);
    const isLate = write.token < highestArrived;
    highestArrived = Math.max(highestArrived, write.token);
    if (isLate) late++;
    if (isLate && write.accepted) problems.push(`a late write of ${term} (token ${write.token}) was accepted`);
    if (!isLate && !write.accepted)
      problems.push(`a write of ${term} (token ${write.token}) was refused, none later came before it`);
    if (!write.accepted) continue;
    accepted++;
    if (write.token < highestAccepted)
      problems.push(
        `${term} (token ${write.token}) was accepted after token ${highestAccepted}: the accepted writes interleave terms`,
      );
    highestAccepted = Math.max(highestAccepted, write.token);
  }

  // No overlap: a term began no earlier than its report and its first check, whichever came first.
  const startOf = new Map<string, number>();
  const earliest = (term: string, at: number): void => {
    startOf.set(term, Math.min(at, startOf.get(term) ?? Infinity));
  };
  for (const start of starts) earliest(nameOf(start), start.at);
  for (const write of log) earliest(nameOf(write), write.checkedAt);
  const byToken = [...tokenOf].sort(([, a], [, b]) => a - b);
  const overlaps = new Map<string, { checkedAt: number; began: number; count: number }>();
  for (const write of log) {
    for (const [later, token] of byToken) {
      const began = startOf.get(later);
      if (token <= write.token || began === undefined || write.checkedAt < began) continue;
      const key = `${nameOf(write)} (token ${write.token}) checked isLeader|after ${later} (token ${token}) began`;
      const seen = overlaps.get(key);
      if (seen) seen.count++;
      else overlaps.set(key, { checkedAt: write.checkedAt, began, count: 1 });
    }
  }
  for (const [key, { checkedAt, began, count }] of overlaps) {
    const [writer, later] = key.split('|');
    problems.push(`two leaders at once: ${writer} ${ms(checkedAt - began)} ms ${later} (${count} write(s))`);
  }

  const wrote = new Set(log.map(nameOf));
  return {
    terms: byToken.map(([term]) => term).filter((term) => wrote.has(term)),
    accepted,
    refused: log.length - accepted,
    late,
    problems,
  };
}
