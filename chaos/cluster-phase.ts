/**
 * The cluster-failover phase of `npm run chaos` (`--phases cluster-failover`, or on its own:
 * `node dist-chaos/chaos/cluster-phase.js [--seconds N]`): three independent Redis Clusters of three
 * shards with one replica each are the nodes; contenders (separate `Redlock` instances, each with its
 * own connections) take and release a few hot locks, some held for most of their TTL, while a
 * nemesis SIGKILLs the primary of the shard serving a hot key on two clusters at once, waits for the
 * replicas to be promoted, deletes the key on the promoted replicas (what asynchronous replication
 * loses when the primary dies before the replica received the write), restarts the killed nodes
 * (they rejoin as replicas) and waits for them to sync.
 *
 * Run twice: with the restart guard off, as a control (two failovers among three clusters can then
 * grant a held lock again: the hazard), and with the guard on, where every violation is unexpected.
 * A violation: two holders of one resource whose holding intervals overlap, a holding interval
 * being from the acquisition's return to the earlier of its release call and its validity's end
 * (one process, one clock). Fencing tokens of successive holders of a resource must increase,
 * except where a failover lost the counter on a fence quorum of clusters in between (beyond the
 * guarantee of docs/fencing.md): the harness reads each hot resource's counter on the failed-over
 * clusters before and after each failover, and chaos/cluster-inversions.ts classifies.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Lock, Redlock as RedlockClass } from 'nestjs-quorum-lock';
import type { RedisMaster } from '../tools/redis-masters.js';
import { clusterSlotOf, startRedisClusters, type RedisCluster, type RedisClusters } from '../tools/redis-clusters.js';
import {
  classifyClusterHistory,
  type ClusterFailover,
  type ClusterHolding,
  type ClusterInversion,
  type CounterReading,
} from './cluster-inversions.js';

const TTL = 6_000;
const HOT = 2;
const CONTENDERS = 4;
const WORKERS = 2;
/** Share of holds that last most of the TTL: the holders a failover can betray. */
const LONG_SHARE = 0.25;
/** The library's default `fencingPrefix`: the counters the harness reads. */
const FENCE_PREFIX = 'fence:';
/** The fence quorum of the three clusters (the default majority). */
const FENCE_QUORUM = 2;

/** One pass of the phase (guard on or off). */
export interface ClusterPassResult {
  guard: boolean;
  seconds: number;
  holdings: number;
  failovers: number;
  /** Completed failovers by kind (FAILOVER_KINDS). */
  kinds: Partial<Record<FailoverKind, number>>;
  /** Failovers whose promotion did not complete in time (skipped). */
  skipped: number;
  violations: number;
  /** All token inversions, excused or not. */
  tokenInversions: number;
  /** Each inversion with its cause (chaos/cluster-inversions.ts). */
  inversions: ClusterInversion[];
  /** Inversions not explained by counters lost on a fence quorum of clusters: these fail the run. */
  unexcusedInversions: number;
  /** The completed and incomplete failovers, with the counters read around each. */
  failoverLog: ClusterFailover[];
  /** Acquisitions that gave up (timeouts while shards failed over): liveness, not safety. */
  gaveUp: number;
}

/** The whole phase: a control pass without the guard, then the guarded pass. */
export interface ClusterPhaseResult {
  passes: ClusterPassResult[];
  clusters: number;
  shards: number;
}

const HOST = '127.0.0.1';

async function ask(node: RedisMaster, ...args: string[]): Promise<string> {
  const client = new Redis({ host: HOST, port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return String(await client.call(args[0], ...args.slice(1)));
  } finally {
    client.disconnect();
  }
}

const isPrimary = async (node: RedisMaster): Promise<boolean> =>
  node.pid !== undefined && /role:master/.test(await ask(node, 'INFO', 'replication').catch(() => ''));
const isSyncedReplica = async (node: RedisMaster): Promise<boolean> =>
  node.pid !== undefined &&
  /role:slave[\s\S]*master_link_status:up/.test(await ask(node, 'INFO', 'replication').catch(() => ''));

async function until(ok: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (await ok()) return true;
    await sleep(100);
  }
  return false;
}

