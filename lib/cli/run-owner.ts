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
 * The acquire options that carry `--owner` to the masters. The core has no `owner` option yet, so
 * the text is checked and not stored; once it has one, this returns `{ owner }`.
 *
 * @example
 * await redlock.acquire(resource, ttl, { autoExtend: true, ...ownerLockOptions(owner) });
 */
export function ownerLockOptions(_owner: string | undefined): Record<string, never> {
  return {};
}

/**
 * Who holds a busy lock, as far as the masters tell: for now how long the quorum keeps it at least
 * (the holder's value is random and says nothing to an operator); the holder's owner once locks
 * carry one.
 *
 * @example
 * err.write(`orders ${describeHolder(await redlock.inspect('orders'))}\n`); // "is held by another process, for at least 8.1 s more"
 */
export function describeHolder(view: LockInspection | undefined): string {
  if (view === undefined || !view.held) return 'is held by another process';
  return `is held by another process, for at least ${(view.validity / 1_000).toFixed(1)} s more`;
}
