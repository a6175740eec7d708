import { LockExtensionError } from '../errors/lock-extension.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { RedlockClosedError } from '../errors/redlock-closed.error.js';
import type { Lock } from '../lock/lock.js';
import { checkTtl } from '../options/redlock-options.js';
import { noteOutcomes, publishLost } from '../ops/diagnostics.js';
import { kindOf } from '../kinds/lock-kind.js';
import { commandTimeoutFor, now, validUntilOf } from '../util/clock.js';
import type { EngineState } from './engine-state.js';
import type { HoldLimits } from './holdings.js';
import { settledOutcomes } from './in-flight.js';

// What happens to a lock after it is won: extension, release (with `minHold`), loss.

/** Ends of a lock that are not news to an operator: the holder itself released or resigned. */
const QUIET_LOSSES = new Set<string>(['released', 'resigned', 'not-leader']);

/** Extends a held lock to `ttl` on a quorum; marks it lost when a majority no longer holds it. */
export async function extendLock(state: EngineState, lock: Lock, ttl: number): Promise<void> {
  checkTtl(ttl);
  if (lock.lostReason) throw lock.lostReason;
  if (!lock.isHeld) {
    const reason = lock.releaseRequested
      ? LockLostError.released(lock.resources)
      : LockLostError.lapsed(lock.resources);
    lock.markLost(reason);
    throw reason;
  }
  state.noteTtl(ttl);
  const timeout = commandTimeoutFor(ttl, state.options.commandTimeout);
  const start = now();
  const kind = kindOf(lock);
  const round = kind.extend(state, lock, ttl, timeout);
  noteOutcomes(round.outcomes);
  const won = await round.decided;
  const validUntil = validUntilOf(start, ttl, state.options.driftFactor);
  if (won && lock.isHeld && validUntil > now()) {
    lock.markExtended(validUntil, ttl);
    const { repair } = kind;
    if (repair) void round.settled.then(() => repair(state, lock, ttl, timeout, round.replies));
    return;
  }
  const n = state.masters.length;
  const refused = round.outcomes.filter((o) => o?.status === 'refused').length;
  if (refused > n - state.quorum || !lock.isHeld) {
    let reason =
      refused > n - state.quorum
        ? LockLostError.majorityLost(lock.resources, refused, n)
        : LockLostError.notRenewed(lock.resources);
    if (reason.reason === 'majority-lost') {
      // Taken away by an operator while this instance did not hear it? The masters' tombstones say (revocations.ts).
      // Only the masters that just refused: they answer, so the loss is not held up by a hung one.
      const why = await state.revocations.revokedWhy(lock, timeout, (i) => round.outcomes[i]?.status === 'refused');
      if (why !== undefined) reason = LockLostError.revoked(lock.resources, why);
    }
    lock.markLost(reason);
    state.holdings.untrack(lock);
    const lost = lock.lostReason as LockLostError | undefined; // a revocation heard meanwhile wins
    throw lost?.reason === 'revoked' ? lost : reason;
  }
  throw LockExtensionError.of(lock.resources, settledOutcomes(round.outcomes, state.masters), lock.validity);
}

/** Releases a lock on every master; concurrent calls all resolve once a quorum confirmed the first. */
export function releaseLock(state: EngineState, lock: Lock): Promise<void> {
  const pending = lock.releasing;
  if (pending) return pending;
  const wasHeld = lock.isHeld;
  if (!lock.markReleased()) return Promise.resolve();
  const releasing = releaseOnMasters(state, lock, wasHeld);
  lock.releasing = releasing;
  return releasing;
}

/** Tells the `lost` channel and the log that a lock was lost. */
export function reportLoss(state: EngineState, lock: Lock, reason: LockLostError): void {
  publishLost(lock, reason);
  // the message names the resources and why; never the lock's value
  if (!QUIET_LOSSES.has(reason.reason)) state.logger.warn(`${reason.message} (${reason.reason})`);
  // A revoke removes one resource's keys; the lock's other keys no longer make a lock: remove them now, not at TTL.
  if (reason.reason === 'revoked' && lock.keys.length > 1) void releaseLock(state, lock).catch(() => undefined);
}

async function releaseOnMasters(state: EngineState, lock: Lock, wasHeld: boolean): Promise<void> {
  state.holdings.untrack(lock);
  const limits = state.holdings.takeLimits(lock);
  if (limits && (await endMinHold(state, lock, wasHeld, limits))) return;
  const round = kindOf(lock).release(state, lock, commandTimeoutFor(lock.ttl, state.options.commandTimeout), true);
  noteOutcomes(round.outcomes);
  await round.decided;
  // Handed to a queued waiter: this process's next acquisition of the key queues at once.
  if (round.replies.includes(2)) state.wakeups.sawHandover(lock.keys[0]);
  for (const key of lock.keys) state.wakeups.released(key, lock.value);
}

/**
 * Ends a hold released before its `minHold` was over: instead of deleting the keys, shortens them to
 * lapse on the masters when `minHold` ends. The keys already outlive that moment (minHold <= ttl,
 * set or renewed since acquisition), so a master that misses this keeps a longer TTL, never a
 * shorter one. Returns false when the lock has no `minHold` left or was lost (delete it as usual).
 */
async function endMinHold(state: EngineState, lock: Lock, wasHeld: boolean, limits: HoldLimits): Promise<boolean> {
  const left = Math.ceil(limits.minHoldUntil - now());
  if (!wasHeld || left <= 0) return false;
  await kindOf(lock).extend(state, lock, left, commandTimeoutFor(lock.ttl, state.options.commandTimeout)).decided;
  return true;
}

/**
 * The engine's part of `close()`, once every leadership resigned: aborts pending acquisitions (their
 * attempts cleaned up, their tickets withdrawn), marks held locks lost and releases them on every
 * master within `commandTimeout`, and stops listening. The caller closes the connections after.
 */
export async function closeEngine(state: EngineState): Promise<void> {
  const { commandTimeout } = state.options;
  state.closing.abort(new RedlockClosedError());
  // Attempts in flight reject with RedlockClosedError; what they wrote is removed on every master first.
  state.attempts.cleanUpAll();
  // Every wait ends at once on the abort: each acquisition then withdraws its ticket and gives on a
  // key already handed to it (a clean-up awaited below), so that nothing stays queued for it.
  await state.attempts.acquisitionsEnded(commandTimeout);
  const held = state.holdings.all();
  for (const lock of held) state.holdings.untrack(lock);
  state.holdings.dispose();
  await Promise.all([
    ...held.map((lock) => {
      lock.markLost(LockLostError.shutdown(lock.resources));
      lock.markReleased();
      const released = kindOf(lock).release(state, lock, commandTimeout, true).settled;
      lock.releasing = released;
      return released;
    }),
    ...state.attempts.cleanups(),
  ]);
  state.revocations.close();
  state.wakeups.close();
  state.monitor.dispose();
}
