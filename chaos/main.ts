/**
 * `npm run chaos`: the fault-injection run. Starts 5 redis-server masters, one register server, a
 * proxy per master, and for each phase several client processes; runs the nemesis; checks the
 * history; writes chaos-report.md and chaos-timeline.svg; heals and stops everything.
 *
 *   npm run chaos                      # full run (~6 min), report in chaos/
 *   npm run chaos -- --quick           # ~1.5 min, report in dist-chaos/
 *   npm run chaos -- --phases kill-restart,client-pause --seconds 15
 *
 * Exits 1 when a check fails: an unexpected mutual-exclusion violation, a stale fenced write or a
 * token inversion outside the documented assumptions, a lock key left after its release, a failed
 * liveness probe, or a shared clock that is not shared.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from 'nestjs-quorum-lock';
import { startRedisMasters, type RedisMasters } from '../tools/redis-masters.js';
import { checkPhase, type PhaseCheck } from './checker.js';
import { sharedNow } from './clock.js';
import { chaosMasterArgs, Cluster, Inspector, type FaultKind } from './nemesis.js';
import { LIBRARY_VARIANTS, MUTANTS, writeMutant, type Mutant } from './mutants.js';
import { runPhase, type PhaseResult, type PhaseSpec, type Settings } from './phase.js';
import { ProcessClient, type PingPong } from './process-client.js';
import { ProxyFarm } from './proxy.js';
import { FencedRegister } from './register.js';
import { leadershipProblems, renderLeadership, runLeadershipPhase, type LeadershipResult } from './leadership-phase.js';
import { clusterProblems, renderCluster, runClusterPhase, type ClusterPhaseResult } from './cluster-phase.js';
import { phaseTitle, renderMutants, renderReport, renderTimeline, type ClockCheck } from './report.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist-chaos/chaos
const ROOT = resolve(HERE, '..', '..');

const USAGE = `npm run chaos -- [options]
  --quick            short phases (8 s each), report written to dist-chaos/ (not chaos/)
  --seconds N        seconds of faults per phase (default 10; quick 8)
  --clients N        client processes per phase (default 4)
  --phases a,b       only these fault types: none, kill-restart, kill-delayed, master-pause,
                     client-pause, key-loss, proxy-delay, proxy-drop, proxy-cut, client-stall,
                     slow-masters, partition, evicting-master, fsync-restart, lagging-restart
                     (killed, back with its ticket queues and no lock keys), subscriber-restart
                     (the same, hot keys; c1 c2 hand the library their own clients with a jittered
                     retryStrategy, so subscribers come back before command connections at times),
                     clock-step (one master
                     under libfaketime, stepped ±), many-clients, hot-contention (8 processes, 4 hot
                     keys, one client's links slower than commandTimeout at times),
                     key-loss-no-repair (quorum repair off),
                     leadership (leader election: resign, SIGKILL, SIGSTOP, hung master),
                     cluster-failover (3 Redis Clusters as nodes, shard primaries killed; chaos/cluster-phase.ts)
  --mutants          plant each bug of chaos/mutants.ts in a copy of the library and run a short
                     pass on each; exits 1 unless every one is caught (report: mutants-report.md)
  --mutant A,B       only these mutants (with --mutants)
  --out DIR          where to write chaos-report.md and chaos-timeline.svg
  --help`;

interface Args {
  quick: boolean;
  seconds: number;
  clients: number;
  phases: FaultKind[] | undefined;
  out: string;
  mutants: boolean;
  mutant: string | undefined;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    quick: false,
    seconds: 0,
    clients: 4,
    phases: undefined,
    out: '',
    mutants: false,
    mutant: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value\n${USAGE}`);
      return v;
    };
    if (a === '--quick') args.quick = true;
    else if (a === '--seconds') args.seconds = Number(value());
    else if (a === '--clients') args.clients = Number(value());
    else if (a === '--phases')
      args.phases = value()
        .split(',')
        .map((s) => s.trim()) as FaultKind[];
    else if (a === '--out') args.out = value();
    else if (a === '--mutants') args.mutants = true;
    else if (a === '--mutant') args.mutant = value();
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown option ${a}\n${USAGE}`);
  }
  // 10 s of faults per phase keeps the whole run (22 phases, leadership, clusters, shared locks) near
  // 13 minutes on a 2-core machine (12 s took 14.8 min); each phase also has start-up, probes and
  // scans around it.
  args.seconds ||= args.mutants ? 8 : args.quick ? 8 : 10;
  args.out ||= args.quick || args.phases ? join(ROOT, 'dist-chaos') : join(ROOT, 'docs', 'evidence');
  if (!(args.clients >= 2 && args.clients <= 24)) throw new Error('--clients must be 2..24');
  return args;
}

const SETTINGS: Omit<Settings, 'registerUrl'> = {
  ttl: 1_000,
  commandTimeout: 200,
  hotResources: 3,
  coldResources: 300,
  hotWorkers: 4,
  coldWorkers: 3,
  hotHoldMs: [2, 40],
  hotLongHoldMs: [1_200, 2_500],
  hotLongShare: 0.1,
  coldHoldMs: [2, 12],
  retryDelay: 60,
  retryJitter: 30,
  acquireTimeout: 2_500,
};

/** The phase with many client processes (each with the same workers). */
const MANY_CLIENTS = 16;