/** The two nodes of the shard that serves `key` (the roles change with each failover). */
function shardNodes(cluster: RedisCluster, key: string): RedisMaster[] {
  const slot = clusterSlotOf(key);
  const shard = cluster.shards.find((s) => s.slots[0] <= slot && slot <= s.slots[1])!;
  return [shard.primary, ...shard.replicas];
}

/**
 * How a shard serving a hot key changes hands, in turn:
 * - `kill`: the primary SIGKILLed, its replica promoted by the cluster, the key deleted there (a write
 *   asynchronous replication lost), the old primary restarted as a replica;
 * - `force` / `takeover`: a manual `CLUSTER FAILOVER FORCE` / `TAKEOVER` on the replica, the key then
 *   deleted on it (promoted without the key) while the old primary, alive, becomes its replica;
 * - `restart-empty`: the primary killed and restarted at once, before any promotion: the same node id
 *   (its nodes.conf is kept), a new `run_id`, no data.
 */
export const FAILOVER_KINDS = ['kill', 'force', 'takeover', 'restart-empty'] as const;
export type FailoverKind = (typeof FAILOVER_KINDS)[number];

/** The counter `key` on the primary of its shard (0 when absent), retried for `ms`; undefined when no read succeeded. */
async function readCounter(cluster: RedisCluster, key: string, ms: number): Promise<number | undefined> {
  let value: number | undefined;
  await until(async () => {
    for (const node of shardNodes(cluster, key)) {
      if (!(await isPrimary(node))) continue;
      const reply = await ask(node, 'GET', key).catch(() => undefined);
      if (reply !== undefined) value = reply === 'null' ? 0 : Number(reply);
    }
    return value !== undefined;
  }, ms);
  return value;
}

/** Each resource's fencing counter on each of `clusters` (numbered by `indexes`). */
async function readCounters(
  clusters: readonly RedisCluster[],
  indexes: readonly number[],
  resources: readonly string[],
  ms: number,
): Promise<{ resource: string; cluster: number; value?: number }[]> {
  return Promise.all(
    clusters.flatMap((c, i) =>
      resources.map(async (resource) => ({
        resource,
        cluster: indexes[i],
        value: await readCounter(c, FENCE_PREFIX + resource, ms),
      })),
    ),
  );
}

/**
 * Changes the shard serving `key` on each cluster (see FAILOVER_KINDS), losing the key there;
 * resolves once the shards are healthy again. `ok`: every promotion completed. `counters`: the
 * resources' fencing counters on these clusters just before and once each shard has a primary again
 * (the counter's shard may be another one, untouched).
 */
