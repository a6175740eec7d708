import { hostname } from 'node:os';
import { RedlockConfigError } from '../errors/redlock-config.error.js';

/**
 * Who holds a lock, for operators (`inspect()`, the CLI): the `owner` option, carried inside the
 * lock's value on the masters. The value is `<proof>~<owner, base64url>`: the proof is the random
 * part (and, after a handover, the ticket's order before it), and the whole value stays what release,
 * extend and handoff compare, so nobody can take or drop a lock by naming its owner. One value, one
 * `SET NX PX`: an owner costs no key and no command of its own (docs/decisions.md, "Owner and revoke").
 */

/** The longest `owner`, in characters. */
export const MAX_OWNER_LENGTH = 256;

/** Separates the proof from the encoded owner: never in base64url, in a handover's order, nor first (a reservation). */
const OWNER_SEPARATOR = '~';

/**
 * The default `owner`: `<hostname>:<pid>`.
 *
 * @example
 * defaultOwner(); // 'web-3:4172'
 */
export function defaultOwner(): string {
  return `${hostname()}:${process.pid}`;
}

/**
 * Refuses an `owner` that is not a string of at most 256 characters without a line break
 * (`RedlockConfigError` naming `option`), or returns it.
 *
 * @example
 * checkOwner('billing-cron@host-7'); // 'billing-cron@host-7'
 */
export function checkOwner(value: unknown, option = 'owner'): string {
  if (typeof value !== 'string')
    throw new RedlockConfigError(
      option,
      `\`${option}\` must be a string; got ${value === null ? 'null' : typeof value}.`,
    );
  if (value.length > MAX_OWNER_LENGTH || /[\r\n]/.test(value))
    throw new RedlockConfigError(
      option,
      `\`${option}\` must be at most ${MAX_OWNER_LENGTH} characters with no line break; got ${value.length > MAX_OWNER_LENGTH ? `${value.length} characters` : 'a line break'}.`,
    );
  return value;
}

/**
 * The suffix a lock value gets for `owner` (computed once per owner: the plain path only concatenates).
 *
 * @example
 * const value = randomBytes(16).toString('base64url') + ownerSuffixOf('cron@host-7');
 */
export function ownerSuffixOf(owner: string): string {
  return OWNER_SEPARATOR + Buffer.from(owner, 'utf8').toString('base64url');
}

/**
 * The owner a lock value carries, or null when it carries none (a value written by an older
 * version, or a reservation for a queued waiter).
 *
 * @example
 * ownerOfValue(lock.value); // 'web-3:4172'
 */
export function ownerOfValue(value: string | null | undefined): string | null {
  if (!value) return null;
  const at = value.lastIndexOf(OWNER_SEPARATOR);
  if (at <= 0) return null;
  return Buffer.from(value.slice(at + 1), 'base64url').toString('utf8');
}

/**
 * The owner in force for a call: the call's, else the `owner` option, else `<hostname>:<pid>`.
 *
 * @example
 * ownerIn(redlock.options, options?.owner); // 'web-3:4172'
 */
export function ownerIn(options: { readonly owner?: string }, perCall?: string): string {
  return perCall ?? options.owner ?? (processOwner ??= defaultOwner());
}

let processOwner: string | undefined;

/** Caches `ownerSuffixOf` for the few owners a process uses. */
const suffixes = new Map<string, string>();

/** `ownerSuffixOf(owner)`, cached (bounded: per-call owners may vary). */
export function cachedOwnerSuffix(owner: string): string {
  let suffix = suffixes.get(owner);
  if (suffix === undefined) {
    suffix = ownerSuffixOf(owner);
    if (suffixes.size >= 64) suffixes.delete(suffixes.keys().next().value!);
    suffixes.set(owner, suffix);
  }
  return suffix;
}
