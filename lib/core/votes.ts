import type { Distrust, DistrustReason } from './master-monitor.js';
import { coalesceWrites, explainFailure, type Master } from './master.js';

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

/** Whether master `index`'s vote counts: true, or why not. */
export type TrustCheck = (index: number) => boolean | Distrust | undefined;

/** Floor(N/2)+1: the number of masters that must agree. */
export function quorumOf(masterCount: number): number {
  return Math.floor(masterCount / 2) + 1;
}

/** One script call sent to every master at once, and how the votes are coming in. */
export interface VoteRound {
  /** Resolves as soon as the result is known: true on a quorum of grants, false once a quorum is out of reach. */
  readonly decided: Promise<boolean>;
  /** Resolves when every master has answered or timed out. */
  readonly settled: Promise<void>;
  /** Each master's outcome, in master order; entries are filled in as answers arrive. */
  readonly outcomes: (MasterOutcome | undefined)[];
  /** Each master's raw reply, in master order (undefined until it answers). */
  readonly replies: unknown[];
}

/**
 * Sends `send(master)` to all masters in parallel and counts the votes. It decides as soon as a quorum
 * for, or a blocking minority against, is known, without waiting for a hung master. One timer bounds
 * the whole round: masters that have not answered within `timeoutMs` count as timeouts.
 */
export function voteRound(
  masters: readonly Master[],
  quorum: number,
  timeoutMs: number,
  send: (master: Master) => Promise<unknown>,
  isGranted: (reply: unknown) => boolean,
  trusts?: TrustCheck,
): VoteRound {
  const n = masters.length;
  const outcomes: (MasterOutcome | undefined)[] = new Array(n).fill(undefined);
  const replies: unknown[] = new Array(n).fill(undefined);
  let granted = 0;
  let against = 0;
  let pending = n;
  let decide!: (won: boolean) => void;
  let settle!: () => void;
  let decidedYet = false;
  const decided = new Promise<boolean>((resolve) => (decide = resolve));
  const settled = new Promise<void>((resolve) => (settle = resolve));

  const record = (i: number, outcome: MasterOutcome): void => {
    if (outcomes[i] !== undefined) return; // a late answer after the timeout
    outcomes[i] = outcome;
    pending--;
    if (outcome.status === 'granted') granted++;
    else against++;
    if (!decidedYet && (granted >= quorum || against > n - quorum)) {
      decidedYet = true;
      decide(granted >= quorum);
    }
    if (pending === 0) {
      clearTimeout(timer);
      settle();
    }
  };

  // Timers run before pending I/O in Node's loop: after a stall of this process (a loaded machine),
  // answers that arrived in time are still unread when the timer fires. Read them first
  // (setImmediate runs after the I/O poll), so only masters that really did not answer time out.
  const timer = setTimeout(() => {
    setImmediate(() => {
      for (let i = 0; i < n; i++)
        if (outcomes[i] === undefined) record(i, { master: masters[i].label, status: 'timeout' });
    });
  }, timeoutMs);
  timer.unref();

  for (let i = 0; i < n; i++) {
    const master = masters[i];
    if (master.excluded) {
      const trust = trusts?.(i);
      const distrustedFor = trust && trust !== true ? trust.distrustedFor : 0;
      record(i, { master: master.label, status: 'excluded', distrust: master.excluded, distrustedFor });
      continue;
    }
    let reply: Promise<unknown>;
    try {
      coalesceWrites(master);
      reply = send(master);
    } catch (error) {
      reply = Promise.reject(error);
    }
    reply.then(
      (value) => {
        if (outcomes[i] === undefined) replies[i] = value;
        const trust = trusts ? trusts(i) : true;
        if (trust === false) record(i, { master: master.label, status: 'restarted' });
        else if (trust !== true && trust !== undefined) {
          record(i, {
            master: master.label,
            status: trust.status,
            distrust: trust.distrust,
            distrustedFor: trust.distrustedFor,
            ...(trust.shard !== undefined ? { shard: trust.shard } : {}),
          });
        } else record(i, { master: master.label, status: isGranted(value) ? 'granted' : 'refused' });
      },
      (error: unknown) =>
        record(i, {
          master: master.label,
          status: 'error',
          error: explainFailure(master, error instanceof Error ? error : new Error(String(error))),
        }),
    );
  }
  return { decided, settled, outcomes, replies };
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
