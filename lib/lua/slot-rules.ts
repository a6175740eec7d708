import type { ScriptName } from './scripts.generated.js';

/**
 * How a script's call is split over a Redis Cluster's hash slots, and how the slots' replies make
 * the node's one reply. The cluster adapter (`lib/backend/cluster/cluster-scripts.ts`) applies it,
 * the same way for every script; a plain master runs the call as it is.
 *
 * @example
 * const rule: SlotRule = { merge: [0, 2, 1] }; // extend: 0 anywhere wins over 2 over 1
 */
export interface SlotRule {
  /**
   * - `one-slot`: every key is in the lock key's slot by construction: sent as it is;
   * - `sum`, `max` (at least 0), `first`: of the slots' replies;
   * - a list: the first of these replies that any slot gave (`[0, 1]`: 1 only when every slot said 1).
   */
  readonly merge: 'one-slot' | 'sum' | 'max' | 'first' | readonly number[];
  /** KEYS come as this many parallel lists of n (KEYS[i], KEYS[n+i], …), each in the slot of the first: 1 by default. */
  readonly columns?: number;
  /** The ARGV index (0-based) that holds n, the call's key count per list: rewritten per slot. */
  readonly countArg?: number;
  /** ARGV from this index on are one per key (release channels): split with their keys. */
  readonly perKeyArgsFrom?: number;
  /**
   * All or nothing on the node: when not every slot answered 1, the slots that did are undone with
   * this script, called with their first-list keys and (ARGV[1], '0'): compare-and-delete, silent.
   */
  readonly undo?: ScriptName;
  /**
   * The ARGV index of the announce flag ('0', '1', 's'): with keys in several slots each slot runs
   * silent, and the node publishes on every channel once all slots are done and some key was deleted.
   */
  readonly announceAfterAll?: number;
  /**
   * Runs as script `via` on the first list of keys (ARGV[1], ARGV[2]); on its 1 the second list is
   * read (GET, routed per slot) and the reply is the highest value read, else -1. The fenced acquire:
   * its counters are in other slots than its keys.
   */
  readonly via?: ScriptName;
}

/**
 * Every script's rule on a cluster (a new script does not compile until it has one). Why each
 * merge keeps the script's meaning: docs/cluster.md, "Slots".
 */
export const SLOT_RULES: { readonly [name in ScriptName]: SlotRule } = {
  acquire: { merge: [0, 1], undo: 'release' },
  fencedAcquire: { merge: 'max', columns: 2, via: 'acquire' },
  fence: { merge: 'max' },
  extend: { merge: [0, 2, 1] },
  repair: { merge: [0, 1] },
  release: { merge: 'sum', perKeyArgsFrom: 2, announceAfterAll: 1 },
  readAcquire: { merge: [0, -1, 1], columns: 4, countArg: 2, undo: 'readRelease' },
  readExtend: { merge: [0, 1] },
  readRelease: { merge: 'sum', perKeyArgsFrom: 2 },
  writerWaiting: { merge: 'first' },
  writerDone: { merge: 'sum' },
  // Their keys are the lock key and its companions, hashed into its slot (cluster-keys.ts).
  permitAcquire: { merge: 'one-slot' },
  permitExtend: { merge: 'one-slot' },
  permitRelease: { merge: 'one-slot' },
  ticketAcquire: { merge: 'one-slot' },
  ticketUndo: { merge: 'one-slot' },
  ticketYield: { merge: 'one-slot' },
  ticketWithdraw: { merge: 'one-slot' },
  handoffRelease: { merge: 'one-slot' },
  plainRelease: { merge: 'one-slot' },
  // Plain masters only (no cluster node batches: lib/backend/write-batcher.ts).
  plainBatch: { merge: 'one-slot' },
  revoke: { merge: 'one-slot' },
};
