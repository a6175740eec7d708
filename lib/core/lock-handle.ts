import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { Lock } from './lock.js';
import { shapeOf, type LockMode, type SharedShape } from './lock-mode.js';
import { checkTtl } from './options.js';
import { checkResources, MAX_RESOURCES } from './resources.js';

/** The shape of handle this version writes and reads. */
export const LOCK_HANDLE_VERSION = 1;

/** The longest lock value a handle may carry: far above the 22 characters of a random value or a handed-over one. */
const MAX_VALUE_LENGTH = 1_024;

/**
 * A held lock as plain, JSON-safe data, to finish the work in another process: `lock.toHandle()`
 * writes it, `RedlockService.adopt(handle)` (or `Redlock.adopt`) rebuilds a `Lock` from it on the
 * same masters. It carries the lock's random value, which proves ownership on the masters: whoever
 * has the handle can extend and release the lock, so send it only where you would send a password
 * (never to a log). It says nothing about validity: the adopter measures its own.
 *
 * @example
 * const lock = await redlock.acquire(`order:${id}`, 30_000);
 * await queue.add('ship', { id, lock: lock.toHandle() }); // JSON-safe
 * // in the worker process:
 * const adopted = await redlock.adopt(job.data.lock, { autoExtend: true });
 * @publicApi
 */
export interface LockHandle {
  /** The shape of this object; an adopter refuses a version it does not know. Always 1 for now. */
  readonly version: 1;
  /** The resources the lock covers, without the key prefix. */
  readonly resources: readonly string[];
  /** The lock's `keyPrefix`: the adopter must use the same one (else it would look at other keys). */
  readonly keyPrefix: string;
  /** The holder's random value on the masters. */
  readonly value: string;
  /** The TTL the lock was last set with, ms: the adoption extends the lock by it (not a remaining validity). */
  readonly ttl: number;
  /** `'write'` (the exclusive lock, and a counting lock's permit) or `'read'`. */
  readonly mode: LockMode;
  /** A counting lock: its `limit`. */
  readonly limit?: number;
  /** A counting lock: the permit slot this holder has, 0 to `limit − 1`. */
  readonly slot?: number;
  /** With fencing: the token the lock was issued with (the adopted lock keeps it). */
  readonly fencingToken?: number;
}

/**
 * The handle of `lock` (see {@link LockHandle}), whatever its state here: the masters, not this
 * process, say whether it is still held when it is adopted.
 */
export function handleOf(lock: Lock): LockHandle {
  const shape = shapeOf(lock);
  // keys are keyPrefix + resource, in the same order.
  const keyPrefix = lock.keys[0].slice(0, lock.keys[0].length - lock.resources[0].length);
  return {
    version: LOCK_HANDLE_VERSION,
    resources: [...lock.resources],
    keyPrefix,
    value: lock.value,
    ttl: lock.ttl,
    mode: shape?.kind === 'read' ? 'read' : 'write',
    ...(shape?.kind === 'permit' ? { limit: shape.limit, slot: shape.slot } : {}),
    ...(lock.fencingToken === undefined ? {} : { fencingToken: lock.fencingToken }),
  };
}

/** A handle that passed {@link checkLockHandle}: what an adoption needs. */
export interface CheckedHandle {
  readonly resources: string[];
  readonly value: string;
  readonly ttl: number;
  /** Undefined for the exclusive lock. */
  readonly shape: SharedShape | undefined;
  readonly fencingToken: number | undefined;
}

const describe = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'an array'
      : typeof value === 'string'
        ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
        : typeof value === 'number' || typeof value === 'boolean'
          ? String(value)
          : typeof value;

function refuse(field: string, rule: string, got: unknown): never {
  // Never the value's text: it proves ownership of the lock.
  const shown = field === 'value' && typeof got === 'string' ? `a string of ${got.length} characters` : describe(got);
  throw new RedlockConfigError(`handle.${field}`, `\`handle.${field}\` ${rule}; got ${shown}.`);
}

const isWhole = (value: unknown, min: number): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= min;

/**
 * Refuses a handle of the wrong shape, naming the field (`RedlockConfigError`, option
 * `handle.value` and so on), before anything is sent; `keyPrefix` must be the adopter's. Fields it
 * does not know are ignored: a change of meaning comes with a new `version`.
 */
export function checkLockHandle(handle: unknown, keyPrefix: string): CheckedHandle {
  if (handle === null || typeof handle !== 'object' || Array.isArray(handle)) {
    throw new RedlockConfigError(
      'handle',
      `\`handle\` must be the object \`lock.toHandle()\` returned (parsed from JSON if it travelled as text); got ${describe(handle)}.`,
    );
  }
  const h = handle as Record<string, unknown>;
  if (h.version !== LOCK_HANDLE_VERSION) {
    refuse(
      'version',
      `must be ${LOCK_HANDLE_VERSION}: this version of nestjs-quorum-lock reads handles of version ${LOCK_HANDLE_VERSION} only (adopt it with the version that wrote it)`,
      h.version,
    );
  }
  const resources = h.resources;
  if (!Array.isArray(resources) || resources.length === 0 || resources.length > MAX_RESOURCES) {
    refuse('resources', `must be a non-empty array of at most ${MAX_RESOURCES} resource names`, resources);
  }
  let names: string[];
  try {
    names = checkResources(resources as string[], 'handle.resources');
  } catch (error) {
    throw new RedlockConfigError('handle.resources', (error as Error).message);
  }
  if (names.length !== resources.length) refuse('resources', 'must not name a resource twice', resources);
  if (typeof h.keyPrefix !== 'string') refuse('keyPrefix', 'must be a string', h.keyPrefix);
  if (h.keyPrefix !== keyPrefix) {
    refuse(
      'keyPrefix',
      `must be this instance's \`keyPrefix\` ${JSON.stringify(keyPrefix)} (the handle's lock lives under other keys)`,
      h.keyPrefix,
    );
  }
  if (typeof h.value !== 'string' || h.value.length === 0 || h.value.length > MAX_VALUE_LENGTH) {
    refuse('value', `must be the lock's value, a non-empty string of at most ${MAX_VALUE_LENGTH} characters`, h.value);
  }
  const ttl = checkTtl(h.ttl, 'handle.ttl');
  if (h.mode !== 'write' && h.mode !== 'read') refuse('mode', "must be 'write' or 'read'", h.mode);
  let shape: SharedShape | undefined = h.mode === 'read' ? { kind: 'read' } : undefined;
  if (h.limit !== undefined || h.slot !== undefined) {
    if (!isWhole(h.limit, 1)) refuse('limit', "must be the counting lock's limit, a positive whole number", h.limit);
    if (h.mode === 'read') refuse('mode', "must be 'write' for a counting lock (it has `limit`)", h.mode);
    if (names.length > 1) refuse('resources', 'must name one resource for a counting lock (it has `limit`)', resources);
    if (!isWhole(h.slot, 0) || h.slot >= h.limit) {
      refuse('slot', `must be the permit's slot, a whole number from 0 to ${h.limit - 1} (\`limit\` − 1)`, h.slot);
    }
    shape = { kind: 'permit', limit: h.limit, slot: h.slot };
  }
  if (h.fencingToken !== undefined && !isWhole(h.fencingToken, 1)) {
    refuse('fencingToken', 'must be a positive whole number when present', h.fencingToken);
  }
  return {
    resources: names,
    value: h.value,
    ttl,
    shape,
    fencingToken: h.fencingToken,
  };
}
