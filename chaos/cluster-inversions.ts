/**
 * The cluster phase's verdict on its history (chaos/cluster-phase.ts): overlapping holdings
 * (violations) and fencing-token inversions, each inversion with its cause.
 *
 * docs/fencing.md guarantees increasing tokens only while the fencing counters survive where the
 * next quorum looks. A failover loses them: a promoted replica may lag behind the counter's latest
 * increments (asynchronous replication), and a shard primary restarted empty has none at all. The
 * harness reads each resource's counter on every failed-over cluster just before the failover and
 * once the shard has a primary again; a counter read lower afterwards went back. An inversion is
 * beyond the guarantee (excused) only when, between the two holdings, the counter went back below
 * the earlier token on at least a fence quorum of clusters: the later grant's quorum could then
 * carry only counters that forgot the earlier token. Any other inversion fails the run, whatever
 * the failovers (fewer lost counters than a quorum, or none at all).
 */

/** One holder of a hot resource, in the harness's clock (`performance.now()`). */
export interface ClusterHolding {
  resource: string;
  client: number;
  /** When `acquire` was called: the earliest moment this holder's fencing write can have run. */
  asked: number;
  /** When `acquire` returned. */
  start: number;
  /** The earlier of the release call and the validity's end. */
  end: number;
  token?: number;
}

/** One resource's fencing counter on one failed-over cluster, read before and after the failover (0: no counter; undefined: the read failed). */
export interface CounterReading {
  resource: string;
  cluster: number;
  before?: number;
  after?: number;
}

/** One failover of the shard serving a hot key on some clusters, with what it did to the counters. */
export interface ClusterFailover {
  /** 1-based, in the order of the phase's log. */
  n: number;
  kind: string;
  clusters: number[];
  start: number;
  end: number;
  counters: CounterReading[];
}

/** Two successive holders of a resource whose tokens did not increase. */
export interface ClusterInversion {
  resource: string;
  earlier: { client: number; start: number; token: number };
  later: { client: number; start: number; token: number };
  /** The failovers between the earlier holder's request and the later holder's grant (their `n`). */
  failovers: number[];
  /** Clusters whose counter for the resource went back below the earlier token in those failovers. */
  rolledBack: number[];
  /** Beyond the documented guarantee: the counter went back on at least a fence quorum of clusters. */
  excused: boolean;
  cause: string;
}

/** The verdict on one pass's history. */
export interface ClusterVerdict {
  violations: number;
  inversions: ClusterInversion[];
  unexcusedInversions: number;
}

/** Whether a reading shows the counter went back below `token` (a failed read proves nothing). */
const wentBackBelow = (r: CounterReading, token: number): boolean =>
  r.before !== undefined && r.after !== undefined && r.after < r.before && r.after < token;

/**
 * Classifies a pass's holdings: violations (a holder granted before the previous one's end) and
 * token inversions, excused only where the counters went back on `quorum` clusters in between.
 *
 * @example
 * const v = classifyClusterHistory(holdings, failovers, 2);
 * if (v.violations || v.unexcusedInversions) fail();
 */
export function classifyClusterHistory(
  holdings: readonly ClusterHolding[],
  failovers: readonly ClusterFailover[],
  quorum: number,
): ClusterVerdict {
  let violations = 0;
  const inversions: ClusterInversion[] = [];
  const resources = [...new Set(holdings.map((h) => h.resource))];
  for (const resource of resources) {
    const list = holdings.filter((h) => h.resource === resource).sort((a, b) => a.start - b.start);
    let reach = -Infinity;
    let last: ClusterHolding | undefined;
    for (const h of list) {
      if (h.start < reach) violations++;
      reach = Math.max(reach, h.end);
      if (h.token === undefined) continue;
      if (last && h.token <= last.token!) inversions.push(inversion(resource, last, h, failovers, quorum));
      if (!last || h.token > last.token!) last = h;
    }
  }
  return { violations, inversions, unexcusedInversions: inversions.filter((i) => !i.excused).length };
}

function inversion(
  resource: string,
  a: ClusterHolding,
  b: ClusterHolding,
  failovers: readonly ClusterFailover[],
  quorum: number,
): ClusterInversion {
  // A's token was written after it asked and before it was granted; B's before B was granted.
  const between = failovers.filter((f) => f.end > a.asked && f.start < b.start);
  const rolledBack = [
    ...new Set(
      between.flatMap((f) =>
        f.counters.filter((r) => r.resource === resource && wentBackBelow(r, a.token!)).map((r) => r.cluster),
      ),
    ),
  ].sort((x, y) => x - y);
  const excused = rolledBack.length >= quorum;
  const names = between.map((f) => `failover ${f.n} (${f.kind}, clusters ${f.clusters.join(', ')})`);
  const readings = between
    .flatMap((f) => f.counters.filter((r) => r.resource === resource).map((r) => ({ f, r })))
    .map(({ f, r }) => `cluster ${r.cluster} ${r.before ?? '?'} → ${r.after ?? '?'} (failover ${f.n})`);
  const cause = excused
    ? `counter went back on clusters ${rolledBack.join(', ')} (${readings.join('; ')}), at least a fence quorum: beyond the documented guarantee`
    : between.length === 0
      ? 'no failover in between: unexpected'
      : `counter went back on ${rolledBack.length ? `cluster ${rolledBack.join(', ')} only` : 'no cluster'}, fewer than a fence quorum of ${quorum}, after ${names.join(', ')}${readings.length ? ` (${readings.join('; ')})` : ''}: unexpected`;
  return {
    resource,
    earlier: { client: a.client, start: a.start, token: a.token! },
    later: { client: b.client, start: b.start, token: b.token! },
    failovers: between.map((f) => f.n),
    rolledBack,
    excused,
    cause,
  };
}
