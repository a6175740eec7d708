/**
 * Chaos for counting and read-write locks: a semaphore phase (`limit: 2`) and a read-write phase
 * (`mode: 'read' | 'write'`), each under the nemesis's fault types, 5 masters behind TCP proxies,
 * several Redlock instances (one per simulated application, each with its own proxied connections).
 * An independent check counts, on one monotonic clock, how many holders believed they held each
 * resource at once: a holder believes from the moment its callback starts until it returns or its
 * `signal` aborts (it stops at once when it does). A violation is more than `limit` permit holders,
 * or a writer beside anyone. Violations inside a fault the configuration cannot tolerate (the
 * nemesis marks those bands `beyond`) are expected; any other is a failure.
 *
 *   npm run build && npx tsc -p chaos/tsconfig.json && node dist-chaos/chaos/shared-locks.js [--seconds 8]
 *
 * Faults: none, kill-restart (restart guard on), master-pause, key-loss, proxy-delay, proxy-drop,
 * proxy-cut. client-pause needs client processes (the main harness) and is not run here.
 * Exits 1 on an unexpected violation.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock, type Lock } from 'nestjs-quorum-lock';
import { startRedisMasters } from '../tools/redis-masters.js';
import { sharedNow } from './clock.js';
import { Cluster, Inspector, schedules, type ClientHandle, type FaultKind, type NemesisContext } from './nemesis.js';
import { ProxyFarm } from './proxy.js';
import type { ClientPause, FaultBand } from './types.js';

const TTL = 1_000;
const LIMIT = 2;
const RESOURCES = 2;
const CLIENTS = 4;
const FAULTS: FaultKind[] = [
  'none',
  'kill-restart',
  'master-pause',
  'key-loss',
  'proxy-delay',
  'proxy-drop',
  'proxy-cut',
];

type Kind = 'semaphore' | 'read-write';
interface Hold {
  resource: number;
  role: 'permit' | 'read' | 'write';
  from: number;
  to: number;
}
interface PhaseRow {
  kind: Kind;
  fault: FaultKind;
  holds: number;
  failures: number;
  mostPermits: number;
  mostReaders: number;
  unexpected: number;
  expected: number;
  bands: string[];
}

// The flags of `npm run chaos` that apply here (--quick, --seconds, --phases); others are ignored.
const argv = process.argv.slice(2);
const seconds = Number(argv[argv.indexOf('--seconds') + 1]) || (argv.includes('--quick') ? 4 : 6);
const only = argv.includes('--phases') ? argv[argv.indexOf('--phases') + 1]?.split(',') : undefined;

/** Holders at once, per resource: the largest count, and the overlaps that break the lock's rule. */
function check(kind: Kind, holds: readonly Hold[], bands: readonly FaultBand[]) {
  let mostPermits = 0;
  let mostReaders = 0;
  const violations: number[] = [];
  for (let r = 0; r < RESOURCES; r++) {
    const events = holds
      .filter((h) => h.resource === r)
      .flatMap((h) => [
        { at: h.from, d: 1, h },
        { at: h.to, d: -1, h },
      ])
      .sort((a, b) => a.at - b.at || a.d - b.d); // ends before starts at the same instant
    let permits = 0;
    let readers = 0;
    let writers = 0;
    for (const e of events) {
      if (e.h.role === 'permit') permits += e.d;
      else if (e.h.role === 'read') readers += e.d;
      else writers += e.d;
      mostPermits = Math.max(mostPermits, permits);
      mostReaders = Math.max(mostReaders, readers);
      if (e.d > 0 && (kind === 'semaphore' ? permits > LIMIT : writers > 1 || (writers > 0 && readers > 0)))
        violations.push(e.at);
    }
  }
  const beyond = bands.filter((b) => b.beyond);
  const explained = (at: number) => beyond.some((b) => at >= b.start - TTL && at <= (b.healedAt || b.end) + 2 * TTL);
  return {
    mostPermits,
    mostReaders,
    unexpected: violations.filter((v) => !explained(v)).length,
    expected: violations.filter(explained).length,
  };
}

