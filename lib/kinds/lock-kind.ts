import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { Lock } from '../lock/lock.js';
import type { VoteRound } from '../quorum/vote-round.js';
import type { AcquireRequest, KindAttempt, Quorum, RoundContext } from './acquire-request.js';
import type { KindReader } from './inspection.js';

/**
 * `'write'` (the default) is the exclusive lock; `'read'` is shared with other readers and excludes
 * writers. See docs/read-write-and-counting-locks.md.
 *
 * @example
 * await redlock.using('catalog', 5_000, render, { mode: 'read' });
 * @publicApi
 */
export type LockMode = 'read' | 'write';

/** What `lockModeOf` says of a lock, and what a handle records of its kind. */
export interface KindMode {
  readonly mode: LockMode;
  readonly limit?: number;
}

/**
 * One kind of lock: what it asks every master, how it nests, who the testing stand-in admits, and
 * how `inspect()` reads it. The mutex (one key or many), the read lock and the counting lock are
 * the kinds; fencing, handoff and leadership build on them. A kind is a singleton: what differs
 * between two locks of one kind is the kind's state `S` (a permit's limit and slot), which the
 * `Lock` carries beside it (`lock.kindState`). Not exported by the package entries: not yet a
 * plugin API.
 *
 * @example
 * const kind = kindOf(lock); // MUTEX, READ or PERMIT
 * await kind.release(quorum, lock, options.commandTimeout, true).decided;
 */
export interface LockKind<S = unknown> {
  readonly name: string;
  /** Holders keep this process's waiters for the keys from polling: their release wakes them. */
  readonly exclusive: boolean;
  /** How a lock of this kind reads in `lockModeOf` and in its handle. */
  modeOf(state: S): KindMode;
  /** Waiters may queue on the masters for a direct handover (docs/handoff.md). */
  queues(keys: readonly string[]): boolean;
  /** One attempt on every master: its rounds, its result, and how to undo what it wrote. */
  acquire(context: RoundContext, request: AcquireRequest, requested: S): KindAttempt;
  /** Compare-and-pexpire of the lock on every master (extend, or shorten to `minHold`). */
  extend(quorum: Quorum, lock: Lock, ttl: number, timeout: number): VoteRound;
  /** Removes the lock on every master; never rejects. With `announce`, waiters hear it. */
  release(quorum: Quorum, lock: Lock, timeout: number, announce: boolean): VoteRound;
  /** After an extension won: re-takes the lock where a master lost it (docs/quorum-repair.md). */
  repair?(quorum: Quorum, lock: Lock, ttl: number, timeout: number, replies: readonly unknown[]): void;
  /** A waiter refused and about to retry holds others off while it waits (the mutex: the writer intent). */
  holdOff?(context: RoundContext, keys: readonly string[], waiter: string, ttl: number): void;
  /** The waiter got the lock or gave up: stop holding others off. */
  stopHoldingOff?(context: RoundContext, keys: readonly string[], waiter: string): void;
  /**
   * Reentrancy: may `held`, a lock of the enclosing call chain on `resource`, serve a request of
   * this kind? Throws when the call chain can never get it (a write inside a read, another limit).
   */
  covers(held: Lock, requested: S, resource: string): boolean;
  /** The testing stand-in's rule: may a request of this kind join `holders` (every lock on `resource`)? */
  admits(holders: readonly Lock[], requested: S, resource: string): boolean;
  /** The testing stand-in's grant: the state the new holder gets among `holders` (default: `requested`). */
  placeAmong?(holders: readonly Lock[], requested: S, resource: string): S;
  /** How `inspect()` reads a resource of this kind. */
  readonly reader: KindReader;
}

/** A call's choice of kind: the kind and the state it asks for (a permit's limit). */
export interface KindRequest<S = unknown> {
  readonly kind: LockKind<S>;
  readonly state: S;
}

/** The kind of `lock`: every `Lock` is made with one of the kinds. */
export function kindOf(lock: Lock): LockKind {
  return lock.kind as LockKind;
}

/** What `lockModeOf` says of `lock`. */
export function modeOf(lock: Lock): KindMode {
  return kindOf(lock).modeOf(lock.kindState);
}

/** A nested call asks for another `limit` than the one its call chain holds the resource with. */
export function limitMismatch(wanted: number | undefined, held: number | undefined, resource: string): never {
  throw new RedlockConfigError(
    'limit',
    `\`limit\` ${wanted ?? '(none)'} differs from the limit ${held ?? '(none: an exclusive lock)'} this call chain already holds ${JSON.stringify(resource)} with.`,
  );
}
