import type { Cluster } from 'ioredis';
import { defineScripts, type ScriptedClient } from '../../lua/scripts.js';
import { clusterSlotOf } from './cluster-slot.js';

/**
 * Groups keys by hash slot, keeping each key's position, so that one script call per slot never
 * crosses slots (a cluster refuses a script whose keys are in different slots: CROSSSLOT).
 */
export function bySlot(keys: readonly string[]): number[][] {
  const groups = new Map<number, number[]>();
  keys.forEach((key, i) => {
    const slot = clusterSlotOf(key);
    const group = groups.get(slot);
    if (group) group.push(i);
    else groups.set(slot, [i]);
  });
  return [...groups.values()];
}

function pick<T>(items: readonly T[], at: readonly number[]): T[] {
  return at.map((i) => items[i]);
}

/** Waits for every call; rethrows the first failure only after all have settled (for the undo). */
async function allSettled<T>(calls: Promise<T>[]): Promise<{ values: (T | undefined)[]; error?: unknown }> {
  const results = await Promise.allSettled(calls);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  return {
    values: results.map((r) => (r.status === 'fulfilled' ? r.value : undefined)),
    ...(failure ? { error: failure.reason } : {}),
  };
}

/**
 * The library's scripts on a Redis Cluster node, with the same replies as on a single master.
 * Each script runs once per hash slot of its keys (in parallel); a master counts as granting only
 * when every slot granted, and the slots that did grant are undone (compare-and-delete of this
 * lock's value) when another refused or failed, so a multi-resource lock stays all-or-nothing on
 * the node. See docs/cluster.md for why this is as safe as the single-script form.
 *
 * @example
 * const scripts = clusterScripts(new Cluster([{ host: '10.0.0.1', port: 7000 }]));
 * await scripts.quorumLockAcquire(2, 'lock:a', 'lock:b', value, '10000'); // 1: both taken
 */
export function clusterScripts(cluster: Cluster): ScriptedClient {
  const raw = defineScripts(cluster);

  /** Removes `keys` where they still hold `value`, one call per slot; never rejects. */
  const undo = (keys: readonly string[], value: string): Promise<unknown> =>
    Promise.allSettled(bySlot(keys).map((g) => raw.quorumLockRelease(g.length, ...pick(keys, g), value, '0')));

  /** Takes every key or none; 1 or 0. */
  const acquireAll = async (keys: readonly string[], value: string, ttl: string): Promise<number> => {
    const groups = bySlot(keys);
    if (groups.length === 1) return raw.quorumLockAcquire(keys.length, ...keys, value, ttl);
    const { values, error } = await allSettled(
      groups.map((g) => raw.quorumLockAcquire(g.length, ...pick(keys, g), value, ttl)),
    );
    if (error === undefined && values.every((v) => v === 1)) return 1;
    const granted = groups.flatMap((g, i) => (values[i] === 1 ? pick(keys, g) : []));
    if (granted.length > 0) await undo(granted, value);
    if (error !== undefined) throw error;
    return 0;
  };

  return {
    quorumLockAcquire: (numKeys, ...rest) =>
      acquireAll(rest.slice(0, numKeys).map(String), String(rest[numKeys]), String(rest[numKeys + 1])),

    // KEYS: n lock keys, n counters; ARGV: value, ttl, n. The counters are read after the keys are
    // taken: a later read can only see a higher counter, which raises the token proposed, never lowers it.
    quorumLockFencedAcquire: async (numKeys, ...rest) => {
      const n = numKeys / 2;
      const keys = rest.slice(0, n).map(String);
      const counters = rest.slice(n, numKeys).map(String);
      if ((await acquireAll(keys, String(rest[numKeys]), String(rest[numKeys + 1]))) !== 1) return -1;
      const read = await Promise.all(counters.map((c) => cluster.get(c)));
      return Math.max(0, ...read.map((c) => Number(c ?? 0)));
    },

    // The highest counter over every slot: below the token only when every slot was below it and
    // so raised. A slot raised while another was not only makes later tokens larger.
    quorumLockFence: async (numKeys, ...rest) => {
      const counters = rest.slice(0, numKeys).map(String);
      const token = String(rest[numKeys]);
      const highs = await Promise.all(
        bySlot(counters).map((g) => raw.quorumLockFence(g.length, ...pick(counters, g), token)),
      );
      return Math.max(0, ...highs);
    },

    // 0 when some slot's keys hold another value, else 2 when some key is gone, else 1. Slots that
    // extended meanwhile hold this lock's value: a longer TTL on keys that are ours.
    quorumLockExtend: async (numKeys, ...rest) => {
      const keys = rest.slice(0, numKeys).map(String);
      const args = rest.slice(numKeys);
      const replies = await Promise.all(
        bySlot(keys).map((g) => raw.quorumLockExtend(g.length, ...pick(keys, g), ...args)),
      );
      return replies.includes(0) ? 0 : replies.includes(2) ? 2 : 1;
    },

    quorumLockRepair: async (numKeys, ...rest) => {
      const keys = rest.slice(0, numKeys).map(String);
      const args = rest.slice(numKeys);
      const replies = await Promise.all(
        bySlot(keys).map((g) => raw.quorumLockRepair(g.length, ...pick(keys, g), ...args)),
      );
      return replies.every((r) => r === 1) ? 1 : 0;
    },

    // KEYS: the keys; ARGV: value, announce ('0', '1' or 's'), then one channel per key, each in its
    // key's slot (docs/cluster.md). Keys in several slots are announced only once every slot has
    // deleted them: a waiter woken by the first slot would find the others still held and spend an
    // attempt on it. SPUBLISH is routed to the channel's shard, PUBLISH reaches every node.
    quorumLockRelease: async (numKeys, ...rest) => {
      const keys = rest.slice(0, numKeys).map(String);
      const [value, announce, ...channels] = rest.slice(numKeys).map(String);
      const groups = bySlot(keys);
      if (groups.length === 1) return raw.quorumLockRelease(numKeys, ...rest);
      const replies = await Promise.all(
        groups.map((g) => raw.quorumLockRelease(g.length, ...pick(keys, g), value, '0')),
      );
      const deleted = replies.reduce((a, b) => a + b, 0);
      if (announce !== '0' && deleted > 0)
        await Promise.all(
          channels.map((channel) =>
            announce === 's' ? cluster.spublish(channel, value) : cluster.publish(channel, value),
          ),
        );
      return deleted;
    },
  };
}
