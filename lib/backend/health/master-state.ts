import type { DistrustReason } from '../../errors/outcomes.js';
import type { Master } from '../master.js';
import type { InfoProbe } from './info-probe.js';

/**
 * One master as this `Redlock` sees it now, for health checks and inspection (read-only; nothing is
 * sent to compute it). Refreshed on every (re)connect, and by `redlock.refreshMasterStates()`.
 *
 * @example
 * const states = redlock.masterStates();
 * const healthy = states.filter((m) => m.trusted).length >= redlock.quorum;
 * @publicApi
 */
export interface MasterState {
  /** `host:port` (or `unix:path`), never with a password. */
  readonly label: string;
  /** The connection is ready. */
  readonly connected: boolean;
  /** Its votes count now: connected (and answering the last `refreshMasterStates()`), and neither distrusted by the restart guard nor excluded. */
  readonly trusted: boolean;
  /**
   * Milliseconds until its votes count again, 0 when trusted; never `Infinity`. While the time is
   * not known yet (`distrust` is `unknown`), an upper bound: the restart guard's duration (largest
   * TTL plus drift). For `unreachable`, `duplicate` and `evicting-policy`, which no wait cures, the
   * time the guard will still ask for once the cause is fixed (0 with the guard off).
   */
  readonly distrustedFor: number;
  /** Why its votes do not count (undefined when trusted). */
  readonly distrust?: DistrustReason;
  /** The last network error of a connection the library owns (redacted), e.g. `connect ECONNREFUSED 127.0.0.1:1`. */
  readonly lastError?: string;
  /** Round-trip time of the last `INFO` it answered, in ms. */
  readonly roundTripMs?: number;
  /** Its `maxmemory-policy`; undefined until read, or when the server does not tell (see `policyUnreadable`). */
  readonly maxmemoryPolicy?: string;
  /** Its `maxmemory` in bytes (0: no limit). */
  readonly maxmemory?: number;
  /** Why `maxmemoryPolicy` could not be read (for example `CONFIG` disabled and `INFO` lacking it). */
  readonly policyUnreadable?: string;
  /** True when `maxmemoryPolicy` can evict lock keys (anything but `noeviction`). */
  readonly evicting?: boolean;
  /** The server's `run_id`: its identity since it last started. */
  readonly runId?: string;
  /** The server's uptime when last read, in ms. */
  readonly uptimeMs?: number;
  /** `master` or `slave` (a replica cannot take locks). */
  readonly role?: string;
  /**
   * For a cluster node distrusted because one of its shards changed identity: that shard, e.g.
   * `slots 0-8191 at 127.0.0.1:7003 (was 127.0.0.1:7000)`.
   */
  readonly shard?: string;
  /** The label of the `nodes` entry this one duplicates (`distrust` is then `duplicate`). */
  readonly sameServerAs?: string;
  /** How often its `run_id` changed (restarts) and its identity changed with a long uptime or a promotion (failovers). */
  readonly restarts: number;
  readonly failovers: number;
}

/** A vote that does not count, as `voteRound` records it. */
export interface Distrust {
  readonly status: 'restarted' | 'excluded';
  readonly distrust: DistrustReason;
  readonly distrustedFor: number;
  /** For a cluster node: the shard whose change is why. */
  readonly shard?: string;
}

/** What {@link masterStateOf} reads about one master besides its connection and last `INFO`. */
export interface MasterStateInput {
  /** Why its votes do not count, from the monitor (duplicate, evicting policy, restart guard). */
  readonly distrust: Distrust | undefined;
  /** Set when the last `refresh()` got no answer from a connection that stays ready (a hung server). */
  readonly unanswered: string | undefined;
  /** The `nodes` entry this one duplicates. */
  readonly sameServerAs: Master | undefined;
  /** The restart guard's whole duration (0 with the guard off): how long an unreachable master will still wait. */
  readonly guardBound: number;
  readonly restarts: number;
  readonly failovers: number;
  /** The master's last network error, redacted (undefined when it has none). */
  readonly lastError: string | undefined;
}

/**
 * One master's {@link MasterState}: a master counts when it is connected, answered the last probe
 * and nothing distrusts it.
 */
export function masterStateOf(master: Master, p: InfoProbe, input: MasterStateInput): MasterState {
  const connected = master.client.status === 'ready';
  const d = input.distrust;
  const unanswered = connected ? input.unanswered : undefined;
  const distrust: DistrustReason | undefined = !connected || unanswered ? 'unreachable' : d?.distrust;
  return {
    label: master.label,
    connected,
    trusted: connected && !unanswered && d === undefined,
    distrustedFor: d ? d.distrustedFor : connected ? 0 : input.guardBound,
    ...(distrust ? { distrust } : {}),
    ...(d?.shard !== undefined ? { shard: d.shard } : {}),
    ...(input.lastError !== undefined && !connected ? { lastError: input.lastError } : {}),
    ...(unanswered ? { lastError: unanswered } : {}),
    ...(p.roundTripMs !== undefined ? { roundTripMs: p.roundTripMs } : {}),
    ...(p.maxmemoryPolicy !== undefined
      ? { maxmemoryPolicy: p.maxmemoryPolicy, evicting: p.maxmemoryPolicy !== 'noeviction' }
      : {}),
    ...(p.maxmemory !== undefined ? { maxmemory: p.maxmemory } : {}),
    ...(p.policyUnreadable ? { policyUnreadable: p.policyUnreadable } : {}),
    ...(p.runId ? { runId: p.runId } : {}),
    ...(p.uptimeMs !== undefined ? { uptimeMs: p.uptimeMs } : {}),
    ...(p.role ? { role: p.role } : {}),
    ...(input.sameServerAs !== undefined ? { sameServerAs: input.sameServerAs.label } : {}),
    restarts: input.restarts,
    failovers: input.failovers,
  };
}
