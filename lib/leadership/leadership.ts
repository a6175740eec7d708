import { setMaxListeners } from 'node:events';
import type { Observable } from 'rxjs';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { lossMarginOf } from '../util/clock.js';
import { leadershipChanges } from './leadership-changes.js';
import type { Lock } from '../lock/lock.js';
import {
  checkCallOptions,
  checkTtl,
  resolveRetryOptions,
  type ResolvedRedlockOptions,
  type RetryDelay,
} from '../options/redlock-options.js';
import { retryWait } from '../waiting/attempt-budget.js';
import { abortableSleep } from '../waiting/sleep.js';

/**
 * Options of `lead(resource, options)`.
 *
 * @example
 * const leadership = redlock.lead('poller', { ttl: 5_000, retryDelay: 500, fencing: true });
 * @publicApi
 */
export interface LeadOptions {
  /** TTL of the leader's lock in ms, renewed every third of it: a crashed leader is replaced after about this long. @default the `ttl` option */
  ttl?: number;
  /** How often, in ms, a standby tries to take over when no release woke it (a crashed or paused leader). @default the `retryDelay` option */
  retryDelay?: number;
  /** Random spread around `retryDelay`, in ms. @default a quarter of `retryDelay` when it is given, else the `retryJitter` option */
  retryJitter?: number;
  /** Issue a fencing token per term (`leadership.fencingToken`), strictly increasing across terms. @default the `fencing` option */
  fencing?: boolean;
  /** Resigns when this signal aborts. */
  signal?: AbortSignal;
  /** Who leads, for operators (`inspect()`, the CLI). @default the `owner` option */
  owner?: string;
}

/** What a `Leadership` needs from the `Redlock` it campaigns on. @internal */
export interface Campaigner {
  readonly options: ResolvedRedlockOptions;
  acquire(
    resource: string,
    ttl: number,
    options: {
      retryCount: number;
      retryDelay: number | RetryDelay;
      retryJitter: number;
      fencing: boolean;
      autoExtend: true;
      signal: AbortSignal;
      owner?: string;
    },
  ): Promise<Lock>;
  /** Forgets a leadership that has resigned. */
  forgetLeadership(leadership: Leadership): void;
}

/** Settings of one campaign, validated. @internal */
export interface CampaignSettings {
  ttl: number;
  retryDelay: number | RetryDelay;
  retryJitter: number;
  fencing: boolean;
  signal: AbortSignal | undefined;
  owner: string | undefined;
}

/** Validates `lead()` options against the Redlock's; throws `RedlockConfigError` naming the option. @internal */
export function resolveLeadOptions(base: ResolvedRedlockOptions, options: LeadOptions | undefined): CampaignSettings {
  checkCallOptions(options);
  const ttl = checkTtl(options?.ttl ?? base.ttl);
  const retryDelay = options?.retryDelay;
  const retry = resolveRetryOptions(base, {
    retryDelay,
    retryJitter:
      options?.retryJitter ??
      (typeof retryDelay === 'number' && Number.isSafeInteger(retryDelay) ? Math.floor(retryDelay / 4) : undefined),
  });
  return {
    ttl,
    retryDelay: retry.retryDelay,
    retryJitter: retry.retryJitter,
    fencing: options?.fencing ?? base.fencing,
    owner: options?.owner,
    signal: options?.signal,
  };
}

const notLeader = (resource: string, why: string): AbortSignal =>
  AbortSignal.abort(LockLostError.notLeader([resource], why));

/**
 * A campaign for leadership of one resource: a renewable lock that this instance tries to win, keeps
 * while it can renew it, and tries to win again after losing it, until `resign()`. At most one
 * instance leads a resource at any moment (as far as Redlock's timing assumptions hold). Get one
 * from `redlock.lead()` / `RedlockService.lead()`, or use `@LeaderOnly` on a method.
 *
 * - `isLeader` is true only during a term, and turns false before the term's lock could lapse.
 * - `signal` belongs to the current term: it aborts with `LockLostError` when the term ends (lost,
 *   resigned or shut down). A new term has a new signal. While standing by it is an aborted signal.
 * - `changes` emits the current state on subscription, then every change; it completes on resign.
 *
 * @example
 * await using leadership = redlock.lead('outbox-poller', { ttl: 5_000 });
 * leadership.changes.subscribe((leading) => (leading ? poller.start(leadership.signal) : poller.stop()));
 * @publicApi
 */
export class Leadership implements AsyncDisposable {
  readonly #campaigner: Campaigner;
  readonly #settings: CampaignSettings;
  readonly #stop = new AbortController();
  readonly #listeners = new Set<(leading: boolean) => void>();
  #lock: Lock | undefined;
  #signal: AbortSignal;
  #terms = 0;
  #campaign: Promise<void>;
  #resigned: Promise<void> | undefined;
  #changes: Observable<boolean> | undefined;
  readonly #completers = new Set<() => void>();
  #ended = false;
  /** The state last emitted to `changes`. */
  #leading = false;

  /** Starts a campaign for `redlock.lead()`. @internal */
  static create(campaigner: Campaigner, resource: string, settings: CampaignSettings): Leadership {
    return new Leadership(campaigner, resource, settings);
  }