async function failOver(
  clusters: readonly RedisCluster[],
  indexes: readonly number[],
  key: string,
  kind: FailoverKind,
  resources: readonly string[],
): Promise<{ ok: boolean; counters: CounterReading[] }> {
  const shards = clusters.map((c) => shardNodes(c, key));
  const primaries: RedisMaster[] = [];
  for (const nodes of shards) {
    const primary = (await Promise.all(nodes.map(isPrimary))).indexOf(true);
    if (primary < 0) return { ok: false, counters: [] };
    primaries.push(nodes[primary]);
  }
  const before = await readCounters(clusters, indexes, resources, 2_000);
  const replicas = shards.map((nodes, i) => nodes.find((n) => n !== primaries[i])!);
  let promoted: (RedisMaster | undefined)[];
  let after: Awaited<ReturnType<typeof readCounters>> | undefined;
  if (kind === 'restart-empty') {
    await Promise.all(primaries.map(async (p) => (await p.kill(), p.restart())));
    promoted = await Promise.all(
      primaries.map(async (p) => ((await until(() => isPrimary(p), 20_000)) ? p : undefined)),
    );
  } else if (kind === 'kill') {
    await Promise.all(primaries.map((p) => p.kill()));
    promoted = await Promise.all(
      replicas.map(async (replica) => ((await until(() => isPrimary(replica), 20_000)) ? replica : undefined)),
    );
    // Asynchronous replication: the replica may not have the lock the dead primary granted.
    await Promise.all(promoted.map((n) => (n ? ask(n, 'DEL', key).catch(() => '') : Promise.resolve(''))));
    after = await readCounters(clusters, indexes, resources, 10_000);
    await Promise.all(primaries.map((p) => p.restart()));
  } else {
    await Promise.all(
      replicas.map((r) => ask(r, 'CLUSTER', 'FAILOVER', kind === 'force' ? 'FORCE' : 'TAKEOVER').catch(() => '')),
    );
    promoted = await Promise.all(
      replicas.map(async (replica) => ((await until(() => isPrimary(replica), 20_000)) ? replica : undefined)),
    );
    // Promoted without the key (the write had not reached it).
    await Promise.all(promoted.map((n) => (n ? ask(n, 'DEL', key).catch(() => '') : Promise.resolve(''))));
  }
  after ??= await readCounters(clusters, indexes, resources, 10_000);
  const others = shards.map((nodes, i) => nodes.find((n) => n !== promoted[i]));
  await Promise.all(others.map((n) => (n ? until(() => isSyncedReplica(n), 20_000) : Promise.resolve(false))));
  await Promise.all(clusters.map((c) => c.waitUntilOk(20_000).catch(() => undefined)));
  const counters = before.map((b, i) => ({
    resource: b.resource,
    cluster: b.cluster,
    before: b.value,
    after: after[i].value,
  }));
  return { ok: promoted.every(Boolean), counters };
}

async function runPass(
  Redlock: typeof RedlockClass,
  clusters: RedisClusters,
  guard: boolean,
  seconds: number,
  log: (line: string) => void,
) {
  const nodes = clusters.clusters.map((c) => ({ cluster: c.startupNodes }));
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const contenders = Array.from(
    { length: CONTENDERS },
    () =>
      new Redlock({
        nodes,
        ttl: TTL,
        fencing: true,
        restartGuard: guard ? { largestTtl: TTL } : false,
        retryDelay: 100,
        retryJitter: 50,
        retryCount: Infinity,
        acquireTimeout: 2 * TTL,
        commandTimeout: 300,
        logger: quiet,
      }),
  );
  await Promise.all(contenders.map((r) => r.connect()));
  if (guard) await Promise.all(contenders.map((r) => r.whenTrusted({ timeout: 30_000 })));
  const pass = `${guard ? 'guarded' : 'control'}-${process.pid}`;
  const resources = Array.from({ length: HOT }, (_, i) => `chaos-cluster:${pass}:${i}`);
  const holdings: ClusterHolding[] = [];
  /** Resources in a long hold now: the nemesis strikes one of them, when any, so that each failover can betray a holder. */
  const longHeld = new Set<string>();
  let gaveUp = 0;
  const end = performance.now() + seconds * 1_000;
  const workers = contenders.flatMap((redlock, client) =>
    Array.from({ length: WORKERS }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const resource = resources[(client + w + i) % HOT];
        let lock: Lock;
        const asked = performance.now();
        try {
          lock = await redlock.acquire(resource, TTL);
        } catch {
          gaveUp++;
          continue;
        }
        const start = performance.now();
        const validUntil = start + lock.validity;
        const long = Math.random() < LONG_SHARE;
        if (long) longHeld.add(resource);
        await sleep(long ? TTL * (0.5 + Math.random() * 0.4) : 5 + Math.random() * 35);
        if (long) longHeld.delete(resource);
        holdings.push({
          resource,
          client,
          asked,
          start,
          end: Math.min(performance.now(), validUntil),
          token: lock.fencingToken,
        });
        await lock.release().catch(() => undefined);
      }
    }),
  );
  let failovers = 0;
  let skipped = 0;
  const failoverLog: ClusterFailover[] = [];
  const kinds: Partial<Record<FailoverKind, number>> = {};
  const nemesis = (async () => {
    for (let round = 0; performance.now() < end - 2_000; round++) {
      // Past the guard's distrust of the last pair (TTL plus drift), so that the guarded pass has
      // trusted quorums between failovers, as the control pass does.
      await sleep(TTL + 500 + Math.random() * 1_000);
      const waitUntil = performance.now() + TTL;
      while (longHeld.size === 0 && performance.now() < waitUntil) await sleep(20);
      const key = `lock:${[...longHeld][0] ?? resources[round % HOT]}`;
      const indexes = [round % 3, (round + 1) % 3];
      const pair = indexes.map((c) => clusters.clusters[c]);
      const kind = FAILOVER_KINDS[round % FAILOVER_KINDS.length];
      const t = performance.now();
      const { ok, counters } = await failOver(pair, indexes, key, kind, resources);
      if (ok) {
        failovers++;
        kinds[kind] = (kinds[kind] ?? 0) + 1;
      } else skipped++;
      const n = failovers + skipped;
      failoverLog.push({ n, kind, clusters: indexes, start: t, end: performance.now(), counters });
      const back = counters
        .filter((r) => r.before !== undefined && r.after !== undefined && r.after < r.before)
        .map((r) => `${r.resource.slice(r.resource.lastIndexOf(':') + 1)}@${r.cluster} ${r.before}→${r.after}`);
      log(
        `  failover ${n} (${kind}): ${key} on clusters ${indexes.join(', ')} (${((performance.now() - t) / 1000).toFixed(1)} s); counters went back: ${back.join(', ') || 'none'}`,
      );
    }
  })();
  await Promise.all([...workers, nemesis]);
  await Promise.all(contenders.map((r) => r.close()));

  const verdict = classifyClusterHistory(holdings, failoverLog, FENCE_QUORUM);
  for (const i of verdict.inversions)
    log(
      `  token inversion on ${i.resource}: ${i.earlier.token} then ${i.later.token} (${i.excused ? 'excused' : 'UNEXCUSED'}): ${i.cause}`,
    );
  return {
    guard,
    seconds,
    holdings: holdings.length,
    failovers,
    kinds,
    skipped,
    tokenInversions: verdict.inversions.length,
    ...verdict,
    gaveUp,
    failoverLog,
  };
}

