import { LockExtensionError } from '../errors/lock-extension.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { quote } from '../errors/quote.js';
import { RedlockClosedError } from '../errors/redlock-closed.error.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { commandTimeoutFor, now, validUntilOf } from '../util/clock.js';
import { Lock, type LockIssuer } from '../lock/lock.js';
import { checkLockHandle } from './handle.js';
import type { EngineState } from './engine-state.js';
import { kindOf } from '../kinds/lock-kind.js';
import type { LockHandle } from '../lock/lock-handle.js';
import { checkTtl } from '../options/redlock-options.js';
import { startRenewal } from '../lock/renewal.js';
import { describeOutcomes, type MasterOutcome } from '../errors/outcomes.js';
import type { VoteRound } from '../quorum/vote-round.js';

/**
 * Options of `adopt(handle, options?)`.
 *
 * @example
 * const lock = await redlock.adopt(handle, { autoExtend: true }); // renewed until released, as acquire({ autoExtend })
 * @publicApi
 */
export interface AdoptOptions {
  /** Renew the adopted lock automatically until it is released (as `acquire()` with `autoExtend`). @default false */
  autoExtend?: boolean;
  /** The TTL the adoption (and later extensions) set, ms. @default the handle's `ttl` */
  ttl?: number;
}

const ADOPT_OPTIONS: readonly string[] = ['autoExtend', 'ttl'];

/** What an adoption needs from the `Redlock` it happens on. */
export interface AdoptHost {
  readonly keyPrefix: string;
  readonly driftFactor: number;
  readonly commandTimeout: number;
  /** The masters' labels, in `nodes` order. */
  readonly masters: readonly string[];
  readonly quorum: number;
  /** The instance the adopted lock extends and releases through. */
  readonly issuer: LockIssuer;
  /** Aborted once the instance is closed. */
  readonly closed: AbortSignal;
  /** Connects when not connected yet. */
  ready(): Promise<void>;
  /** Records a TTL in use: the restart guard distrusts fresh masters for the largest. */
  useTtl(ttl: number): void;
  /** The compare-and-pexpire round of `lock`'s kind on every master. */
  extendRound(lock: Lock, ttl: number, timeout: number): VoteRound;
  /** Takes an adopted lock into the instance's care (released by `close()`), and repairs the quorum after `round`. */
  hold(lock: Lock, round: VoteRound, ttl: number, timeout: number): void;
}

/** Refuses malformed `adopt()` options, naming the option; fills in the defaults. */
export function checkAdoptOptions(
  options: AdoptOptions | undefined,
  handleTtl: number,
): { autoExtend: boolean; ttl: number } {
  if (options === undefined) return { autoExtend: false, ttl: handleTtl };
  if (options === null || typeof options !== 'object') {
    throw new RedlockConfigError(
      'options',
      `\`options\` must be an object; got ${options === null ? 'null' : typeof options}.`,
    );
  }
  for (const key of Object.keys(options)) {
    if (!ADOPT_OPTIONS.includes(key)) {
      throw new RedlockConfigError(key, `\`${key}\` is not an option of adopt(); it takes \`autoExtend\` and \`ttl\`.`);
    }
  }
  const { autoExtend, ttl } = options;
  if (autoExtend !== undefined && typeof autoExtend !== 'boolean') {
    throw new RedlockConfigError('autoExtend', `\`autoExtend\` must be true or false; got ${typeof autoExtend}.`);
  }
  return { autoExtend: autoExtend === true, ttl: ttl === undefined ? handleTtl : checkTtl(ttl) };
}

/**
 * Rebuilds, on `host`, the lock that `handle` describes (docs/portable-handles.md). The handle is
 * checked first (nothing is sent for a wrong one). Then one compare-and-pexpire round of the lock's
 * kind, counted like any extension (trusted masters only): its quorum, measured from when it was
 * sent, is the adopted lock's validity; the handle's own timing is never trusted.
 *
 * @throws RedlockConfigError naming the handle's field (`handle.value`, …) or the option at fault.
 * @throws LockLostError (`reason: 'lapsed'`) when a majority of masters no longer hold the lock.
 * @throws LockExtensionError when too few masters answered to tell.
 */
