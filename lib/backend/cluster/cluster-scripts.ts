import type { Cluster } from 'ioredis';
import { defineScripts, type LockScripts } from '../../lua/scripts.js';
import { SCRIPTS, type ScriptName } from '../../lua/scripts.generated.js';
import { SLOT_RULES, type SlotRule } from '../../lua/slot-rules.js';
import { bySlot } from './cluster-slot.js';

/** Re-exported for code that grouped keys itself; call `master.scripts` instead, which splits by the script's rule. */
export { bySlot };

type Arg = string | number;
type Run = (numKeys: number, ...keysThenArgs: Arg[]) => Promise<unknown>;

const pick = <T>(items: readonly T[], at: readonly number[]): T[] => at.map((i) => items[i]);

/** The node's one reply from the slots' replies, by the script's declared rule. */
function merge(rule: SlotRule['merge'], replies: readonly unknown[]): unknown {
  if (rule === 'sum') return replies.reduce<number>((a, r) => a + Number(r), 0);
  if (rule === 'max') return Math.max(0, ...replies.map(Number));
  if (rule === 'first' || rule === 'one-slot') return replies[0];
  return rule.find((wanted) => replies.includes(wanted)) ?? replies[0];
}

/** One script's calls split by slot: one call per slot group, in parallel, merged by `rule`. */
function splitBySlot(cluster: Cluster, rule: SlotRule, run: Run, undo?: Run): Run {
  const columns = rule.columns ?? 1;
  return async (numKeys, ...rest) => {
    const n = numKeys / columns;
    const lists = Array.from({ length: columns }, (_, c) => rest.slice(c * n, (c + 1) * n).map(String));
    const groups = bySlot(lists[0]);
    if (groups.length === 1) return run(numKeys, ...rest);
    const args = rest.slice(numKeys);
    const perKey = rule.perKeyArgsFrom ?? args.length;
    const settled = await Promise.allSettled(
      groups.map((g) => {
        const a = [...args.slice(0, perKey), ...pick(args.slice(perKey), g)];
        if (rule.countArg !== undefined) a[rule.countArg] = g.length;
        if (rule.announceAfterAll !== undefined) a[rule.announceAfterAll] = '0';
        return run(g.length * columns, ...lists.flatMap((list) => pick(list, g)), ...a);
      }),
    );
    const replies = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (undo && (failure || replies.some((r) => r !== 1))) {
      const granted = groups.filter((_, i) => replies[i] === 1);
      await Promise.allSettled(granted.map((g) => undo(g.length, ...pick(lists[0], g), args[0], '0')));
    }
    if (failure) throw failure.reason;
    const merged = merge(rule.merge, replies);
    const flag = rule.announceAfterAll === undefined ? '0' : String(args[rule.announceAfterAll]);
    // Announced once every slot has deleted: a waiter woken by the first slot would find the others held.
    if (flag !== '0' && Number(merged) > 0) {
      const value = String(args[0]);
      const channels = args.slice(perKey).map(String);
      await Promise.all(channels.map((c) => (flag === 's' ? cluster.spublish(c, value) : cluster.publish(c, value))));
    }
    return merged;
  };
}

/** Script `via` on the first half of the keys; on its 1, the highest of the second half read (GET), else -1. */
function thenRead(cluster: Cluster, rule: SlotRule, via: Run): Run {
  return async (numKeys, ...rest) => {
    const n = numKeys / 2;
    if ((await via(n, ...rest.slice(0, n), rest[numKeys], rest[numKeys + 1])) !== 1) return -1;
    const read = await Promise.all(rest.slice(n, numKeys).map((key) => cluster.get(String(key))));
    return merge(
      rule.merge,
      read.map((c) => c ?? 0),
    );
  };
}

/**
 * The library's scripts on a Redis Cluster node, with the same replies as on a single master, by
 * one generic rule: a call's keys are grouped by hash slot, the script runs once per slot (in
 * parallel), and the replies merge as the script declares (`SLOT_RULES`, lib/lua/slot-rules.ts).
 * A call whose keys share one slot goes out as it is. All-or-nothing scripts undo the slots that
 * granted when another refused or failed, before the node answers (docs/cluster.md, "Slots").
 *
 * @example
 * const scripts = clusterScripts(new Cluster([{ host: '10.0.0.1', port: 7000 }]));
 * await scripts.quorumLockAcquire(2, 'lock:a', 'lock:b', value, '10000'); // 1: both taken
 */
export function clusterScripts(cluster: Cluster): LockScripts {
  const raw = defineScripts(cluster) as unknown as Record<string, Run>;
  const plain = (name: ScriptName): Run => raw[SCRIPTS[name].command].bind(cluster);
  const slotted = (name: ScriptName): Run => {
    const rule = SLOT_RULES[name];
    if (rule.via) return thenRead(cluster, rule, slotted(rule.via));
    if (rule.merge === 'one-slot') return plain(name);
    return splitBySlot(cluster, rule, plain(name), rule.undo && plain(rule.undo));
  };
  const names = Object.keys(SCRIPTS) as ScriptName[];
  return Object.fromEntries(names.map((name) => [SCRIPTS[name].command, slotted(name)])) as unknown as LockScripts;
}