/**
 * The hot-contention phase: many processes on four hot keys (six contenders per key) with short
 * holds and no long holds, and no cold workers, so that contended sections (handed over between
 * processes by the handoff's tickets) run in the thousands. The other phases keep the cold mass.
 */
const HOT_CLIENTS = 8;
const HOT_SETTINGS: Partial<Settings> = {
  hotResources: 4,
  hotWorkers: 3,
  coldWorkers: 0,
  hotHoldMs: [1, 3],
  hotLongShare: 0,
};

function phaseList(args: Args): PhaseSpec[] {
  // fault, restart guard, client processes, name (for --phases and the title; default: the fault)
  const all: [FaultKind, boolean, number?, string?][] = [
    ['none', true],
    ['kill-restart', false],
    ['kill-restart', true],
    ['kill-delayed', false],
    ['kill-delayed', true],
    ['master-pause', true],
    ['client-pause', true],
    ['key-loss', true],
    ['key-loss', true, undefined, 'key-loss-no-repair'],
    ['proxy-delay', true],
    ['proxy-drop', true],
    ['proxy-cut', true],
    ['client-stall', true],
    ['slow-masters', true],
    ['partition', true],
    ['evicting-master', true],
    ['fsync-restart', true],
    ['lagging-restart', true],
    ['lagging-restart', true, undefined, 'subscriber-restart'],
    ['clock-step', true],
    ['master-pause', true, MANY_CLIENTS, 'many-clients'],
    ['slow-waiter', true, HOT_CLIENTS, 'hot-contention'],
  ];
  const chosen = args.phases ? all.filter(([f, , , n]) => args.phases!.includes((n ?? f) as FaultKind)) : all;
  const unknown = (args.phases ?? []).filter(
    (p) =>
      (p as string) !== 'leadership' &&
      (p as string) !== 'cluster-failover' &&
      !all.some(([f, , , n]) => (n ?? f) === p),
  );
  if (unknown.length) throw new Error(`unknown fault type(s): ${unknown.join(', ')}\n${USAGE}`);
  // The key-loss baseline runs a copy of the library with quorum repair off (chaos/mutants.ts).
  const noRepair = chosen.some(([, , , n]) => n === 'key-loss-no-repair')
    ? compileCopies(LIBRARY_VARIANTS.filter((v) => v.name === 'no-quorum-repair'))[0]
    : undefined;
  return chosen.map(([fault, guard, clients, name], i) => ({
    id: `p${String(i + 1).padStart(2, '0')}`,
    fault,
    guard,
    fencing: true,
    // The hot phase's thousands of contended sections need a long phase even in a short run (about
    // 70 handoffs a second on this 2-core machine), and the two key-loss phases need several rounds
    // of quorum repair's case (with repair on and off).
    seconds:
      name === 'hot-contention'
        ? Math.max(args.seconds, 40)
        : fault === 'key-loss'
          ? Math.max(args.seconds, 24)
          : args.seconds,
    title: name ?? (clients ? `${fault}, ${clients} client processes` : fault),
    name,
    clients,
    settings:
      name === 'hot-contention'
        ? HOT_SETTINGS
        : clients
          ? { hotWorkers: 1, coldWorkers: 1 }
          : name === 'subscriber-restart'
            ? { ...HOT_SETTINGS, userClients: ['c1', 'c2'] }
            : fault === 'key-loss'
              ? { hotLongShare: 0.25 } // each client's first hot worker always waits on the long-hold key: contenders for the reconnected holder
              : undefined,
    cutCommandsOf: name === 'subscriber-restart' ? ['c1', 'c3'] : undefined,
    lib: name === 'key-loss-no-repair' ? noRepair : undefined,
    variants:
      fault === 'kill-restart'
        ? [3, 0, 1, 2] // the long holder's majority first: the round a guard that trusts restarted masters fails
        : name === 'subscriber-restart'
          ? [4, 0, 2] // three masters back whole, then one and three with their queues only
          : fault === 'key-loss'
            ? [2, 0, 2, 1] // quorum repair's case in every other round: the one the baseline without repair is compared on
            : undefined,
  }));
}

