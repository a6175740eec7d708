/**
 * Three independent 3-shard Redis Clusters as the nodes against three single masters, in the same
 * run, interleaved round by round (each round runs every subject once, so machine noise falls on
 * both sides alike). A throughput and latency figure, not a test: nothing asserts on speed.
 *
 *   npm run build && npx tsc -p bench/tsconfig.json && node dist-bench/bench/clusters.js [--seconds 3] [--rounds 3] [--workers 8]
 *
 * Workloads (acquire then release at once, uncontended: each loop locks its own keys):
 *   sequential   one loop, one resource: the latency of a lock's two round trips (SET NX, release script)
 *   concurrent   `workers` loops, one resource each: throughput with the connections busy
 *   3 slots      one loop, three resources whose keys are in three shards: one script per slot on a cluster
 * "Where the time goes": the same single commands (`SET NX PX` then `DEL`) sent by ioredis to one
 * master and through a `Cluster` client, sequentially, so the client's routing cost and the extra
 * server processes show apart from the library. Writes docs/evidence/clusters.md and clusters.json.
 */
import { Cluster, Redis } from 'ioredis';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpus } from 'node:os';
import { Redlock } from 'nestjs-quorum-lock';
import { startRedisMasters } from '../tools/redis-masters.js';
import { clusterSlotOf, startRedisClusters } from '../tools/redis-clusters.js';
import { repoRoot } from './env.js';

const arg = (name: string, fallback: number): number =>
  Number(process.argv[process.argv.indexOf(name) + 1]) || fallback;
const SECONDS = arg('--seconds', 3);
const ROUNDS = arg('--rounds', 3);
const WORKERS = arg('--workers', 8);
const TTL = 10_000;

