import type { Cluster, Redis } from 'ioredis';
import { combineShardInfos } from './cluster-probe.js';
import { infoField, uptimeMsOf } from '../info-field.js';
import type { IdentityChange } from '../health/restart-guard.js';

/**
 * One shard of a cluster node as the restart guard vetted it: a run of slots, the primary serving
 * them, and that server's identity (node id, `run_id`, `master_replid`) read over the client's own
 * connection to it.
 */
export interface ShardIdentity {
  readonly first: number;
  readonly last: number;
  /** `host:port` of the primary, as the client routes to it. */
  readonly owner: string;
  readonly nodeId: string;
  readonly runId: string;
  readonly replId: string;
  /** Its `master_replid2`: all zeros unless it was promoted from a replica (the history it continues). */
  readonly replId2: string;
  /** Its uptime when read, one second short (Redis rounds down to whole seconds). */
  readonly uptimeMs: number;
}

/**
 * How the client routed each run of slots when its shards were vetted: ioredis' slot-map entry
 * (an array shared by the run, whose first element a `MOVED` reply rewrites in place), the
 * connection and its socket. A reply counts only while all of these are still the ones vetted.
 */
interface Route {
  readonly first: number;
  readonly last: number;
  readonly owner: string;
  entry: string[];
  readonly node: Redis;
  readonly stream: unknown;
}

/** What {@link readClusterIdentity} read: the shards, the routes they were read over, and the combined `INFO`. */
export interface ClusterIdentity {
  readonly shards: readonly ShardIdentity[];
  readonly routes: readonly Route[];
  /** The shards' `INFO` combined into one master's (`combineShardInfos`). */
  readonly info: string;
}

/** What changed in a cluster node's shards between two readings, for the restart guard. */
export interface ShardChange {
  readonly change: IdentityChange;
  /** The uptime that dates the change (`restarted`: the restarted primary's). */
  readonly uptimeMs: number;
  /** The shard that changed, e.g. `slots 0-8191 at 127.0.0.1:7003 (was 127.0.0.1:7000)`. */
  readonly shard?: string;
}

interface Internals {
  slots: (string[] | undefined)[];
  refreshSlotsCache?: () => void;
  connectionPool?: { getInstanceByKey(key: string): Redis | undefined };
}

function internals(cluster: Cluster): Internals {
  return cluster as unknown as Internals;
}

function streamOf(node: Redis | undefined): unknown {
  return (node as unknown as { stream?: unknown } | undefined)?.stream;
}

/** The connection the client uses for `owner` now. */
function connectionOf(cluster: Cluster, owner: string): Redis | undefined {
  const pool = internals(cluster).connectionPool;
  if (pool) return pool.getInstanceByKey(owner);
  return cluster.nodes('all').find((n) => `${n.options.host}:${n.options.port}` === owner);
}

function slotsText(first: number, last: number): string {
  return first === last ? `slot ${first}` : `slots ${first}-${last}`;
}

/** The slot ranges `CLUSTER SLOTS` says the node `nodeId` (at `owner`) serves as primary. */
function claimedBy(reply: unknown[][], nodeId: string, owner: string): [number, number][] {
  const ranges: [number, number][] = [];
  for (const entry of reply) {
    const [first, last, primary] = entry as [number, number, (string | number | Buffer)[] | undefined];
    const id = primary?.[2];
    // Redis before 4.0 gives no node id: the address then identifies the primary.
    const mine = id !== undefined ? String(id) === nodeId : `${String(primary?.[0])}:${String(primary?.[1])}` === owner;
    if (mine) ranges.push([Number(first), Number(last)]);
  }
  return ranges.sort((a, b) => a[0] - b[0]);
}

/** True when `ranges` (sorted) cover every slot from `first` to `last`. */
function covers(ranges: readonly [number, number][], first: number, last: number): boolean {
  let next = first;
  for (const [a, b] of ranges) {
    if (a > next) break;
    if (b >= next) next = b + 1;
    if (next > last) return true;
  }
  return next > last;
}