/** Copies lib/ once per patch set, applies it (throws if a patch no longer applies), compiles; the entry points. */
function compileCopies(copies: Mutant[]): string[] {
  const src = join(ROOT, 'dist-chaos', 'mutants-src');
  const out = join(ROOT, 'dist-chaos', 'mutants');
  for (const m of copies) writeMutant(m, join(ROOT, 'lib'), join(src, m.name));
  writeFileSync(
    join(src, 'tsconfig.json'),
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.build.json'),
      compilerOptions: { rootDir: '.', outDir: out, declaration: false, sourceMap: false },
      include: [...copies.map((m) => m.name)],
    }),
  );
  console.log(`chaos: compiling ${copies.length} patched copies of lib/`);
  // A planted bug may not type-check (that is not the point): emit anyway, then insist on the output.
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(src, 'tsconfig.json')],
      { stdio: 'pipe' },
    );
  } catch {
    // type errors only: checked below
  }
  return copies.map((m) => {
    const entry = join(out, m.name, 'index.js');
    if (!existsSync(entry)) throw new Error(`the patched copy ${m.name} did not compile`);
    return entry;
  });
}

/** The planted bugs whose pass is the cluster phase (chaos/cluster-phase.ts), with their compiled copies. */
const clusterMutants: { mutant: Mutant; lib: string }[] = [];

/**
 * One short phase per planted bug, each with its own compiled copy of the library; a bug whose pass
 * is the cluster phase goes to `clusterMutants` instead.
 */
function mutantPhases(args: Args): PhaseSpec[] {
  const chosen = MUTANTS.filter((m) => !args.mutant || args.mutant.split(',').includes(m.name));
  if (chosen.length === 0)
    throw new Error(`unknown mutant ${args.mutant}; known: ${MUTANTS.map((m) => m.name).join(', ')}`);
  const libs = compileCopies(chosen); // throws if a patch no longer applies
  const specs: PhaseSpec[] = [];
  chosen.forEach((m, i) => {
    const fault = m.phase.fault;
    if (fault === 'cluster-failover') clusterMutants.push({ mutant: m, lib: libs[i] });
    else specs.push(mutantSpec(m, fault, libs[i], args, i));
  });
  return specs;
}

/** The chaos phase of a planted bug's pass. */
function mutantSpec(m: Mutant, fault: FaultKind, lib: string, args: Args, i: number): PhaseSpec {
  return {
    id: `m${String(i + 1).padStart(2, '0')}`,
    fault,
    guard: m.phase.guard,
    fencing: true,
    seconds: Math.max(args.seconds, m.phase.seconds ?? 0),
    title: fault,
    lib,
    mutant: m.name,
    clients: m.phase.clients,
    variants: m.phase.variants,
    settings: { ...(m.phase.ttl ? { ttl: m.phase.ttl } : {}), ...m.phase.settings },
  };
}