/**
 * Starts the clusters, runs the control pass (guard off) and the guarded pass, stops everything.
 *
 * @example
 * const result = await runClusterPhase({ seconds: 30, log: console.log });
 */
export async function runClusterPhase(options: {
  seconds: number;
  log: (line: string) => void;
  /** The library to load (a planted bug's compiled copy, chaos/mutants.ts); by default the built package. */
  lib?: string;
  /** The guarded pass only (a planted bug's pass: the control shows nothing new). */
  guardedOnly?: boolean;
}): Promise<ClusterPhaseResult> {
  const { Redlock } = (await import(options.lib ?? 'nestjs-quorum-lock')) as { Redlock: typeof RedlockClass };
  const clusters = await startRedisClusters(3, { shards: 3, replicas: 1 });
  try {
    const passes: ClusterPassResult[] = [];
    for (const guard of options.guardedOnly ? [true] : [false, true]) {
      options.log(
        `cluster-failover, restart guard ${guard ? 'on' : 'off'}: 3 clusters × 3 shards + replicas, ${CONTENDERS} contenders`,
      );
      const pass = await runPass(Redlock, clusters, guard, options.seconds, options.log);
      options.log(
        `  ${pass.holdings} holdings, ${pass.failovers} double failovers (${pass.skipped} skipped), violations ${pass.violations}, token inversions ${pass.tokenInversions} (${pass.tokenInversions - pass.unexcusedInversions} excused), gave up ${pass.gaveUp}`,
      );
      passes.push(pass);
    }
    return { passes, clusters: 3, shards: 3 };
  } finally {
    await clusters.stop();
  }
}

/**
 * Problems that fail the run: with the guard on, any violation, any token inversion not excused by
 * counters lost on a fence quorum of clusters, or no failover at all.
 *
 * @example
 * for (const p of clusterProblems(result)) console.log(`FAIL ${p}`);
 */
