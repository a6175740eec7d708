import type { LockInspection } from '../inspect/inspect.js';
import { UsageError } from './usage-error.js';

/** The longest `--owner` text: the length the lock `owner` option allows. */
export const MAX_OWNER_LENGTH = 256;

/**
 * Checks `run --owner`: at most 256 characters and no line break (it is shown on one line by
 * `inspect`). Throws `UsageError` naming `--owner`.
 *
 * @example
 * checkOwnerArgument('cron@host-7'); // 'cron@host-7'
 */
export function checkOwnerArgument(owner: string): string {
  if (owner.length > MAX_OWNER_LENGTH || /[\r\n]/.test(owner))
    throw new UsageError(
      `\`--owner\` must be at most ${MAX_OWNER_LENGTH} characters with no line break; got ${owner.length > MAX_OWNER_LENGTH ? `${owner.length} characters` : 'a line break'}.`,
    );
  return owner;
}

/**
 * The acquire options that carry `--owner` to the masters: `{ owner }`, or nothing (the library's
 * default owner, `<hostname>:<pid>`).
 *
 * @example
 * await redlock.acquire(resource, ttl, { autoExtend: true, ...ownerLockOptions(owner) });
 */
export function ownerLockOptions(owner: string | undefined): { owner?: string } {
  return owner === undefined ? {} : { owner };
}

/**
 * Who holds a busy lock, as far as the masters tell: its owner (the holder's `owner` option or
 * `--owner`) and how long the quorum keeps it at least, or the owner of the readers keeping it out.
 *
 * @example
 * err.write(`orders ${describeHolder(await redlock.inspect('orders'))}\n`); // 'is held by "cron@host-7", for at least 8.1 s more'
 */
export function describeHolder(view: LockInspection | undefined): string {
  if (view === undefined) return 'is held by another process';
  if (view.holder === null) {
    // `run` takes the exclusive lock: readers keep it out too, and they have owners as well.
    const [reader, ...others] = view.readers;
    if (reader === undefined) return 'is held by another process';
    const who = reader.owner === null ? 'a reader' : `the reader ${JSON.stringify(reader.owner)}`;
    return `is held by ${who}${others.length > 0 ? ` and ${others.length} other reader(s)` : ''}`;
  }
  const who = view.owner === null ? 'another process' : JSON.stringify(view.owner);
  if (!view.held) return `is held by ${who}`;
  return `is held by ${who}, for at least ${(view.validity / 1_000).toFixed(1)} s more`;
}