/** The runs of consecutive slots that share one slot-map entry, with the primary it routes to. */
function runsOf(cluster: Cluster): { first: number; last: number; owner: string; entry: string[] }[] {
  const slots = internals(cluster).slots;
  const runs: { first: number; last: number; owner: string; entry: string[] }[] = [];
  for (let s = 0; s < slots.length; s++) {
    const entry = slots[s];
    const owner = entry?.[0];
    if (entry === undefined || owner === undefined) continue;
    const run = runs[runs.length - 1];
    if (run && run.entry === entry && run.last === s - 1) run.last = s;
    else runs.push({ first: s, last: s, owner, entry });
  }
  return runs;
}

/**
 * Reads the identity of every shard primary of `cluster`, over the client's own connection to it:
 * `INFO` (run_id, master_replid, uptime) and `CLUSTER MYID`. Rejects when the client's routing or a
 * connection changed while reading (the reading would not describe the servers votes come from).
 *
 * @example
 * const { shards } = await readClusterIdentity(cluster); // [{ first: 0, last: 8191, owner: '127.0.0.1:7000', … }]
 */
export async function readClusterIdentity(cluster: Cluster): Promise<ClusterIdentity> {
  const runs = runsOf(cluster);
  if (runs.length === 0) throw new Error('the cluster has no slot map yet');
  const owners = [...new Set(runs.map((r) => r.owner))];
  const read = new Map<
    string,
    { node: Redis; stream: unknown; info: string; nodeId: string; claims: [number, number][] }
  >();
  await Promise.all(
    owners.map(async (owner) => {
      const node = connectionOf(cluster, owner);
      if (!node) throw new Error(`no connection to shard primary ${owner}`);
      const [info, nodeId, claims] = await Promise.all([
        node.info(),
        node.call('CLUSTER', 'MYID') as Promise<string>,
        node.call('CLUSTER', 'SLOTS') as Promise<unknown[][]>,
      ]);
      read.set(owner, {
        node,
        stream: streamOf(node),
        info,
        nodeId: String(nodeId),
        claims: claimedBy(claims, String(nodeId), owner),
      });
    }),
  );
  const slots = internals(cluster).slots;
  const routes: Route[] = runs.map((run) => {
    const { node, stream } = read.get(run.owner)!;
    // Rerouted or reconnected while reading: the replies may not describe the server now routed to.
    if (slots[run.first] !== run.entry || run.entry[0] !== run.owner || connectionOf(cluster, run.owner) !== node)
      throw new Error(`the routing of ${slotsText(run.first, run.last)} changed while its shard was read`);
    if (streamOf(node) !== stream) throw new Error(`the connection to ${run.owner} changed while it was read`);
    // The client's map must agree with the server: a MOVED rewrites a whole run's entry in ioredis'
    // map, so until the next refresh the map may route slots to a primary that serves only one of them.
    if (!covers(read.get(run.owner)!.claims, run.first, run.last)) {
      internals(cluster).refreshSlotsCache?.();
      throw new Error(`${run.owner} does not serve ${slotsText(run.first, run.last)}: the client's slot map is stale`);
    }
    return { ...run, node, stream };
  });
  const shards: ShardIdentity[] = runs.map((run) => {
    const { info, nodeId } = read.get(run.owner)!;
    return {
      first: run.first,
      last: run.last,
      owner: run.owner,
      nodeId,
      runId: infoField(info, 'run_id') ?? '?',
      replId: infoField(info, 'master_replid') ?? '?',
      replId2: infoField(info, 'master_replid2') ?? '0',
      uptimeMs: uptimeMsOf(info),
    };
  });
  const firstSlot = new Map<string, number>();
  for (const run of runs) if (!firstSlot.has(run.owner)) firstSlot.set(run.owner, run.first);
  const info = combineShardInfos(
    cluster,
    [...firstSlot].sort((a, b) => a[1] - b[1]).map(([owner, slot]) => ({ slot, info: read.get(owner)!.info })),
  );
  return { shards, routes, info };
}

/**
 * Whether the client still routes every slot to the connection its shard was vetted over, or what
 * changed (`undefined` when nothing did). Synchronous and cheap (one check per run of slots), so it
 * runs on every reply before the vote counts: a `MOVED` rewrites the slot-map entry before the
 * command is resent, and a restarted server is reached over a new connection, so a reply from a
 * server not vetted never passes.
 *
 * @example
 * const changed = routeChange(cluster, identity); // 'slots 0-8191 now routed to 127.0.0.1:7003 (was 127.0.0.1:7000)'
 */