export function clusterProblems(result: ClusterPhaseResult): string[] {
  const problems: string[] = [];
  for (const p of result.passes.filter((x) => x.guard)) {
    if (p.violations) problems.push(`cluster-failover (guard on): ${p.violations} mutual-exclusion violations`);
    if (p.unexcusedInversions)
      problems.push(
        `cluster-failover (guard on): ${p.unexcusedInversions} unexcused token inversions (${p.tokenInversions - p.unexcusedInversions} excused: counters lost on a quorum)`,
      );
    if (p.failovers === 0) problems.push('cluster-failover (guard on): no failover completed');
  }
  return problems;
}

/** The phase's section of the report. */
export function renderCluster(result: ClusterPhaseResult, command: string): string {
  return [
    '## Cluster failovers (three 3-shard clusters with replicas as the nodes)',
    '',
    `\`${command}\`. Each failover changes the shard serving a hot key (one in a long hold, when any) on two of the three clusters, in turn: the primary SIGKILLed and its replica promoted by the cluster, then the key deleted on it (a write asynchronous replication lost) and the old primary restarted as a replica; a manual \`CLUSTER FAILOVER FORCE\`, then \`TAKEOVER\`, on the replica, the key then deleted on it; the primary restarted empty in place (same node id, new \`run_id\`) before any promotion. TTL ${TTL} ms, ${CONTENDERS} contenders × ${WORKERS} workers on ${HOT} hot keys, ${Math.round(LONG_SHARE * 100)} % of holds for 50–90 % of the TTL, fencing on.`,
    '',
    '| restart guard | seconds | holdings | double failovers (by kind) | violations | token inversions | of which excused (counter lost on a quorum) | acquisitions given up |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...result.passes.map(
      (p) =>
        `| ${p.guard ? 'on' : 'off (control)'} | ${p.seconds} | ${p.holdings} | ${p.failovers}${p.skipped ? ` (+${p.skipped} incomplete)` : ''} (${Object.entries(
          p.kinds ?? {},
        )
          .map(([k, n]) => `${k} ${n}`)
          .join(
            ', ',
          )}) | ${p.violations} | ${p.tokenInversions} | ${p.tokenInversions - p.unexcusedInversions} | ${p.gaveUp} |`,
    ),
    '',
    'With the guard off, violations are the hazard the guard exists for (expected); with it on, every violation would be unexpected. Acquisitions given up are waits that hit `acquireTimeout` while shards were failing over or distrusted.',
    '',
    `Token inversions: the harness reads each hot resource's fencing counter on the failed-over clusters just before each failover and once the shard has a primary again. An inversion is excused only when, between the two holdings, the counter went back below the earlier token on at least a fence quorum (${FENCE_QUORUM} of 3) of clusters: the later grant's quorum could then carry only counters that forgot it, beyond the guarantee of docs/fencing.md (a restart empty or a lagging replica promoted loses the counter for good). With the guard on, any other inversion fails the run. Each inversion, with its cause:`,
    '',
    ...result.passes.flatMap((p) =>
      p.inversions.map(
        (i) =>
          `- guard ${p.guard ? 'on' : 'off'}, \`${i.resource}\`: token ${i.earlier.token} (client ${i.earlier.client}) then ${i.later.token} (client ${i.later.client}), ${i.excused ? 'excused' : '**unexcused**'}: ${i.cause}`,
      ),
    ),
    ...(result.passes.some((p) => p.inversions.length) ? [''] : []),
  ].join('\n');
}

const HERE = dirname(fileURLToPath(import.meta.url));
if (process.argv[1] && resolve(process.argv[1]) === join(HERE, 'cluster-phase.js')) {
  const at = process.argv.indexOf('--seconds');
  const seconds = at > 0 ? Number(process.argv[at + 1]) : 40;
  const command = `node dist-chaos/chaos/cluster-phase.js --seconds ${seconds}`;
  const result = await runClusterPhase({ seconds, log: (line) => console.log(line) });
  const out = join(HERE, '..', '..', 'docs', 'evidence');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'cluster-chaos.md'), `# Chaos: cluster failovers\n\n${renderCluster(result, command)}`);
  const problems = clusterProblems(result);
  for (const p of problems) console.log(`FAIL ${p}`);
  process.exit(problems.length ? 1 : 0);
}
