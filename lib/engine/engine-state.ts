import { setMaxListeners } from 'node:events';
import type { RoundContext } from '../kinds/acquire-request.js';
import { driftOf } from '../util/clock.js';
import { openMasters, type Master } from '../backend/master.js';
import { resolveOptions, type RedlockOptions, type ResolvedRedlockOptions } from '../options/redlock-options.js';
import { RestartGuard } from '../backend/health/restart-guard.js';
import { resolveLogger, type RedlockLogger } from '../util/logger.js';
import { MasterMonitor } from '../backend/health/master-monitor.js';
import { secretsOf } from '../util/redact.js';
import { quorumOf } from '../errors/outcomes.js';
import { Wakeups } from '../waiting/wakeups.js';
import type { Lock } from '../lock/lock.js';
import { Holdings } from './holdings.js';
import { Attempts } from './in-flight.js';
import { Revocations } from './revocations.js';
import { LockLostError } from '../errors/lock-lost.error.js';

/**
 * What one `Redlock` instance knows and owns, shared by its parts: the masters and who counts
 * among them, the options, the locks it holds, the attempts under way, and the signal `close()`
 * aborts. The façade (`redlock.ts`) builds it; the attempt loop and the lifecycle read it.
 */
export class EngineState {
  /** The options in force, defaults filled in. */
  readonly options: ResolvedRedlockOptions;
  /** How many masters must agree: floor(N/2)+1. */
  readonly quorum: number;
  readonly masters: readonly Master[];
  readonly wakeups: Wakeups;
  readonly guard: RestartGuard | undefined;
  readonly monitor: MasterMonitor;
  readonly logger: Required<RedlockLogger>;
  /** True, or why master `i`'s vote does not count now. */
  readonly trusts: (index: number) => true | NonNullable<ReturnType<MasterMonitor['distrust']>>;
  /** Aborted by `close()`: every wait of this instance listens to it. */
  readonly closing = new AbortController();
  /** The locks held here. */
  readonly holdings: Holdings;
  /** Hears revocations of the locks held here (revocations.ts). */
  readonly revocations: Revocations;
  /** Attempts, clean-ups and acquisitions under way: what `close()` waits for. */
  readonly attempts = new Attempts();
  connected = false;
  /** The largest TTL this instance has used: how long the restart guard distrusts a fresh master. */
  #largestTtl: number;
  #lastContext: RoundContext | undefined;

  /** @throws RedlockConfigError naming the option at fault; nothing is connected or written then. */
  constructor(options: RedlockOptions) {
    this.options = resolveOptions(options);
    this.masters = openMasters(this.options.nodes);
    this.quorum = quorumOf(this.masters.length);
    // A handover message counts like a vote: from a trusted master, on a connection that reached the server the guard vetted.
    const unreadable = new Set<number>();
    this.wakeups = new Wakeups(
      this.masters,
      this.options.wakeOnRelease,
      (i, runId) => this.trusts(i) === true && (!this.guard || this.monitor.runIdOf(i) === runId),
      (i) => {
        if (!this.guard || unreadable.has(i)) return;
        unreadable.add(i);
        this.logger.warn(
          `${this.masters[i].label}: INFO is refused on the subscriber connection, so its handover messages are ignored and waiters there wait for their retryDelay (allow INFO to this user)`,
        );
      },
    );
    this.revocations = new Revocations(
      this.masters,
      this.wakeups,
      () => this.holdings.all(),
      (lock, why) => this.lockRevoked(lock, why),
      this.options.wakeOnRelease,
      this.options.commandTimeout,
    );
    this.holdings = new Holdings(
      () => this.revocations.holding(),
      () => this.revocations.idle(),
    );
    this.#largestTtl = this.options.ttl;
    const guard = this.options.restartGuard;
    if (guard) {
      this.guard = new RestartGuard(this.masters.length, () => {
        const ttl = Math.max(guard.largestTtl ?? 0, this.#largestTtl);
        return ttl + driftOf(ttl, this.options.driftFactor);
      });
    }
    this.logger = resolveLogger(this.options.logger);
    this.monitor = new MasterMonitor(this.masters, this.guard, {
      allowEvictingMasters: this.options.allowEvictingMasters,
      probeTimeout: Math.max(this.options.commandTimeout, this.options.connectTimeout),
      logger: this.logger,
      secrets: secretsOf(this.options.nodes),
    });
    this.trusts = (i) => this.monitor.distrust(i) ?? true;
    setMaxListeners(0, this.closing.signal); // every acquisition waiting to retry listens to it
  }

  /** A lock held here was revoked: lost at once, and this process's waiters for its keys move on. */
  private lockRevoked(lock: Lock, why: string): void {
    lock.markLost(LockLostError.revoked(lock.resources, why));
    this.holdings.untrack(lock);
    for (const key of lock.keys) this.wakeups.released(key, lock.value);
  }

  /** The largest TTL this instance has used. */
  get largestTtl(): number {
    return this.#largestTtl;
  }

  /** Records a TTL in use: the restart guard distrusts a fresh master for the largest one. */
  noteTtl(ttl: number): void {
    if (ttl > this.#largestTtl) this.#largestTtl = ttl;
  }

  /** The masters and bounds a round runs under, with `timeout` per master (read-only: the last one is reused). */
  roundContext(timeout: number): RoundContext {
    const last = this.#lastContext;
    if (last?.timeout === timeout) return last;
    return (this.#lastContext = Object.freeze({
      masters: this.masters,
      quorum: this.quorum,
      timeout,
      fencingQuorum: this.options.fencingQuorum,
      trusts: this.trusts,
    }));
  }
}
