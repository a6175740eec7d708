import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { Lock } from '../lock/lock.js';
import { LOCK_HANDLE_VERSION, type LockHandle } from '../lock/lock-handle.js';
import { modeOf, type KindRequest } from '../kinds/lock-kind.js';
import { checkLockMode } from '../kinds/lock-mode.js';
import type { PermitState } from '../kinds/counting/counting-kind.js';
import { checkTtl } from '../options/redlock-options.js';
import { MAX_OWNER_LENGTH } from '../options/owner.js';
import { checkResources, MAX_RESOURCES } from '../lock/resources.js';

/**
 * The longest lock value a handle may carry: 1,024 characters for the proof (far above the 22 of a
 * random value or a handed-over one), and the `~` and owner after it: the longest owner, 256
 * characters of up to 3 UTF-8 bytes each, is 1,024 characters of base64url.
 */
const MAX_VALUE_LENGTH = 1_024 + Math.ceil((MAX_OWNER_LENGTH * 3 * 4) / 3) + 1;

/**
 * The handle of `lock` (see {@link LockHandle}), whatever its state here: the masters, not this
 * process, say whether it is still held when it is adopted.
 */
export function handleOf(lock: Lock): LockHandle {
  const { mode, limit } = modeOf(lock);
  // keys are keyPrefix + resource, in the same order.
  const keyPrefix = lock.keys[0].slice(0, lock.keys[0].length - lock.resources[0].length);
  return {
    version: LOCK_HANDLE_VERSION,
    resources: [...lock.resources],
    keyPrefix,
    value: lock.value,
    ttl: lock.ttl,
    mode,
    ...(limit === undefined ? {} : { limit, slot: (lock.kindState as PermitState).slot }),
    ...(lock.fencingToken === undefined ? {} : { fencingToken: lock.fencingToken }),
  };
}

/** A handle that passed {@link checkLockHandle}: what an adoption needs. */
export interface CheckedHandle {
  readonly resources: string[];
  readonly value: string;
  readonly ttl: number;
  /** The lock's kind and its state (a permit's limit and slot). */
  readonly kind: KindRequest;
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
  let kind = checkLockMode({ mode: h.mode });
  if (h.limit !== undefined || h.slot !== undefined) {
    if (!isWhole(h.limit, 1)) refuse('limit', "must be the counting lock's limit, a positive whole number", h.limit);
    if (h.mode === 'read') refuse('mode', "must be 'write' for a counting lock (it has `limit`)", h.mode);
    if (names.length > 1) refuse('resources', 'must name one resource for a counting lock (it has `limit`)', resources);
    if (!isWhole(h.slot, 0) || h.slot >= h.limit) {
      refuse('slot', `must be the permit's slot, a whole number from 0 to ${h.limit - 1} (\`limit\` − 1)`, h.slot);
    }
    const permit = checkLockMode({ limit: h.limit }) as KindRequest<PermitState>;
    kind = { kind: permit.kind, state: { limit: h.limit, slot: h.slot } };
  }
  if (h.fencingToken !== undefined && !isWhole(h.fencingToken, 1)) {
    refuse('fencingToken', 'must be a positive whole number when present', h.fencingToken);
  }
  return {
    resources: names,
    value: h.value,
    ttl,
    kind,
    fencingToken: h.fencingToken,
  };
}
