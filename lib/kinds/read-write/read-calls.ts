import { handoffKeysOf, queueKeysOf } from '../mutex/handoff.js';
import type { Master } from '../../backend/master.js';
import { companionKeyOf } from '../../backend/cluster/cluster-keys.js';
import { announceFlagFor, releaseChannelFor } from '../channels.js';

/** Redis key of the waiting-writer intent on `key` (it holds off new readers), on `master` (in the lock key's slot on a cluster). @internal */
export const intentKeyOf = (key: string, master: Pick<Master, 'cluster'> = {}): string =>
  companionKeyOf(master, key, ':writer-waiting');

// The read-write lock calls on one master: one script call each. On a cluster node each lock key's
// intent key and channel are in its slot (`companionKeyOf`), so the backend splits a call by slot
// and merges the replies by the script's rule (lib/lua/slot-rules.ts): a reader counts as granted
// on the node only when every slot granted, and the slots that did grant are undone otherwise, as
// exclusive multi-resource locks do (docs/cluster.md).

/** Removes `value` from the readers of `keys` on `master`, announcing each key it freed when asked. */
export async function readReleaseOn(
  master: Master,
  keys: readonly string[],
  value: string,
  announce: boolean,
): Promise<number> {
  const flag = announceFlagFor(master, announce);
  const channels = keys.map((k) => releaseChannelFor(master, k));
  return master.scripts.quorumLockReadRelease(keys.length, ...keys, value, flag, ...channels);
}

/**
 * Adds reader `value` to every key on `master`: 1 = granted on all keys; 0 = a writer holds one;
 * -1 = a writer waits for one (0 wins over -1 when slots disagree). All or nothing on the master.
 */
export async function readAcquireOn(
  master: Master,
  keys: readonly string[],
  value: string,
  ttl: string,
): Promise<number> {
  return master.scripts.quorumLockReadAcquire(
    keys.length * 4,
    ...keys,
    ...keys.map((k) => intentKeyOf(k, master)),
    ...keys.map((k) => queueKeysOf(k, master)[1]),
    ...keys.map((k) => handoffKeysOf(k, master)[3]),
    value,
    ttl,
    keys.length,
  );
}

/** Extends reader `value` on every key of `master`: 1 = extended; 0 = no longer a reader of some key. */
export async function readExtendOn(
  master: Master,
  keys: readonly string[],
  value: string,
  ttl: string,
): Promise<number> {
  return master.scripts.quorumLockReadExtend(keys.length, ...keys, value, ttl);
}

/** Registers (or refreshes) waiting writer `waiter` on the intent keys of `keys` on `master`. */
export async function writerWaitingOn(
  master: Master,
  keys: readonly string[],
  waiter: string,
  ttl: string,
): Promise<number> {
  const intents = keys.map((k) => intentKeyOf(k, master));
  await master.scripts.quorumLockWriterWaiting(intents.length, ...intents, waiter, ttl);
  return 1;
}

/** Withdraws waiting writer `waiter` from the intent keys of `keys` on `master`, where it is still the latest. */
export async function writerDoneOn(master: Master, keys: readonly string[], waiter: string): Promise<number> {
  const intents = keys.map((k) => intentKeyOf(k, master));
  return master.scripts.quorumLockWriterDone(intents.length, ...intents, waiter);
}
