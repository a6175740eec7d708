import type { GuardReason } from '../../errors/outcomes.js';
import { now } from '../../util/clock.js';

/** How a master's identity compares with what was last seen at that node. */
export type IdentityChange = 'first' | 'same' | 'restarted' | 'failover' | 'slot-moved';

/**
 * Redlock's "delayed restart" rule, enforced by the client, extended to failovers. A master that
 * restarted without its data, or a replica promoted in its place, can grant a lock that another
 * client still holds there. So whenever a connection to a master becomes ready (first connect or
 * reconnect), that master's votes stop counting until its `INFO` shows it has been up longer than
 * the largest TTL plus drift: by then every key it could have forgotten has expired anyway. A new
 * server identity with a long uptime (a failover) is distrusted for the whole guard from the moment
 * it is seen. The `MasterMonitor` feeds it what `INFO` says.
 */
export class RestartGuard {
  /** Monotonic instant until which each master's votes do not count (0: trusted). */
  readonly #until: number[];
  readonly #why: (GuardReason | undefined)[];
  /** Masters whose `INFO` has not been read since they (re)connected. */
  readonly #pending: boolean[];
  /**
   * The latest instant each master's server (as last identified) can have started, on the monotonic
   * clock: the earliest `answered - uptime` over every `INFO` of that same server (`answered`: when the
   * reply arrived, after the server measured its uptime, so never earlier than the real start). Redis reports uptime in
   * whole seconds (read one second short), so one reading can undercount by up to two seconds; the
   * best reading so far stands, and a later, coarser one never distrusts a master again. After a
   * failover it is the moment the new server was seen, whatever its uptime.
   */
  readonly #startedBy: number[];
  /** Whether `#startedBy` is the moment a failover was seen (not an uptime reading). */
  readonly #seenAt: boolean[];
  /** What was seen then: `failover` or `slot-moved`. */
  readonly #seenWhy: GuardReason[];
  /** How many times each master was seen to restart (its run_id changed). */
  readonly restarts: number[];
  /** How many times a failover was seen at each master (new server with a long uptime, a promotion, or a cluster slot moved). */
  readonly failovers: number[];

  constructor(
    count: number,
    /** The guard duration: the largest TTL plus its drift. */
    readonly guardMs: () => number,
  ) {
    this.#until = new Array<number>(count).fill(0);
    this.#why = new Array<GuardReason | undefined>(count).fill(undefined);
    this.#pending = new Array<boolean>(count).fill(false);
    this.#startedBy = new Array<number>(count).fill(Infinity);
    this.#seenAt = new Array<boolean>(count).fill(false);
    this.#seenWhy = new Array<GuardReason>(count).fill('failover');
    this.restarts = new Array<number>(count).fill(0);
    this.failovers = new Array<number>(count).fill(0);
  }

  /** Master `i`'s connection just became ready: distrusted until its `INFO` is read. */
  connecting(i: number, at = now()): void {
    this.#pending[i] = true;
    this.#until[i] = Math.max(this.#until[i], at + this.guardMs());
    this.#why[i] = 'unknown';
  }

  /** What `INFO` (its reply received at `answered`) said about master `i`. */
  observed(i: number, change: IdentityChange, uptimeMs: number, answered: number): void {
    const guard = this.guardMs();
    let until: number;
    let why: GuardReason;
    if (change === 'failover' || change === 'slot-moved' || (change === 'restarted' && uptimeMs >= guard)) {
      // another server's data, whatever its uptime: counted as if it started now
      this.#startedBy[i] = answered;
      this.#seenAt[i] = true;
      until = answered + guard;
      why = change === 'slot-moved' ? 'slot-moved' : 'failover';
      this.#seenWhy[i] = why;
      this.failovers[i]++;
    } else {
      const startedBy = answered - uptimeMs;
      if (change !== 'same') {
        this.#startedBy[i] = startedBy;
        this.#seenAt[i] = false;
      } else if (!this.#seenAt[i]) this.#startedBy[i] = Math.min(this.#startedBy[i], startedBy);
      until = this.#startedBy[i] + guard <= answered ? 0 : this.#startedBy[i] + guard;
      const before = this.#why[i];
      why =
        change === 'restarted'
          ? 'restarted'
          : change === 'same' && before !== undefined && before !== 'unknown'
            ? before // the same server, still distrusted for the reason it was
            : this.#seenAt[i]
              ? this.#seenWhy[i]
              : 'fresh';
      if (change === 'restarted') this.restarts[i]++;
    }
    // A pending placeholder is replaced; a distrust already decided is never shortened.
    const decided = this.#pending[i] ? 0 : this.#until[i] > now() ? this.#until[i] : 0;
    this.#pending[i] = false;
    if (decided > until) return;
    this.#until[i] = until;
    this.#why[i] = until === 0 ? undefined : why;
  }

  /** True when master `i`'s votes count. */
  trusts(i: number): boolean {
    if (this.#pending[i]) return false;
    const until = this.#until[i];
    if (until === 0) return true;
    if (until > now()) return false;
    this.#until[i] = 0;
    this.#why[i] = undefined;
    return true;
  }

  /**
   * Milliseconds until master `i` is trusted again (0 when it is). While its `INFO` is unknown this
   * is an upper bound (the guard counted from the connect), and never more than the guard: never
   * `Infinity`.
   */
  distrustedFor(i: number): number {
    if (this.trusts(i)) return 0;
    const left = Math.ceil(this.#until[i] - now());
    return left > 0 ? Math.min(left, Math.ceil(this.guardMs())) : Math.ceil(this.guardMs());
  }

  /** Why master `i` is not trusted (undefined when it is). */
  why(i: number): GuardReason | undefined {
    return this.trusts(i) ? undefined : (this.#why[i] ?? 'unknown');
  }
}
