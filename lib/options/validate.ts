import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { isWellFormed } from '../lock/resources.js';
import { redact, secretsOf } from '../util/redact.js';

// The checks every option goes through: each refusal is a RedlockConfigError naming the option,
// with the value described (a string never with its passwords).

/**
 * The largest TTL or timeout, in ms: 2^31−1 (about 24.8 days), the longest delay Node's timers
 * hold. A longer one would fire at once (with a `TimeoutOverflowWarning`), so it is refused.
 *
 * @example
 * const ttl = Math.min(requested, MAX_TTL);
 * @publicApi
 */
export const MAX_TTL = 2 ** 31 - 1;

/** Throws `RedlockConfigError`: `` `option` rule; got value. `` */
export function refuse(option: string, rule: string, value: unknown): never {
  throw new RedlockConfigError(option, `\`${option}\` ${rule}; got ${describe(value)}.`);
}

/** A value as a refusal shows it. */
export function describe(value: unknown): string {
  // A string may be a node list given unsplit (`nodes: process.env.REDLOCK_NODES`): never its passwords.
  if (typeof value === 'string') return JSON.stringify(redact(value, secretsOf([value])));
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return String(value);
  return Array.isArray(value) ? `an array of ${value.length}` : typeof value;
}

/** Refuses anything but a positive whole number of ms up to `MAX_TTL` (a TTL or a timeout). */
export function checkTtl(value: unknown, option = 'ttl'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    refuse(option, 'must be a positive whole number of milliseconds', value);
  }
  if (value > MAX_TTL) {
    refuse(
      option,
      `must be at most ${MAX_TTL} ms (2^31−1, about 24.8 days: the longest delay Node's timers hold)`,
      value,
    );
  }
  return value;
}

/** The value, or a refusal naming `option`. */
export const isBoolean = (value: unknown, option: string): boolean =>
  typeof value === 'boolean' ? value : refuse(option, 'must be true or false', value);
export const isString = (value: unknown, option: string): string =>
  typeof value === 'string' ? value : refuse(option, 'must be a string', value);
export const isPrefix = (value: unknown, option: string): string =>
  isWellFormed(isString(value, option))
    ? (value as string)
    : refuse(option, 'must be well-formed Unicode (no lone surrogates)', value);
export const isWholeMs = (value: unknown, option: string): number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
    ? value
    : refuse(option, 'must be a whole number of milliseconds >= 0', value);

/** Refuses `key`, naming the closest of `names` within two edits (a typo such as `tll`), if any. */
export function refuseUnknown(key: string, names: readonly string[], what: string): never {
  let near: string | undefined;
  let nearest = 3;
  for (const name of names) {
    const d = editDistance(key.toLowerCase(), name.toLowerCase());
    if (d < nearest) [near, nearest] = [name, d];
  }
  throw new RedlockConfigError(
    key,
    `\`${key}\` is not ${what}${near ? `; did you mean \`${near}\`?` : ''} (the options: ${names.join(', ')}).`,
  );
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length];
}