interface Sample {
  ops: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(loops: number, cycle: (loop: number, i: number) => Promise<void>): Promise<Sample> {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + SECONDS * 1_000;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      for (let i = 0; performance.now() < end; i++) {
        const t = performance.now();
        try {
          await cycle(loop, i);
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { ops: latencies.length / SECONDS, p50: at(0.5), p99: at(0.99), errors };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Three resource names whose `lock:` keys fall in the three thirds of the slot range (three shards). */
function acrossShards(prefix: string): string[] {
  const found = new Map<number, string>();
  for (let i = 0; found.size < 3; i++) {
    const name = `${prefix}-${i}`;
    const third = Math.floor((clusterSlotOf(`lock:${name}`) * 3) / 16_384);
    if (!found.has(third)) found.set(third, name);
  }
  return [...found.values()];
}

async function main(): Promise<void> {
  const [masters, clusters] = await Promise.all([startRedisMasters(3), startRedisClusters(3, { shards: 3 })]);
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const setups = {
    'three single masters': new Redlock({ nodes: masters.urls, restartGuard: false, logger: quiet }),
    'three 3-shard clusters': new Redlock({
      nodes: clusters.clusters.map((c) => ({ cluster: c.startupNodes })),
      restartGuard: false,
      logger: quiet,
    }),
  };
  const plain = new Redis(masters.urls[0]);
  const cluster = new Cluster(clusters.clusters[0].startupNodes);
  await Promise.all(Object.values(setups).map((r) => r.connect()));
  await cluster.set('warm', '1');

  const run = `${process.pid}`;
  const subjects: { name: string; setup: keyof typeof setups | 'raw'; run(): Promise<Sample> }[] = [];
  for (const name of Object.keys(setups) as (keyof typeof setups)[]) {
    const r = setups[name];
    subjects.push(
      {
        name: `${name} · sequential`,
        setup: name,
        run: () => measure(1, async (_, i) => (await r.acquire(`bench:cl:${run}:seq:${i % 64}`, TTL)).release()),
      },
      {
        name: `${name} · concurrent ×${WORKERS}`,
        setup: name,
        run: () =>
          measure(WORKERS, async (loop, i) =>
            (await r.acquire(`bench:cl:${run}:con:${loop}:${i % 16}`, TTL)).release(),
          ),
      },
      {
        name: `${name} · 3 resources in 3 slots`,
        setup: name,
        run: () =>
          measure(1, async (_, i) => (await r.acquire(acrossShards(`bench:cl:${run}:multi:${i % 32}`), TTL)).release()),
      },
    );
  }
  const rawCycle = (client: Redis | Cluster) => async (_: number, i: number) => {
    const key = `bench:cl:${run}:raw:${i % 64}`;
    await client.set(key, 'v', 'PX', TTL, 'NX');
    await client.del(key);
  };
  subjects.push(
    { name: 'raw SET NX + DEL · one master (ioredis Redis)', setup: 'raw', run: () => measure(1, rawCycle(plain)) },
    {
      name: 'raw SET NX + DEL · one cluster (ioredis Cluster)',
      setup: 'raw',
      run: () => measure(1, rawCycle(cluster)),
    },
  );
  // Precomputed names: the multi-resource workload should not time the slot search.
  for (let i = 0; i < 32; i++) acrossShards(`bench:cl:${run}:multi:${i}`);

  const samples = new Map<string, Sample[]>(subjects.map((s) => [s.name, []]));
  console.log(
    `bench clusters: ${ROUNDS} rounds × ${SECONDS} s per subject, interleaved; node ${process.version}, ${cpus().length} CPUs`,
  );
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of subjects) {
        const sample = await s.run();
        samples.get(s.name)!.push(sample);
        console.log(
          `  round ${round + 1} ${s.name}: ${sample.ops.toFixed(0)}/s p50 ${sample.p50.toFixed(2)} ms p99 ${sample.p99.toFixed(2)} ms errors ${sample.errors}`,
        );
      }
    }
  } finally {
    await Promise.all(Object.values(setups).map((r) => r.close()));
    plain.disconnect();
    cluster.disconnect();
    await Promise.all([masters.stop(), clusters.stop()]);
  }

  const summary = subjects.map((s) => {
    const list = samples.get(s.name)!;
    return {
      subject: s.name,
      opsPerSecond: median(list.map((x) => x.ops)),
      p50: median(list.map((x) => x.p50)),
      p99: median(list.map((x) => x.p99)),
      errors: list.reduce((a, x) => a + x.errors, 0),
    };
  });
  const row = (name: string) => summary.find((x) => x.subject === name)!;
  const ratios = ['sequential', `concurrent ×${WORKERS}`, '3 resources in 3 slots'].map((w) => {
    const m = row(`three single masters · ${w}`);
    const c = row(`three 3-shard clusters · ${w}`);
    return { workload: w, throughput: c.opsPerSecond / m.opsPerSecond, p50: c.p50 / m.p50 };
  });
  const rawM = row('raw SET NX + DEL · one master (ioredis Redis)');
  const rawC = row('raw SET NX + DEL · one cluster (ioredis Cluster)');
  const command = `npm run build && npx tsc -p bench/tsconfig.json && node dist-bench/bench/clusters.js --seconds ${SECONDS} --rounds ${ROUNDS} --workers ${WORKERS}`;
  const md = [
    '# Three 3-shard clusters against three single masters',
    '',
    `Command: \`${command}\` (also the last step of \`npm run bench\`).`,
    `Same run, ${ROUNDS} interleaved rounds of ${SECONDS} s per subject; medians over rounds. Node ${process.version}, ${cpus().length} CPUs, shared machine: compare within this table only.`,
    'Each cycle is acquire then release at once, uncontended, restart guard off; 3 masters = 3 redis-server processes, 3 clusters = 9.',
    '',
    '| subject | cycles/s | p50 ms | p99 ms | errors |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...summary.map(
      (x) =>
        `| ${x.subject} | ${x.opsPerSecond.toFixed(0)} | ${x.p50.toFixed(2)} | ${x.p99.toFixed(2)} | ${x.errors} |`,
    ),
    '',
    '| workload | clusters ÷ masters, throughput | clusters ÷ masters, p50 |',
    '| --- | ---: | ---: |',
    ...ratios.map((r) => `| ${r.workload} | ${r.throughput.toFixed(2)} | ${r.p50.toFixed(2)} |`),
    '',
    '## Where the time goes',
    '',
    `- A single-resource lock sends the same commands to a cluster as to a master: \`SET NX PX\` on acquire and one release script, each routed by ioredis to the shard of the key. The raw pair through a \`Cluster\` client costs ${rawC.p50.toFixed(2)} ms p50 against ${rawM.p50.toFixed(2)} ms to one master (+${(rawC.p50 - rawM.p50).toFixed(2)} ms): ioredis' slot lookup and per-shard connections. The sequential lock's p50 grows by ${(row('three 3-shard clusters · sequential').p50 - row('three single masters · sequential').p50).toFixed(2)} ms; the rest of that difference is the quorum waiting for the second of three \`Cluster\` clients instead of the second of three \`Redis\` clients.`,
    "- Not separated by this run, and both weighing on the concurrent ratio: the library corks a plain master's socket for one tick so that the commands of concurrent acquisitions leave in one write, while a `Cluster` has a socket per shard behind its router and is not corked; and the cluster side runs three times as many redis-server processes (9 against 3) on the same cores.",
    '- A lock whose resources are in three slots sends one script per slot on a cluster (three in parallel per node, then three releases) against one script per master: the price of all-or-nothing per cluster. Resource names that share a hash tag (`{order-42}:a`, `{order-42}:b`) are one call again.',
    '',
  ].join('\n');
  const out = join(repoRoot, 'docs', 'evidence');
  writeFileSync(join(out, 'clusters.md'), md);
  writeFileSync(
    join(out, 'clusters.json'),
    JSON.stringify(
      {
        command,
        seconds: SECONDS,
        rounds: ROUNDS,
        workers: WORKERS,
        node: process.version,
        summary,
        ratios,
        samples: Object.fromEntries(samples),
      },
      null,
      2,
    ),
  );
  console.log(md);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
