import { bySlot } from '../../backend/cluster/cluster-scripts.js';
import { queueKeysOf } from '../mutex/handoff.js';
import type { Master } from '../../backend/master.js';
import { companionKeyOf } from '../../backend/cluster/cluster-keys.js';
import { announceFlagFor, releaseChannelFor } from '../channels.js';
import { defineScripts } from '../../lua/scripts.js';

/** Redis key of the waiting-writer intent on `key` (it holds off new readers), on `master` (in the lock key's slot on a cluster). @internal */
export const intentKeyOf = (key: string, master: Pick<Master, 'cluster'> = {}): string =>
  companionKeyOf(master, key, ':writer-waiting');

/**
 * The read-write lock calls on one master. On a plain master, one script call. On a cluster node,
 * each lock key's intent key and channel are in its slot (`companionKeyOf`), so the keys are grouped
 * by slot and the script runs once per slot, in parallel; a reader counts as granted on the node only
 * when every slot granted, and the slots that did grant are undone (this reader removed) otherwise,
 * as exclusive multi-resource locks do (docs/cluster.md).
 */
function groupsOf(master: Master, keys: readonly string[]): string[][] {
  if (!master.cluster || keys.length === 1) return [[...keys]];
  return bySlot(keys).map((at) => at.map((i) => keys[i]));
}

/** Removes `value` from the readers of `keys` on `master`, announcing each key it freed when asked. */
export async function readReleaseOn(
  master: Master,
  keys: readonly string[],
  value: string,
  announce: boolean,
): Promise<number> {
  const rw = defineScripts(master.client);
  const flag = announceFlagFor(master, announce);
  const replies = await Promise.all(
    groupsOf(master, keys).map((group) =>
      rw.quorumLockReadRelease(group.length, ...group, value, flag, ...group.map((k) => releaseChannelFor(master, k))),
    ),
  );
  return replies.reduce((a, b) => a + b, 0);
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
  const rw = defineScripts(master.client);
  const take = (group: readonly string[]): Promise<number> =>
    rw.quorumLockReadAcquire(
      group.length * 3,
      ...group,
      ...group.map((k) => intentKeyOf(k, master)),
      ...group.map((k) => queueKeysOf(k, master)[1]),
      value,
      ttl,
      group.length,
    );
  const groups = groupsOf(master, keys);
  if (groups.length === 1) return take(groups[0]);
  const results = await Promise.allSettled(groups.map(take));
  const replies = results.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
  if (replies.every((r) => r === 1)) return 1;
  const granted = groups.filter((_, i) => replies[i] === 1).flat();
  if (granted.length > 0) await readReleaseOn(master, granted, value, false).catch(() => undefined);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
  return replies.includes(0) ? 0 : -1;
}

/** Extends reader `value` on every key of `master`: 1 = extended; 0 = no longer a reader of some key. */
export async function readExtendOn(
  master: Master,
  keys: readonly string[],
  value: string,
  ttl: string,
): Promise<number> {
  const rw = defineScripts(master.client);
  const replies = await Promise.all(
    groupsOf(master, keys).map((group) => rw.quorumLockReadExtend(group.length, ...group, value, ttl)),
  );
  return replies.every((r) => r === 1) ? 1 : 0;
}

/** Registers (or refreshes) waiting writer `waiter` on the intent keys of `keys` on `master`. */
export async function writerWaitingOn(
  master: Master,
  keys: readonly string[],
  waiter: string,
  ttl: string,
): Promise<number> {
  const rw = defineScripts(master.client);
  await Promise.all(
    groupsOf(master, keys).map((group) => {
      const intents = group.map((k) => intentKeyOf(k, master));
      return rw.quorumLockWriterWaiting(intents.length, ...intents, waiter, ttl);
    }),
  );
  return 1;
}

/** Withdraws waiting writer `waiter` from the intent keys of `keys` on `master`, where it is still the latest. */
export async function writerDoneOn(master: Master, keys: readonly string[], waiter: string): Promise<number> {
  const rw = defineScripts(master.client);
  const replies = await Promise.all(
    groupsOf(master, keys).map((group) => {
      const intents = group.map((k) => intentKeyOf(k, master));
      return rw.quorumLockWriterDone(intents.length, ...intents, waiter);
    }),
  );
  return replies.reduce((a, b) => a + b, 0);
}