export function routeChange(cluster: Cluster, identity: ClusterIdentity): string | undefined {
  const slots = internals(cluster).slots;
  for (const route of identity.routes) {
    const where = slotsText(route.first, route.last);
    if (route.entry[0] !== route.owner)
      return `${where} now routed to ${route.entry[0] ?? 'no node'} (was ${route.owner})`;
    if (slots[route.first] !== route.entry || slots[route.last] !== route.entry)
      return `${where}: the slot map changed (was ${route.owner})`;
    const node = connectionOf(cluster, route.owner);
    if (node !== route.node || streamOf(node) !== route.stream) return `${where} at ${route.owner}: reconnected`;
  }
  return undefined;
}

/**
 * After a slot-map refresh: when it routes every run of slots to the same primaries as vetted, the
 * vetted routes follow the new map's entries (a refresh replaces them) and true is returned; false
 * when the map differs (the shards must be read again).
 *
 * @example
 * cluster.on('refresh', () => adoptRefreshedMap(cluster, identity) || revet());
 */
export function adoptRefreshedMap(cluster: Cluster, identity: ClusterIdentity): boolean {
  const runs = runsOf(cluster);
  const routes = identity.routes;
  if (runs.length !== routes.length) return false;
  for (let k = 0; k < runs.length; k++) {
    const [run, route] = [runs[k], routes[k]];
    if (run.first !== route.first || run.last !== route.last || run.owner !== route.owner) return false;
  }
  for (let k = 0; k < runs.length; k++) routes[k].entry = runs[k].entry;
  return true;
}

/**
 * Compares two readings of a cluster node's shards, slot by slot: a slot now served by another node
 * that served other slots before is `slot-moved`; by a node that served none (a promoted replica), or
 * by the same node with another `master_replid` (demoted and promoted again), `failover`; by the
 * same node with another `run_id`, `restarted`. The most serious change wins (a failover or a
 * moved slot is distrusted for the whole guard, a restart from the server's start).
 *
 * @example
 * compareShards(before.shards, after.shards); // { change: 'failover', uptimeMs: …, shard: 'slots 0-8191 at … (was …)' }
 */
export function compareShards(before: readonly ShardIdentity[], after: readonly ShardIdentity[]): ShardChange {
  const owners = new Set(before.map((s) => s.nodeId));
  const youngest = Math.min(...after.map((s) => s.uptimeMs));
  let restarted: ShardChange | undefined;
  for (const now of after) {
    let covered = 0;
    for (const old of before) {
      const first = Math.max(now.first, old.first);
      const last = Math.min(now.last, old.last);
      if (first > last) continue;
      covered += last - first + 1;
      const where = `${slotsText(first, last)} at ${now.owner}`;
      if (old.nodeId !== now.nodeId) {
        return {
          change: owners.has(now.nodeId) ? 'slot-moved' : 'failover',
          uptimeMs: now.uptimeMs,
          shard: `${where} (was ${old.owner})`,
        };
      }
      if (old.runId !== now.runId) {
        if (!restarted || now.uptimeMs < restarted.uptimeMs)
          restarted = { change: 'restarted', uptimeMs: now.uptimeMs, shard: `${where} (restarted)` };
      } else if (old.replId !== now.replId && !/^0+$/.test(now.replId2)) {
        // A new history that continues another (master_replid2 set): it was a replica and was promoted
        // again, resynchronised from another primary meanwhile. A primary that only gained its first
        // replica also takes a new master_replid, but with master_replid2 cleared: no data changed.
        return { change: 'failover', uptimeMs: now.uptimeMs, shard: `${where} (promoted again)` };
      }
    }
    if (covered < now.last - now.first + 1)
      return {
        change: 'slot-moved',
        uptimeMs: now.uptimeMs,
        shard: `${slotsText(now.first, now.last)} at ${now.owner} (not served before)`,
      };
  }
  return restarted ?? { change: 'same', uptimeMs: youngest };
}