  /** Campaigns come from `redlock.lead()`, never from application code. */
  private constructor(
    campaigner: Campaigner,
    /** The resource led (without the key prefix). */
    readonly resource: string,
    settings: CampaignSettings,
  ) {
    this.#campaigner = campaigner;
    this.#settings = settings;
    this.#signal = notLeader(resource, 'the campaign has not won a term yet');
    setMaxListeners(0, this.#stop.signal);
    if (settings.signal) {
      if (settings.signal.aborted) this.#stop.abort(settings.signal.reason);
      else settings.signal.addEventListener('abort', () => void this.resign(), { once: true });
    }
    this.#campaign = this.campaign();
  }

  /** True while this instance leads: a term is on and its lock is valid for more than the loss margin. */
  get isLeader(): boolean {
    const lock = this.#lock;
    if (!lock || this.#signal.aborted) return false;
    if (lock.validity <= lossMarginOf(lock.ttl)) {
      lock.armLossTimer(); // the timer is due (the event loop was late): end the term now
      return false;
    }
    return true;
  }

  /** The current term's signal: aborts with `LockLostError` when the term ends. Already aborted while standing by. */
  get signal(): AbortSignal {
    return this.#signal;
  }

  /** The current term's fencing token (with `fencing`), strictly increasing from term to term; undefined while standing by. */
  get fencingToken(): number | undefined {
    return this.isLeader ? this.#lock!.fencingToken : undefined;
  }

  /** How many terms this campaign has won so far. */
  get terms(): number {
    return this.#terms;
  }

  /** True once `resign()` was called (or the Redlock closed, or the `signal` option aborted). */
  get resigned(): boolean {
    return this.#stop.signal.aborted;
  }

  /** Emits the current state on subscription, then `true`/`false` on every change; completes once resigned. */
  get changes(): Observable<boolean> {
    return (this.#changes ??= leadershipChanges(this));
  }

  /** Subscribes to changes; returns the unsubscribe function. @internal (use `changes`) */
  onChange(listener: (leading: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Stops campaigning and, if leading, ends the term (its signal aborts) and releases the lock on
   * every master, which wakes standbys elsewhere at once. Resolves once released. Idempotent.
   */
  resign(): Promise<void> {
    if (!this.#stop.signal.aborted) {
      this.#stop.abort(LockLostError.resigned([this.resource]));
    }
    return (this.#resigned ??= this.#campaign.finally(() => this.#finish()));
  }

  /** `await using leadership = redlock.lead(…)` resigns at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.resign();
  }

  /** Registers a function called once the campaign has ended (at once if it has). @internal */
  onEnd(complete: () => void): () => void {
    if (this.#ended) {
      complete();
      return () => undefined;
    }
    this.#completers.add(complete);
    return () => this.#completers.delete(complete);
  }

  #finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#campaigner.forgetLeadership(this);
    for (const complete of [...this.#completers]) complete();
    this.#completers.clear();
    this.#listeners.clear();
  }

  #emit(leading: boolean): void {
    if (this.#leading === leading) return;
    this.#leading = leading;
    for (const listener of [...this.#listeners]) {
      try {
        listener(leading);
      } catch {
        /* a subscriber's error must not stop the campaign */
      }
    }
  }

  private async campaign(): Promise<void> {
    const stop = this.#stop.signal;
    const { ttl, retryDelay, retryJitter, fencing, owner } = this.#settings;
    while (!stop.aborted) {
      let lock: Lock;
      try {
        lock = await this.#campaigner.acquire(this.resource, ttl, {
          retryCount: Infinity,
          retryDelay,
          retryJitter,
          fencing,
          autoExtend: true,
          signal: stop,
          ...(owner === undefined ? {} : { owner }),
        });
      } catch (error) {
        if (stop.aborted) break;
        if (!(error instanceof LockAcquisitionError)) {
          // The Redlock closed (or something else no retry can fix): the campaign ends here.
          this.#stop.abort(error);
          void this.resign();
          break;
        }
        // An `acquireTimeout` on the Redlock ended one round of attempts: keep campaigning.
        try {
          await abortableSleep(retryWait({ retryDelay, retryJitter }, 1), [stop]);
        } catch {
          break;
        }
        continue;
      }
      await this.serveTerm(lock);
    }
  }

  /** Leads until the lock is lost or the campaign stops, then releases the lock. */
  private async serveTerm(lock: Lock): Promise<void> {
    const stop = this.#stop.signal;
    const term = new AbortController();
    this.#lock = lock;
    this.#signal = term.signal;
    this.#terms++;
    const lockSignal = lock.signal;
    await new Promise<void>((resolve) => {
      const end = (reason: unknown): void => {
        lockSignal.removeEventListener('abort', onLost);
        stop.removeEventListener('abort', onStop);
        if (!term.signal.aborted) term.abort(reason);
        resolve();
      };
      const onLost = (): void => end(lockSignal.reason);
      const onStop = (): void =>
        end(
          stop.reason instanceof LockLostError
            ? stop.reason
            : new LockLostError([this.resource], 'resigned', 'the campaign stopped', { cause: stop.reason }),
        );
      if (lockSignal.aborted) return onLost();
      if (stop.aborted) return onStop();
      lockSignal.addEventListener('abort', onLost, { once: true });
      stop.addEventListener('abort', onStop, { once: true });
      this.#emit(true);
    });
    this.#lock = undefined;
    this.#emit(false);
    // Resigned or lost: delete what is left of this term's keys, which also wakes standbys elsewhere.
    await lock.release();
  }
}