export async function adoptLock(host: AdoptHost, handle: unknown, options: AdoptOptions | undefined): Promise<Lock> {
  if (handle instanceof Lock) {
    throw new RedlockConfigError(
      'handle',
      '`handle` must be what `lock.toHandle()` returned, not the `Lock` itself: a `Lock` does not travel between processes.',
    );
  }
  const checked = checkLockHandle(handle, host.keyPrefix);
  const { autoExtend, ttl } = checkAdoptOptions(options, checked.ttl);
  if (host.closed.aborted) throw new RedlockClosedError();
  await host.ready();
  host.useTtl(ttl);
  const { resources, value, kind, fencingToken } = checked;
  const keys = resources.map((r) => host.keyPrefix + r);
  // Not valid until the round below says so.
  const lock = Lock.create(host.issuer, kind.kind, kind.state, resources, keys, value, ttl, -Infinity, fencingToken);
  const timeout = commandTimeoutFor(ttl, host.commandTimeout);
  const start = now();
  const round = host.extendRound(lock, ttl, timeout);
  const won = await round.decided;
  const validUntil = validUntilOf(start, ttl, host.driftFactor);
  if (won && validUntil > now()) {
    // Closed meanwhile: the lock stays with the handle's other holders, nothing here may hold it.
    if (host.closed.aborted) throw new RedlockClosedError();
    lock.markExtended(validUntil, ttl);
    host.hold(lock, round, ttl, timeout);
    if (autoExtend) lock.renewWith(startRenewal(lock));
    return lock;
  }
  // Lost: count every answer (within the command timeout) before telling "gone" from "unknown".
  await round.settled;
  const outcomes: MasterOutcome[] = round.outcomes.map(
    (o, i) => o ?? { master: host.masters[i], status: 'timeout' as const },
  );
  const refused = outcomes.filter((o) => o.status === 'refused').length;
  const n = host.masters.length;
  if (refused > n - host.quorum) {
    throw new LockLostError(
      resources,
      'lapsed',
      `${refused} of ${n} masters no longer hold it, so it cannot be adopted`,
    );
  }
  throw new LockExtensionError(
    resources,
    outcomes,
    won
      ? `Could not adopt the lock on ${quote(resources)}: a quorum answered, but only after its TTL of ${ttl} ms; adopt it with a larger \`ttl\`.`
      : `Could not adopt the lock on ${quote(resources)}: ${describeOutcomes(outcomes, 'no longer holding it')}. Whether it is still held is unknown: try again.`,
  );
}

/**
 * Adopts `handle` on the instance whose state is `state`: the lock extends and releases through
 * `issuer`, is tracked (so `close()` releases it), and its exclusive keys are repaired after the
 * adoption round as after any extension that won.
 */
export function adoptOn(
  state: EngineState,
  issuer: LockIssuer,
  connect: () => Promise<void>,
  handle: LockHandle,
  options?: AdoptOptions,
): Promise<Lock> {
  const { keyPrefix, driftFactor, commandTimeout } = state.options;
  return adoptLock(
    {
      keyPrefix,
      driftFactor,
      commandTimeout,
      masters: state.masters.map((m) => m.label),
      quorum: state.quorum,
      issuer,
      closed: state.closing.signal,
      ready: () => (state.connected ? Promise.resolve() : connect()),
      useTtl: (ttl) => state.noteTtl(ttl),
      extendRound: (lock, ttl, timeout) => kindOf(lock).extend(state, lock, ttl, timeout),
      hold: (lock, round, ttl, timeout) => {
        state.holdings.track(lock);
        // The adoption round is an extension that won: repair the lock as after any (the mutex's keys).
        const { repair } = kindOf(lock);
        if (repair) void round.settled.then(() => repair(state, lock, ttl, timeout, round.replies));
      },
    },
    handle,
    options,
  );
}
