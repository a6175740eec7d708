import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { handoffKeysOf } from '../kinds/mutex/handoff.js';
import type { LockInspection } from '../inspect/inspect.js';
import { limitKeyOf, permitKeyOf } from '../kinds/counting/permit-keys.js';
import type { Master } from '../backend/master.js';
import { announceFlagFor, releaseChannelFor } from '../kinds/channels.js';
import { REVOCATION_CHANNEL, tombstoneKeyOf } from './revocations.js';
import { voteRound } from '../quorum/vote-round.js';

/**
 * Options of `revoke()`.
 *
 * @example
 * await redlock.revoke('nightly-report', { reason: 'stuck since 02:00, ticket OPS-12' });
 * @publicApi
 */
export interface RevokeOptions {
  /** Why, for the holder: the detail of its `LockLostError` (reason `'revoked'`). At most 1024 characters. */
  reason?: string;
}

/**
 * What `revoke()` did.
 *
 * @example
 * const { revoked, owner } = await redlock.revoke('nightly-report');
 * if (revoked) console.log(`took it from ${owner}`);
 * @publicApi
 */
export interface RevokeResult {
  /** True when a holder held on a quorum was removed from enough masters that it holds the lock no more. */
  readonly revoked: boolean;
  /**
   * The value held on a quorum when the revoke began (the exclusive holder's; for a shared lock the
   * most agreeing reader's or permit holder's), or null when nothing was held.
   */
  readonly holder: string | null;
  /** That holder's `owner`, or null (nothing held, or its value carries no owner). */
  readonly owner: string | null;
}

/** The longest revocation `reason`, in characters. */
const MAX_REASON_LENGTH = 1_024;

/** Refuses bad `revoke()` options (`RedlockConfigError` naming the option); returns the reason ('' for none). */
export function checkRevokeOptions(options: RevokeOptions | undefined): string {
  if (options === undefined) return '';
  if (options === null || typeof options !== 'object')
    throw new RedlockConfigError('options', '`options` must be an object such as { reason }.');
  for (const key of Object.keys(options))
    if (key !== 'reason')
      throw new RedlockConfigError(key, `\`${key}\` is not an option of revoke() (the options: reason).`);
  const { reason } = options;
  if (reason === undefined) return '';
  if (typeof reason !== 'string' || reason.length > MAX_REASON_LENGTH)
    throw new RedlockConfigError(
      'reason',
      `\`reason\` must be a string of at most ${MAX_REASON_LENGTH} characters; got ${typeof reason === 'string' ? `${reason.length} characters` : typeof reason}.`,
    );
  return reason;
}

/** What `revokeHolders` needs of the instance. */
export interface RevokeContext {
  readonly masters: readonly Master[];
  readonly quorum: number;
  /** The per-master command timeout, ms. */
  readonly timeout: number;
}

/**
 * Removes the holders `view` (just read by `inspect()`) found, on every master: the exclusive
 * holder's value where it is still held, and every reader and permit slot of the resource (see
 * `REVOKE_LUA`). Each holder's instance hears it on the revocation channel; waiters move as after
 * a release. Resolves once every master answered or timed out; never rejects for a master's error.
 */
export async function revokeHolders(ctx: RevokeContext, view: LockInspection, reason: string): Promise<RevokeResult> {
  const readers = view.readers.filter((r) => r.held);
  const slots = view.permits?.slots.filter((s) => s.held) ?? [];
  const shared = readers[0] ?? [...slots].sort((a, b) => b.agreeing - a.agreeing)[0];
  const holder = view.held ? view.holder : (shared?.value ?? null);
  const agreeing = view.held ? view.agreeing : (shared?.agreeing ?? 0);
  const owner = view.held ? view.owner : (shared?.owner ?? null);
  const exclusive = view.held && view.holder !== null ? view.holder : '';
  const anything = exclusive !== '' || view.readers.length > 0 || view.permits !== undefined;
  if (!anything) return { revoked: false, holder: null, owner: null };
  // Every slot up to the highest limit any master records: a permit taken since the read goes too.
  const slotCount = Math.max(
    0,
    ...view.masters.map((m) => m.limit ?? 0),
    ...(view.permits?.slots ?? []).map((s) => s.slot + 1),
  );
  const { key } = view;
  const round = voteRound(
    ctx.masters,
    ctx.masters.length,
    ctx.timeout,
    (m) => {
      const keys = [
        ...handoffKeysOf(key, m),
        tombstoneKeyOf(m, key),
        limitKeyOf(key, m),
        ...Array.from({ length: slotCount }, (_, i) => permitKeyOf(key, i, m)),
      ];
      return m.scripts.quorumLockRevoke(
        keys.length,
        ...keys,
        exclusive,
        announceFlagFor(m, true),
        releaseChannelFor(m, key),
        String(Math.max(1, Math.ceil(ctx.timeout))),
        REVOCATION_CHANNEL,
        reason,
      );
    },
    (reply) => Array.isArray(reply) && Number(reply[0]) > 0,
  );
  await round.settled;
  const removedOn = round.replies.filter((r) => Array.isArray(r) && Number(r[0]) > 0).length;
  // The holder no longer holds a quorum once it lost more masters than it could spare.
  const revoked = holder !== null && agreeing - removedOn < ctx.quorum;
  return { revoked, holder, owner };
}
