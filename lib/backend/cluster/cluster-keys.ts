import { clusterSlotOf } from './cluster-slot.js';
import type { Master } from '../master.js';

/** Per slot, a short tag whose slot it is: only for keys with stray braces and no hash tag. */
const tagOfSlot = new Map<number, string>();

function tagFor(slot: number): string {
  let tag = tagOfSlot.get(slot);
  for (let i = 0; tag === undefined; i++) {
    const candidate = `~${i.toString(36)}`;
    const at = clusterSlotOf(candidate);
    if (!tagOfSlot.has(at)) tagOfSlot.set(at, candidate);
    if (at === slot) tag = candidate;
  }
  return tag;
}

/** True when `key` carries a hash tag: a `{` followed, later, by a `}` with something between. */
function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  if (open < 0) return false;
  const close = key.indexOf('}', open + 1);
  return close > open + 1;
}

/**
 * The stem that a lock key's companion keys and channel are built on, on a Redis Cluster node, so
 * that they hash to the lock key's slot (one script call holds them all, no CROSSSLOT). It starts
 * with the lock key whenever it can, so that ACL key patterns and `SCAN` patterns on the key prefix
 * (`~lock:*`, `lock:*`) still cover the companions:
 * - a key with a hash tag (`lock:{order-42}`) gets `{}` appended, which keeps its tag: `lock:{order-42}{}`;
 * - a key with no brace gets itself as a hash tag: `lock:orders{lock:orders}`;
 * - a key with a `}` but no `{` gets a short library tag of the same slot: `lock:a}b{~3f}`;
 * - a key with a `{` that opens no tag (`lock:a{b`, `lock:{}x`) would capture any tag appended
 *   to it, so the library tag goes in front, and `{~}` after it: `{~3f}lock:a{b{~}`.
 *
 * No two lock keys share a stem: the four forms end differently (`{}`, a brace-free character then
 * `}`, a base-36 digit then `}`, `~}`), and within each form the key can be read back. A shared stem
 * would share a handoff queue and channel, and a release could hand one lock's key to a waiter for
 * another lock (`lock:orders{lock:orders}` was both a tagged key and the stem of `lock:orders`).
 *
 * @example
 * clusterStemOf('lock:orders'); // 'lock:orders{lock:orders}': '…:permit:0' is in the slot of 'lock:orders'
 * clusterStemOf('lock:{order-42}'); // 'lock:{order-42}{}'
 */
export function clusterStemOf(key: string): string {
  if (hasHashTag(key)) return `${key}{}`;
  if (!key.includes('{')) return key.includes('}') ? `${key}{${tagFor(clusterSlotOf(key))}}` : `${key}{${key}}`;
  return `{${tagFor(clusterSlotOf(key))}}${key}{~}`;
}

/**
 * The name of a companion key of `key` (`suffix` such as `:limit`, `:permit:0`, `:writer-waiting`,
 * `:handoff:queue`) on `master`: `key + suffix` on a plain master (the layout every version has
 * used), `clusterStemOf(key) + suffix` on a cluster node (the lock key's slot). See docs/cluster.md.
 *
 * @example
 * companionKeyOf(master, 'lock:orders', ':limit'); // 'lock:orders:limit'; on a cluster 'lock:orders{lock:orders}:limit'
 */
export function companionKeyOf(master: Pick<Master, 'cluster'>, key: string, suffix: string): string {
  return (master.cluster ? clusterStemOf(key) : key) + suffix;
}

/**
 * The lock key whose cluster stem is `stem` (the inverse of {@link clusterStemOf}), or undefined when
 * `stem` is no lock key's stem. Lets a reader of a cluster's keys (the CLI's `inspect`) map a
 * companion key such as `lock:orders{lock:orders}:limit` back to its lock, `lock:orders`.
 *
 * @example
 * lockKeyOfClusterStem('lock:orders{lock:orders}'); // 'lock:orders'
 */
export function lockKeyOfClusterStem(stem: string): string | undefined {
  const candidates: string[] = [];
  if (stem.endsWith('{}')) candidates.push(stem.slice(0, -2));
  if (stem.startsWith('{~') && stem.endsWith('{~}')) candidates.push(stem.slice(stem.indexOf('}') + 1, -3));
  const open = stem.lastIndexOf('{');
  if (stem.endsWith('}') && open >= 0) candidates.push(stem.slice(0, open));
  return candidates.find((key) => clusterStemOf(key) === stem);
}
