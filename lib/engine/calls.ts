import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { Lock, LockIssuer } from '../lock/lock.js';
import { enterChain } from '../lock/lock-context.js';
import { startRenewal } from '../lock/renewal.js';
import type { ResolvedHoldOptions } from '../options/hold-options.js';
import { traceAcquire, tracing } from '../ops/diagnostics.js';
import { settleSplitVotes } from '../waiting/split-votes.js';
import { acquireLock, type AttemptOptions } from './attempt-loop.js';
import { callSpec, type AcquireOptions, type TryAcquireOptions, type UsingOptions } from './call-spec.js';
import type { EngineState } from './engine-state.js';

// What `acquire()`, `tryAcquire()` and `using()` do once their overloads are resolved: check the
// call, acquire through the attempt loop, and apply `onBusy`, hold limits, renewal and reentrancy.

/** The instance a call runs on: built once per `Redlock`, so a call allocates nothing for it. */
export interface CallHost {
  readonly state: EngineState;
  /** The `Redlock`: the issuer of its locks, and the owner of its call chains. */
  readonly issuer: LockIssuer;
  /** Connects when not connected yet. */
  readonly connect: () => Promise<void>;
}

function acquireChecked(host: CallHost, resources: string[], ttl: number, options: AttemptOptions): Promise<Lock> {
  return acquireLock(host.state, host.issuer, host.connect, resources, ttl, options);
}

/** `onBusy: 'skip'` met a busy lock: a debug line, no error (skipping is the point). */
function skipped(host: CallHost, resources: readonly string[], holder = 'another holder'): undefined {
  host.state.logger.debug(
    `Skipped ${resources.map((r) => JSON.stringify(r)).join(', ')}: held by ${holder} (onBusy: 'skip').`,
  );
  return undefined;
}

/**
 * With `onBusy: 'skip'`, a split vote (some master granted, no quorum) is not "busy": try again
 * after a short random delay before skipping (split-votes.ts). `'wait'` retries as configured.
 */
function settlingSplits(
  host: CallHost,
  hold: ResolvedHoldOptions,
  ttl: number,
  signal: AbortSignal | undefined,
  acquire: () => Promise<Lock>,
): () => Promise<Lock> {
  return hold.skip ? () => settleSplitVotes(acquire, ttl, [signal, host.state.closing.signal]) : acquire;
}

/** `Redlock.acquire()`. */
export async function acquireCall(
  host: CallHost,
  resources: string | readonly string[],
  ttl: number | undefined,
  options: AcquireOptions | undefined,
): Promise<Lock | undefined> {
  const { names, ttl: lockTtl, hold, attempt } = callSpec(host.state.options, 'acquire', resources, ttl, options);
  const acquire = settlingSplits(host, hold, lockTtl, options?.signal, () =>
    acquireChecked(host, names, lockTtl, attempt),
  );
  let lock: Lock;
  try {
    lock = await (tracing() ? traceAcquire('acquire', names, lockTtl, options, acquire) : acquire());
  } catch (error) {
    if (hold.skip && error instanceof LockAcquisitionError && error.busy) return skipped(host, error.resources);
    throw error;
  }
  if (options?.autoExtend) lock.renewWith(startRenewal(lock));
  host.state.holdings.limitHold(lock, hold);
  return lock;
}

/** `Redlock.tryAcquire()`: one attempt; null when another holder has the lock. */
export async function tryAcquireCall(
  host: CallHost,
  resources: string | readonly string[],
  ttl: number | undefined,
  options: TryAcquireOptions | undefined,
): Promise<Lock | null> {
  const { names, ttl: lockTtl, attempt } = callSpec(host.state.options, 'tryAcquire', resources, ttl, options);
  const tryOnce = (): Promise<Lock | null> =>
    acquireChecked(host, names, lockTtl, attempt).catch((error: unknown) => {
      if (error instanceof LockAcquisitionError && error.busy) return null;
      throw error;
    });
  return tracing() ? traceAcquire('tryAcquire', names, lockTtl, options, tryOnce) : tryOnce();
}

/** `Redlock.using()`: reentrant; what the call chain holds is not acquired again. */
export async function usingCall<T>(
  host: CallHost,
  resources: string | readonly string[],
  ttl: number | undefined,
  fn: (lock: Lock) => Promise<T> | T,
  options: UsingOptions | undefined,
): Promise<T | undefined> {
  const { state, issuer } = host;
  const {
    names,
    ttl: lockTtl,
    hold,
    attempt,
  } = callSpec(state.options, 'using', resources, ttl, options, () => {
    if (typeof fn !== 'function')
      throw new RedlockConfigError('fn', `\`fn\` must be the function to run under the lock; got ${typeof fn}.`);
  });
  const { kind, state: requested } = attempt.kind;
  // Reentrancy: what the call chain holds is not acquired again; sibling calls take turns on it.
  const entered = enterChain(
    issuer,
    names,
    (name) => state.options.keyPrefix + name,
    (held, name) => kind.covers(held, requested, name),
    { signal: options?.signal, skip: hold.skip },
  );
  const entry = entered instanceof Promise ? await entered : entered;
  if (!entry) return skipped(host, names, 'a reentrant call of this call chain'); // onBusy 'skip'
  let lock: Lock | undefined;
  if (entry.missing.length > 0) {
    const missing = [...entry.missing];
    const acquire = settlingSplits(host, hold, lockTtl, options?.signal, () =>
      acquireChecked(host, missing, lockTtl, attempt),
    );
    try {
      lock = await (tracing() ? traceAcquire('using', missing, lockTtl, options, acquire) : acquire());
    } catch (error) {
      entry.leave();
      if (hold.skip && error instanceof LockAcquisitionError && error.busy) return skipped(host, error.resources);
      throw error;
    }
    lock.renewWith(startRenewal(lock));
    state.holdings.limitHold(lock, hold);
  }
  const own = lock;
  const result = await entry.run(own, fn, async () => {
    if (own) await issuer.releaseLock(own);
  });
  for (const held of entry.inherited) if (held.lostReason) throw held.lostReason;
  if (own?.lostReason) throw own.lostReason;
  return result;
}
