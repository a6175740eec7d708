// The words errors and outcomes speak: what each master answered, and why a vote did not count.
// They sit at the bottom so that errors can describe a round without importing the code that ran it.

/**
 * Why the restart guard does not count a master's votes yet:
 * - `unknown`: it (re)connected and its `INFO` has not been read yet;
 * - `fresh`: a server first seen by this instance, up for less than the largest TTL plus drift (a
 *   brand-new server is indistinguishable from one that restarted empty);
 * - `restarted`: its `run_id` changed since last seen and it has been up less than the guard;
 * - `failover`: another server now answers at that address (`run_id` changed although it has been
 *   up for long), or a replica was promoted (`master_replid` changed): it may lack locks the old
 *   master granted, replication being asynchronous. On a cluster node: a shard's slots are now
 *   served by another node than before (a promoted replica);
 * - `slot-moved` (cluster nodes): slots of a shard are now served by another shard's primary, which
 *   may not hold the keys they had.
 *
 * @example
 * redlock.masterStates().filter((m) => m.distrust === 'failover');
 * @publicApi
 */
export type GuardReason = 'unknown' | 'fresh' | 'restarted' | 'failover' | 'slot-moved';

/**
 * Why a master's votes do not count right now: the restart guard's reasons (`unknown`, `fresh`,
 * `restarted`, `failover`), or
 * - `duplicate`: it is the same Redis server (same `run_id`) as an earlier entry of `nodes`;
 * - `evicting-policy`: its `maxmemory-policy` can evict lock keys and `allowEvictingMasters` is off;
 * - `unreachable`: it is not connected, or (seen by `refreshMasterStates()`) its connection is up but it
 *   did not answer in time: a paused or hung server.
 *
 * @example
 * const down = redlock.masterStates().filter((m) => m.distrust === 'unreachable').map((m) => m.label);
 * @publicApi
 */
export type DistrustReason = GuardReason | 'duplicate' | 'evicting-policy' | 'unreachable';

/**
 * What one master answered to one script call.
 * - `granted`: it did what was asked (set, extended or deleted the keys);
 * - `refused`: for an acquire, another holder has one of the keys; for an extend, the keys no longer
 *   hold this lock's value;
 * - `error`: the command failed (connection refused, closed, script error…);
 * - `timeout`: no answer within `commandTimeout`;
 * - `restarted`: the master answered, but it (re)connected too recently to be trusted (the restart
 *   guard: its uptime is below the largest TTL plus drift, or a failover put another server there),
 *   so its vote did not count; `distrust` says why and `distrustedFor` how long is left;
 * - `excluded`: the master answered, but its vote never counts as things stand: it is the same
 *   server as another node (`distrust: 'duplicate'`) or its `maxmemory-policy` can evict lock keys
 *   (`distrust: 'evicting-policy'`).
 *
 * @example
 * err.outcomes.filter((o) => o.status === 'timeout').map((o) => o.master); // ['10.0.0.3:6379']
 * @publicApi
 */
export interface MasterOutcome {
  /** The master, as `host:port`. */
  readonly master: string;
  readonly status: 'granted' | 'refused' | 'error' | 'timeout' | 'restarted' | 'excluded';
  /** The failure, when `status` is `error`: the network error when the master is unreachable. */
  readonly error?: Error;
  /** Why the vote did not count, when `status` is `restarted` or `excluded`. */
  readonly distrust?: DistrustReason;
  /** Milliseconds until the master counts again (`restarted`), never `Infinity`. */
  readonly distrustedFor?: number;
  /**
   * For a cluster node: the shard whose change is why its vote did not count, e.g.
   * `slots 0-8191 at 127.0.0.1:7003 (was 127.0.0.1:7000)`.
   */
  readonly shard?: string;
}

/** Floor(N/2)+1: the number of masters that must agree. */
export function quorumOf(masterCount: number): number {
  return Math.floor(masterCount / 2) + 1;
}

/** A one-line tally such as "2 granted, 1 refused (held by another holder), 2 timed out". */
export function describeOutcomes(outcomes: readonly (MasterOutcome | undefined)[], refusedMeans: string): string {
  const count = { granted: 0, refused: 0, error: 0, timeout: 0, restarted: 0, excluded: 0, pending: 0 };
  let firstError: Error | undefined;
  let trustedIn = 0;
  const guardReasons = new Set<string>();
  const excludedWhy = new Set<string>();
  for (const o of outcomes) {
    if (!o) count.pending++;
    else {
      count[o.status]++;
      if (o.status === 'error') firstError ??= o.error;
      if (o.status === 'restarted') {
        trustedIn = Math.max(trustedIn, o.distrustedFor ?? 0);
        if (o.distrust)
          guardReasons.add(
            (o.distrust === 'unknown' ? 'just connected' : o.distrust === 'fresh' ? 'fresh server' : o.distrust) +
              (o.shard !== undefined ? ` (${o.shard})` : ''),
          );
      }
      if (o.status === 'excluded' && o.distrust)
        excludedWhy.add(
          o.distrust === 'duplicate' ? 'same server as another node' : 'maxmemory-policy can evict lock keys',
        );
    }
  }
  const parts: string[] = [];
  if (count.granted) parts.push(`${count.granted} granted`);
  if (count.refused) parts.push(`${count.refused} ${refusedMeans}`);
  if (count.error) parts.push(`${count.error} failed${firstError ? ` (${firstError.message})` : ''}`);
  if (count.timeout) parts.push(`${count.timeout} timed out`);
  if (count.restarted) {
    const why = guardReasons.size ? `: ${[...guardReasons].join(', ')}` : '';
    const left = trustedIn > 0 ? `, trusted again in at most ${trustedIn} ms` : '';
    parts.push(`${count.restarted} restarted too recently to count (\`restartGuard\`${why}${left})`);
  }
  if (count.excluded) parts.push(`${count.excluded} excluded (${[...excludedWhy].join(', ') || 'not counted'})`);
  if (count.pending) parts.push(`${count.pending} still pending`);
  return parts.join(', ');
}
