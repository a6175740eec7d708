import { companionKeyOf } from '../../backend/cluster/cluster-keys.js';
import type { Master } from '../../backend/master.js';

// On a cluster node the companion keys are in the lock key's slot (`companionKeyOf`, docs/cluster.md).
/** Redis key of permit slot `i` of a counting lock on `key`, on `master`. @internal */
export const permitKeyOf = (key: string, i: number, master: Pick<Master, 'cluster'> = {}): string =>
  companionKeyOf(master, key, `:permit:${i}`);
/** Redis key of the limit record of a counting lock on `key`, on `master`. @internal */
export const limitKeyOf = (key: string, master: Pick<Master, 'cluster'> = {}): string =>
  companionKeyOf(master, key, ':limit');
