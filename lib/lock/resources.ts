import { LockKeyError } from '../errors/lock-key.error.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';

/**
 * The most resources one lock may cover. Every master checks and writes all of them in one script
 * call, which blocks that master meanwhile (about a millisecond per thousand keys), and the call's
 * arguments must fit in one JavaScript call frame; longer lists are refused with a
 * `RedlockConfigError` naming `resources`. Lock one coarser name for a larger set.
 *
 * @example
 * if (seats.length > MAX_RESOURCES) throw new Error('lock the whole show instead');
 * @publicApi
 */
export const MAX_RESOURCES = 10_000;

/** A lone surrogate (not part of a pair). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `String.prototype.isWellFormed` where the runtime has it (Node 20+): native, and a call costs far less than the pattern. */
const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

/** True when `name` is well-formed Unicode (`String.prototype.isWellFormed`, without needing ES2024 types). */
export function isWellFormed(name: string): boolean {
  return nativeIsWellFormed ? nativeIsWellFormed.call(name) : !LONE_SURROGATE.test(name);
}

/**
 * Checks the resource argument of `acquire`, `tryAcquire`, `using`, `lead` and `inspect` (named
 * `argument` in messages), and returns the names without duplicates. Refuses an empty list or name and a name that is not
 * well-formed Unicode with `LockKeyError` (a lone surrogate becomes U+FFFD on its way to Redis, so
 * two such names would share one key), and more than `MAX_RESOURCES` names with `RedlockConfigError`.
 */
export function checkResources(resources: string | readonly string[], argument = 'resources'): string[] {
  const list = typeof resources === 'string' ? [resources] : resources;
  if (!Array.isArray(list) || list.length === 0) {
    throw new LockKeyError(`\`${argument}\` must be a non-empty resource name or a non-empty array of them.`);
  }
  if (list.length > MAX_RESOURCES) {
    throw new RedlockConfigError(
      'resources',
      `\`resources\` may list at most ${MAX_RESOURCES} resources per lock (MAX_RESOURCES); got ${list.length}. Lock one coarser name for the whole set instead.`,
    );
  }
  for (let i = 0; i < list.length; i++) {
    const r: unknown = list[i];
    if (typeof r !== 'string' || r.length === 0) {
      throw new LockKeyError(
        `${nameAt(argument, resources, i)} must be a non-empty string; got ${r === '' ? 'an empty string' : typeof r}.`,
      );
    }
    if (!isWellFormed(r)) {
      throw new LockKeyError(
        `${nameAt(argument, resources, i)} is not well-formed Unicode: it holds a lone surrogate, which Redis would store as U+FFFD, so different names could share one key.`,
      );
    }
  }
  return list.length === 1 ? [list[0] as string] : [...new Set(list as string[])];
}

/** How a refusal names resource `i`: the argument itself, or its entry. */
function nameAt(argument: string, resources: string | readonly string[], i: number): string {
  return `\`${argument}${typeof resources === 'string' ? '' : `[${i}]`}\``;
}