async function runPhase(kind: Kind, fault: FaultKind, cluster: Cluster, phase: string): Promise<PhaseRow> {
  await cluster.healAll();
  await cluster.waitUptime(2);
  const redlocks: Redlock[] = [];
  const handles = Array.from({ length: CLIENTS }, (_, i) => ({ id: `${phase}c${i + 1}` }) as unknown as ClientHandle);
  for (const h of handles) {
    const r = new Redlock({
      nodes: await cluster.farm.nodesFor(h.id),
      ttl: TTL,
      commandTimeout: 200,
      retryDelay: 60,
      retryJitter: 30,
      acquireTimeout: 2_500,
      retryCount: Infinity,
    });
    await r.connect();
    redlocks.push(r);
  }
  const holds: Hold[] = [];
  let failures = 0;
  let running = true;
  const work = async (redlock: Redlock, worker: number) => {
    for (let i = 0; running; i++) {
      const resource = (worker + i) % RESOURCES;
      const role: Hold['role'] = kind === 'semaphore' ? 'permit' : Math.random() < 0.3 ? 'write' : 'read';
      const options =
        kind === 'semaphore' ? { limit: LIMIT } : { mode: role === 'write' ? ('write' as const) : ('read' as const) };
      try {
        await redlock.using(
          `${phase}:r${resource}`,
          TTL,
          async (lock: Lock) => {
            const from = sharedNow();
            await sleep(50 + Math.random() * 400, undefined, { signal: lock.signal }).catch(() => undefined);
            holds.push({ resource, role, from, to: sharedNow() });
          },
          options,
        );
      } catch {
        failures++;
        await sleep(20);
      }
    }
  };
  const workers = redlocks.flatMap((r, i) => [work(r, i * 2), work(r, i * 2 + 1)]);
  const bands: FaultBand[] = [];
  const pauses: ClientPause[] = [];
  const hotKeys =
    kind === 'semaphore'
      ? Array.from({ length: RESOURCES }, (_, r) =>
          Array.from({ length: LIMIT }, (_, i) => `lock:${phase}:r${r}:permit:${i}`),
        ).flat()
      : Array.from({ length: RESOURCES }, (_, r) => `lock:${phase}:r${r}`);
  const end = sharedNow() + seconds * 1_000;
  try {
    for (let round = 0; sharedNow() < end; round++) {
      const ctx: NemesisContext = {
        phase,
        round,
        variant: round,
        cluster,
        clients: handles,
        ttl: TTL,
        guard: true,
        hotKeys,
        pauses,
      };
      const band = await schedules[fault](ctx);
      if (band) bands.push(band);
      await sleep(TTL * 1.5);
    }
  } finally {
    await cluster.healAll();
    running = false;
    await Promise.all(workers);
    await Promise.all(redlocks.map((r) => r.close()));
  }
  const c = check(kind, holds, bands);
  return {
    kind,
    fault,
    holds: holds.length,
    failures,
    ...c,
    bands: bands.map((b) => `${b.label}${b.beyond ? ` (beyond: ${b.beyond})` : ''}`),
  };
}

async function main(): Promise<number> {
  const masters = await startRedisMasters(5);
  const farm = ProxyFarm.create(masters.masters.map((m) => m.port));
  const inspector = new Inspector(masters.urls);
  await inspector.connect();
  const cluster = new Cluster(masters.masters, farm, inspector);
  const rows: PhaseRow[] = [];
  try {
    let n = 0;
    for (const kind of ['semaphore', 'read-write'] as Kind[]) {
      for (const fault of FAULTS.filter((f) => !only || only.includes(f))) {
        const row = await runPhase(kind, fault, cluster, `s${String(++n).padStart(2, '0')}`);
        rows.push(row);
        console.log(
          `${kind.padEnd(10)} ${fault.padEnd(12)} holds ${String(row.holds).padStart(4)}  failed acquisitions ${String(row.failures).padStart(3)}  ` +
            `${kind === 'semaphore' ? `most permit holders ${row.mostPermits} (limit ${LIMIT})` : `most readers at once ${row.mostReaders}`}  ` +
            `violations: ${row.unexpected} unexpected, ${row.expected} expected`,
        );
        for (const b of row.bands) console.log(`    ${b}`);
      }
    }
  } finally {
    await cluster.healAll().catch(() => undefined);
    inspector.close();
    await farm.close();
    await masters.stop();
  }
  const unexpected = rows.reduce((a, r) => a + r.unexpected, 0);
  console.log(unexpected === 0 ? 'OK: no unexpected violation.' : `FAIL: ${unexpected} unexpected violations.`);
  return unexpected === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
