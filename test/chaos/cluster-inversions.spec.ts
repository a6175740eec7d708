/**
 * The cluster phase's verdict on hand-made histories (no Redis): a token inversion is excused only
 * when the fencing counter went back on a fence quorum of clusters between the two holdings (docs/
 * fencing.md: a master that loses its counter is beyond the guarantee); an inversion with the counter
 * lost on one cluster only, or with no failover in between, still fails the guarded pass.
 */
import { describe, expect, it } from '@jest/globals';
import { classifyClusterHistory, type ClusterFailover, type ClusterHolding } from '../../chaos/cluster-inversions.js';
import { clusterProblems, type ClusterPassResult } from '../../chaos/cluster-phase.js';

const R = 'chaos-cluster:guarded:0';

const holding = (client: number, start: number, token: number): ClusterHolding => ({
  resource: R,
  client,
  asked: start - 50,
  start,
  end: start + 100,
  token,
});

/** The shard serving R restarted empty on clusters 0 and 1 at 1 000–1 400 ms: both counters at 0 after. */
const restartEmpty = (lostOn: number[]): ClusterFailover => ({
  n: 4,
  kind: 'restart-empty',
  clusters: [0, 1],
  start: 1_000,
  end: 1_400,
  counters: [0, 1].map((cluster) => ({
    resource: R,
    cluster,
    before: 12,
    after: lostOn.includes(cluster) ? 0 : 12,
  })),
});

const guardedPass = (holdings: ClusterHolding[], failovers: ClusterFailover[]): ClusterPassResult => {
  const verdict = classifyClusterHistory(holdings, failovers, 2);
  return {
    guard: true,
    seconds: 30,
    holdings: holdings.length,
    failovers: failovers.length,
    kinds: {},
    skipped: 0,
    tokenInversions: verdict.inversions.length,
    gaveUp: 0,
    ...verdict,
    failoverLog: failovers,
  };
};

describe('cluster phase: token inversions and lost counters', () => {
  // Holders at 0 (token 11), 500 (12), then after the failover 2 000 (1) and 2 500 (2).
  const history = [holding(0, 0, 11), holding(1, 500, 12), holding(2, 2_000, 1), holding(3, 2_500, 2)];

  it('excuses inversions after the counter went back on a quorum of clusters, naming the failover', () => {
    const verdict = classifyClusterHistory(history, [restartEmpty([0, 1])], 2);
    expect(verdict.violations).toBe(0);
    expect(verdict.inversions).toHaveLength(2); // 1 and 2 both at or below 12
    expect(verdict.unexcusedInversions).toBe(0);
    expect(verdict.inversions[0]).toMatchObject({ failovers: [4], rolledBack: [0, 1], excused: true });
    expect(verdict.inversions[0].cause).toContain('beyond the documented guarantee');
    expect(clusterProblems({ passes: [guardedPass(history, [restartEmpty([0, 1])])], clusters: 3, shards: 3 })).toEqual(
      [],
    );
  });

  it('fails inversions when the counter went back on one cluster only', () => {
    const verdict = classifyClusterHistory(history, [restartEmpty([1])], 2);
    expect(verdict.unexcusedInversions).toBe(2);
    expect(verdict.inversions[0]).toMatchObject({ rolledBack: [1], excused: false });
    expect(clusterProblems({ passes: [guardedPass(history, [restartEmpty([1])])], clusters: 3, shards: 3 })).toEqual([
      'cluster-failover (guard on): 2 unexcused token inversions (0 excused: counters lost on a quorum)',
    ]);
  });

  it('fails inversions with no failover between the two holdings, and counts each kind apart', () => {
    const late = { ...restartEmpty([0, 1]), start: 3_000, end: 3_400 }; // after both holdings
    const verdict = classifyClusterHistory([...history, holding(0, 4_000, 0)], [late], 2);
    expect(verdict.inversions.map((i) => i.excused)).toEqual([false, false, true]);
    expect(verdict.inversions[0].cause).toContain('no failover in between');
    expect(verdict.unexcusedInversions).toBe(2);
  });

  it('takes a failed counter read as no evidence, and still counts overlapping holders', () => {
    const unread: ClusterFailover = {
      ...restartEmpty([0, 1]),
      counters: restartEmpty([0, 1]).counters.map((r) => ({ ...r, after: undefined })),
    };
    const overlapping = [holding(0, 0, 11), { ...holding(1, 50, 12) }, holding(2, 2_000, 1)];
    const verdict = classifyClusterHistory(overlapping, [unread], 2);
    expect(verdict.violations).toBe(1);
    expect(verdict.unexcusedInversions).toBe(1);
  });
});