function clockCheck(pongs: PingPong[], offsetDrifts: number[]): ClockCheck {
  const firstOffset = new Map<string, number>();
  let sharedOutOfOrder = 0;
  let originOutOfOrder = 0;
  let originMaxSkewMs = 0;
  let perfOffsetDriftMs = Math.max(0, ...offsetDrifts);
  let maxRoundTripMs = 0;
  const roundTrips: number[] = [];
  const processes = new Set<string>();
  for (const p of pongs) {
    processes.add(p.client);
    maxRoundTripMs = Math.max(maxRoundTripMs, p.after - p.before);
    if (!(p.before <= p.child.shared && p.child.shared <= p.after)) sharedOutOfOrder++;
    if (!(p.parentOriginBefore <= p.child.origin && p.child.origin <= p.parentOriginAfter)) originOutOfOrder++;
    originMaxSkewMs = Math.max(
      originMaxSkewMs,
      Math.abs(p.child.origin - (p.parentOriginBefore + p.parentOriginAfter) / 2),
    );
    const first = firstOffset.get(p.client);
    if (first === undefined) firstOffset.set(p.client, p.child.perfOffset);
    else perfOffsetDriftMs = Math.max(perfOffsetDriftMs, Math.abs(p.child.perfOffset - first));
    roundTrips.push(p.after - p.before);
  }
  roundTrips.sort((a, b) => a - b);
  const medianRoundTripMs = roundTrips[Math.floor(roundTrips.length / 2)] ?? 0;
  return {
    pings: pongs.length,
    processes: processes.size,
    sharedOutOfOrder,
    maxRoundTripMs,
    medianRoundTripMs,
    originOutOfOrder,
    originMaxSkewMs,
    perfOffsetDriftMs,
  };
}

/**
 * How long the library's restart guard (a Redlock with default options, TTL as the clients') keeps
 * each restarted master's votes out: from the moment the restart began (the server cannot have
 * started earlier) until `distrustedFor` falls back to 0.
 */
function observeGuard(
  probe: Redlock,
): (masters: readonly number[], since: number) => Promise<{ master: number; ms: number | null }[]> {
  return async (masters, from) => {
    const seen = new Set<number>();
    const trusted = new Map<number, number>();
    while (sharedNow() - from < 4_000 && trusted.size < masters.length) {
      const distrust = probe.distrustedFor;
      for (const m of masters) {
        if (trusted.has(m)) continue;
        if (distrust[m] > 0) seen.add(m);
        else if (seen.has(m)) trusted.set(m, Math.round(sharedNow() - from));
      }
      await sleep(5);
    }
    return masters.map((m) => ({ master: m, ms: trusted.get(m) ?? (seen.has(m) ? 4_000 : null) }));
  };
}

function version(cmd: string, args: string[], pattern: RegExp): string {
  try {
    return pattern.exec(execFileSync(cmd, args, { encoding: 'utf8' }))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const startedAt = new Date();
  const t0 = sharedNow();
  const specs = args.mutants ? mutantPhases(args) : phaseList(args);
  console.log(
    `chaos: ${specs.length} phases × ${args.seconds} s of faults, ${args.clients} client processes each; report → ${args.out}`,
  );

  let masters: RedisMasters | undefined;
  let registerServer: RedisMasters | undefined;
  let farm: ProxyFarm | undefined;
  let inspector: Inspector | undefined;
  let register: FencedRegister | undefined;
  let cluster: Cluster | undefined;
  let guardProbe: Redlock | undefined;
  let live: ProcessClient[] = [];
  let interrupted = false;
  const emergency = () => {
    if (interrupted) return;
    interrupted = true;
    console.error('\nchaos: interrupted; healing and stopping everything');
    for (const c of live) c.kill();
    void (async () => {
      await cluster?.healAll().catch(() => undefined);
      await Promise.all([masters?.stop(), registerServer?.stop(), farm?.close()]);
      process.exit(130);
    })();
  };
  process.on('SIGINT', emergency);
  process.on('SIGTERM', emergency);

  const rows: { result: PhaseResult; check: PhaseCheck }[] = [];
  let leadership: LeadershipResult | undefined;
  let clusterPhase: ClusterPhaseResult | undefined;
  const clusterVerdicts: Parameters<typeof renderMutants>[0] = [];
  const pongs: PingPong[] = [];
  const offsetDrifts: number[] = [];
  try {
    [masters, registerServer] = await Promise.all([
      startRedisMasters(5, { args: chaosMasterArgs }),
      startRedisMasters(1),
    ]);
    farm = ProxyFarm.create(masters.masters.map((m) => m.port));
    inspector = new Inspector(masters.urls);
    await inspector.connect();
    register = new FencedRegister(registerServer.urls[0]);
    await register.connect();
    await register.flush();
    cluster = new Cluster(masters.masters, farm, inspector);
    guardProbe = new Redlock({ nodes: masters.urls, ttl: SETTINGS.ttl });
    await guardProbe.connect();
    cluster.guardObserver = observeGuard(guardProbe);
    const settings: Settings = { ...SETTINGS, registerUrl: registerServer.urls[0] };

    for (const spec of specs) {
      const phaseStart = sharedNow();
      console.log(
        `${spec.id} ${spec.mutant ? `mutant ${spec.mutant}: ` : ''}${spec.title}${spec.fault.startsWith('kill') ? ` (restart guard ${spec.guard ? 'on' : 'off'})` : ''}`,
      );
      live = Array.from({ length: spec.clients ?? args.clients }, (_, i) => new ProcessClient(`c${i + 1}`, spec.lib));
      await Promise.all(live.map((c) => c.spawn()));
      for (const c of live) await c.ping(-1); // warm-up: the child may still be loading
      const first = new Map<string, number>();
      for (let n = 0; n < 25; n++) {
        for (const c of live) {
          const pong = { ...(await c.ping(n)), client: `${spec.id}/${c.id}` };
          pongs.push(pong);
          if (!first.has(c.id)) first.set(c.id, pong.child.perfOffset);
        }
      }
      const clients = live;
      const result = await runPhase(cluster, spec, live, settings, register, (line) => console.log(line));
      live = [];
      for (const c of clients) {
        if (c.lastReading) offsetDrifts.push(Math.abs(c.lastReading.perfOffset - first.get(c.id)!));
      }
      const check = checkPhase(result);
      rows.push({ result, check });
      console.log(
        `  ${check.cycles.total} cycles, ME violations ${check.unexpectedViolations} unexpected / ${check.violations.length - check.unexpectedViolations} beyond, ` +
          `token inversions ${check.fencing.inversions.length}, stale fenced accepted ${check.fencing.staleAcceptedFenced.length} (unfenced ${check.fencing.staleAcceptedUnfenced}), ` +
          `delivery ${check.delivery.onTime}/${check.delivery.cases}, keys left ${check.keys.afterTtl}, ` +
          `claims ${check.claims.grants}+${check.claims.extensions} (largest overclaim ${check.claims.largestOverclaimMs.toFixed(1)} ms, over ${check.claims.over}), ` +
          `longest idle ${check.waiting.longestIdleMs.toFixed(0)}/${check.waiting.bound} ms, ${((sharedNow() - phaseStart) / 1000).toFixed(0)} s`,
      );
      for (const p of check.problems) console.log(`  FAIL ${p.check}: ${p.count} (${p.detail})`);
      if (interrupted) return 130;
    }
    if (!args.mutants && (!args.phases || args.phases.includes('leadership' as FaultKind))) {
      console.log('leadership: 3 client processes campaign; the leader resigns, is killed, paused, with a hung master');
      await cluster.healAll();
      leadership = await runLeadershipPhase({
        seconds: args.seconds,
        clients: 3,
        masters: masters.masters,
        registerUrl: registerServer.urls[0],
        log: (line) => console.log(line),
      });
      const times = leadership.takeovers.map((t) => `${t.event} ${t.ms.toFixed(0)} ms`).join(', ');
      console.log(
        `  ${leadership.terms} terms, overlaps ${leadership.overlaps}, token inversions ${leadership.tokenInversions}, missed takeovers ${leadership.missedTakeovers}; takeovers: ${times}`,
      );
    }
    for (const { mutant, lib } of args.mutants ? clusterMutants : []) {
      console.log(`mutant ${mutant.name}: cluster-failover, guarded pass only`);
      const result = await runClusterPhase({
        seconds: Math.max(args.seconds, mutant.phase.seconds ?? 0),
        log: (line) => console.log(line),
        lib,
        guardedOnly: true,
      });
      const pass = result.passes[0];
      clusterVerdicts.push({
        mutant,
        phase: `cluster-failover: 3 Redis Clusters as nodes, shard primaries failed over (${pass.failovers} double failovers), restart guard on`,
        cycles: { total: pass.holdings, hot: pass.holdings, cold: 0, viaLocked: 0, viaUsing: 0 },
        caughtBy: [
          ...(pass.violations ? [{ check: 'mutual exclusion', count: pass.violations, detail: '' }] : []),
          ...(pass.unexcusedInversions
            ? [{ check: 'fencing-token inversion', count: pass.unexcusedInversions, detail: '' }]
            : []),
        ],
      });
    }
    if (!args.mutants && (!args.phases || args.phases.includes('cluster-failover' as FaultKind))) {
      // Each failover takes a few seconds and is followed by the guard's TTL: a phase of several.
      clusterPhase = await runClusterPhase({ seconds: Math.max(args.seconds, 30), log: (line) => console.log(line) });
    }
  } finally {
    for (const c of live) c.kill();
    await cluster?.healAll().catch(() => undefined);
    await guardProbe?.close();
    register?.close();
    inspector?.close();
    await farm?.close();
    await Promise.all([masters?.stop(), registerServer?.stop()]);
  }

  const durationMs = sharedNow() - t0;
  const clock = clockCheck(pongs, offsetDrifts);
  if (args.mutants) {
    mkdirSync(args.out, { recursive: true });
    const verdicts = [
      ...rows.map(({ result, check }) => ({
        mutant: MUTANTS.find((m) => m.name === result.spec.mutant)!,
        phase: phaseTitle(result),
        cycles: check.cycles,
        caughtBy: check.problems,
      })),
      ...clusterVerdicts,
    ];
    writeFileSync(
      join(args.out, 'mutants-report.md'),
      renderMutants(verdicts, {
        durationMs,
        seconds: args.seconds,
        command: `npm run chaos -- ${process.argv.slice(2).join(' ')}`,
        startedAt,
      }),
    );
    const missed = verdicts.filter((v) => v.caughtBy.length === 0);
    console.log(
      `\nchaos --mutants: ${verdicts.length - missed.length} of ${verdicts.length} caught in ${(durationMs / 1000).toFixed(0)} s; report: ${join(args.out, 'mutants-report.md')}`,
    );
    for (const v of verdicts)
      console.log(
        `  ${v.caughtBy.length ? 'caught' : 'MISSED'} ${v.mutant.name}${v.caughtBy.length ? `: ${v.caughtBy.map((p) => `${p.check} (${p.count})`).join(', ')}` : ''}`,
      );
    return missed.length ||
      verdicts.length < MUTANTS.filter((m) => !args.mutant || args.mutant.split(',').includes(m.name)).length
      ? 1
      : 0;
  }
  mkdirSync(args.out, { recursive: true });
  const svgName = 'chaos-timeline.svg';
  const info = {
    startedAt,
    durationMs,
    quick: args.quick,
    clients: args.clients,
    masters: 5,
    settings: { ...SETTINGS, registerUrl: '' },
    node: process.versions.node,
    redis: version('redis-server', ['--version'], /v=([\d.]+)/),
    cpus: cpus().length,
    command: `npm run chaos${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
  };
  const locking = rows.length
    ? renderReport(rows, clock, info, svgName)
    : `# Chaos report\n\n\`${info.command}\`, ${startedAt.toISOString()}\n`;
  writeFileSync(
    join(args.out, 'chaos-report.md'),
    locking +
      (leadership ? renderLeadership(leadership) : '') +
      (clusterPhase ? `\n${renderCluster(clusterPhase, info.command)}` : ''),
  );
  if (rows.length) writeFileSync(join(args.out, svgName), renderTimeline(rows, info.settings, args.clients));
  mkdirSync(join(ROOT, 'dist-chaos'), { recursive: true });
  // One phase per line: the whole run as one JSON string can pass V8's string limit (about 512 MiB).
  const history = openSync(join(ROOT, 'dist-chaos', 'chaos-history.jsonl'), 'w');
  for (const { result, check } of rows)
    writeSync(
      history,
      JSON.stringify({ ...result, registerLogs: Object.fromEntries(result.registerLogs), check }) + '\n',
    );
  closeSync(history);

  const problems: string[] = [];
  if (clock.sharedOutOfOrder) problems.push(`the shared clock was out of order in ${clock.sharedOutOfOrder} pings`);
  for (const { result: r, check: c } of rows) {
    const name = `${r.spec.id} ${phaseTitle(r)}`;
    for (const p of c.problems) problems.push(`${name}: ${p.check}: ${p.count} (${p.detail})`);
  }
  if (leadership) problems.push(...leadershipProblems(leadership));
  if (clusterPhase) problems.push(...clusterProblems(clusterPhase));
  console.log(
    `\nchaos: ${rows.reduce((a, r) => a + r.check.cycles.total, 0)} cycles in ${(durationMs / 1000).toFixed(0)} s; report: ${join(args.out, 'chaos-report.md')}`,
  );
  for (const p of problems) console.log(`  FAIL ${p}`);
  return problems.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
