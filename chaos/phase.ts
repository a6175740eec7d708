/**
 * One phase of the run: fresh clients with the phase's options, the nemesis's rounds of one fault
 * type (each followed by liveness probes and a quiet spell), then shutdown, the scan for lock keys
 * left behind, and the register's logs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sharedNow } from './clock.js';
import {
  quietAfter,
  schedules,
  setUpMasters,
  tearDownMasters,
  type ClientHandle,
  type Cluster,
  type FaultKind,
  type NemesisContext,
} from './nemesis.js';
import type { FencedRegister } from './register.js';
import { MasterHistory } from './history.js';
import { monitorLoopLag, type LoopStall } from './loop-lag.js';
import type { ClientPause, FaultBand, KeyLeft, PhaseHistory, ProbeRecord } from './types.js';
import type { WorkloadConfig } from './workload.js';

export interface PhaseSpec {
  /** Short id, also the resources' prefix, e.g. 'p03'. */
  id: string;
  fault: FaultKind;
  guard: boolean;
  fencing: boolean;
  /** How long the nemesis runs rounds, in seconds (the last round may overrun). */
  seconds: number;
  title: string;
  /** The phase's name when it is not its fault type's (e.g. 'hot-contention', 'key-loss-no-repair'). */
  name?: string;
  /** Only these variants of the fault, in turn (default: all, in turn). */
  variants?: number[];
  /** Client processes in this phase (default: the run's). */
  clients?: number;
  /** Workload settings that differ in this phase (e.g. fewer workers per process when there are many processes). */
  settings?: Partial<Settings>;
  /**
   * Clients whose command connections (only) are cut to a restarted master while their subscribers
   * reconnect to it (the subscriber-restart phase; see the lagging-restart schedule).
   */
  cutCommandsOf?: string[];
  /** A planted-bug copy of the library for the clients to load (`--mutants`), and its name. */
  lib?: string;
  mutant?: string;
}

/** The workload's shape, the same in every phase. */
export type Settings = Omit<WorkloadConfig, 'phase' | 'client' | 'nodes' | 'restartGuard' | 'fencing'>;

/** How long a liveness probe may take after a fault healed: TTL + retry budget, plus reconnect and restart-guard allowances. */
export function livenessBound(spec: PhaseSpec, s: Settings): number {
  const reconnect = 1_000; // the library's reconnect back-off is capped at 1 s
  const guardWindow =
    spec.guard && (spec.fault === 'kill-restart' || spec.fault === 'kill-delayed' || spec.fault === 'lagging-restart')
      ? s.ttl * 1.01 + 2 + 1_000
      : 0; // uptime is whole seconds
  return s.ttl + s.retryDelay + s.retryJitter + reconnect + guardWindow;
}

export interface PhaseResult extends PhaseHistory {
  spec: PhaseSpec;
  bound: number;
  /** When the nemesis started and stopped (excluding start-up and shutdown). */
  runFrom: number;
  runTo: number;
  cycles: number;
  masterCount: number;
  /** The harness process's own event-loop stalls during the nemesis's rounds (loop-lag.ts). */
  harnessStalls?: LoopStall[];
  ttl: number;
  commandTimeout: number;
  retryDelay?: number;
  retryJitter?: number;
}

export async function runPhase(
  cluster: Cluster,
  spec: PhaseSpec,
  clients: readonly ClientHandle[],
  phaseSettings: Settings,
  register: FencedRegister,
  log: (line: string) => void = () => undefined,
): Promise<PhaseResult> {
  const settings: Settings = { ...phaseSettings, ...spec.settings };
  await cluster.healAll();
  await setUpMasters(spec.fault, cluster);
  await cluster.waitUptime(2); // a clean start: no master inside the restart guard's window
  const history: PhaseHistory = {
    phase: spec.id,
    sections: [],
    failures: [],
    probes: [],
    bands: [],
    pauses: [],
    keysLeft: [],
    registerLogs: new Map(),
    startedAt: sharedNow(),
    endedAt: 0,
    masterEvents: [],
    clientCycles: {},
    stalls: [],
  };
  // The masters' own history of this phase's lock keys, recorded before any client starts.
  const masterHistory = new MasterHistory(
    cluster.masters.map((m) => m.url),
    `lock:${spec.id}:`,
  );
  await masterHistory.start();
  cluster.history = masterHistory;
  const sink = {
    section: (r: PhaseHistory['sections'][number]) => history.sections.push(r),
    failure: (r: PhaseHistory['failures'][number]) => history.failures.push(r),
    stall: (r: PhaseHistory['stalls'][number]) => history.stalls.push(r),
  };
  await Promise.all(
    clients.map(async (c) =>
      c.start(
        {
          ...settings,
          phase: spec.id,
          client: c.id,
          nodes: await cluster.farm.nodesFor(c.id),
          restartGuard: spec.guard,
          fencing: spec.fencing,
          allowEvictingMasters: spec.fault === 'evicting-master',
        },
        sink,
      ),
    ),
  );
  await sleep(1_000);
  const bound = livenessBound(spec, settings);
  const hotKeys = Array.from({ length: settings.hotResources }, (_, i) => `lock:${spec.id}:hot:${i}`);
  // The harness's own loop carries every client's traffic (the proxies) and the masters' MONITOR
  // streams: its stalls delay every command at once, so they are measured and reported with the phase.
  const harnessStalls: LoopStall[] = [];
  const stopHarnessLag = monitorLoopLag('harness', (stall) => harnessStalls.push(stall));
  const runFrom = sharedNow();
  const end = runFrom + spec.seconds * 1_000;
  const pauses: ClientPause[] = history.pauses;
  try {
    for (let round = 0; sharedNow() < end; round++) {
      const variant = spec.variants ? spec.variants[round % spec.variants.length] : round;
      const ctx: NemesisContext = {
        phase: spec.id,
        round,
        variant,
        cluster,
        clients,
        ttl: settings.ttl,
        guard: spec.guard,
        hotKeys,
        pauses,
        commandTimeout: settings.commandTimeout,
        cutCommandsOf: spec.cutCommandsOf,
      };
      const band: FaultBand | undefined = await schedules[spec.fault](ctx);
      if (band) {
        history.bands.push(band);
        log(`  round ${round}: ${band.label}`);
      }
      const probeStart = sharedNow();
      const probes: ProbeRecord[] = await Promise.all(clients.map((c) => c.probe(round, bound * 3)));
      history.probes.push(...probes);
      const quiet = quietAfter(spec.fault, settings.ttl, spec.guard, variant) - (sharedNow() - probeStart);
      if (quiet > 0) await sleep(quiet);
    }
  } finally {
    await cluster.healAll();
    for (const c of clients) c.continueProcess?.();
  }
  await tearDownMasters(spec.fault, cluster);
  stopHarnessLag();
  const runTo = sharedNow();
  const perClient = await Promise.all(clients.map((c) => c.stop()));
  clients.forEach((c, i) => (history.clientCycles[c.id] = perClient[i]));
  const cycles = perClient.reduce((a, b) => a + b, 0);
  history.endedAt = sharedNow();

  // No lock key may outlive its release: every client has released and closed by now.
  await sleep(300);
  const scan = async (when: KeyLeft['when']) => {
    for (let m = 0; m < cluster.size; m++) {
      let found = await cluster.inspector.scan(m, `lock:${spec.id}:*`);
      for (let retry = 0; found === undefined && retry < 5; retry++) {
        await sleep(100);
        found = await cluster.inspector.scan(m, `lock:${spec.id}:*`);
      }
      // A scan that never answers must not read as "no key left".
      found ??= [{ key: '(the scan of this master did not answer)', value: null, pttl: -1 }];
      for (const k of found) {
        history.keysLeft.push({ phase: spec.id, master: m, key: k.key, value: k.value, pttl: k.pttl, when });
      }
    }
  };
  await scan('after-close');
  if (history.keysLeft.length > 0) {
    await sleep(settings.ttl + 200);
    await scan('after-ttl');
  }
  history.registerLogs = await register.logs(`${spec.id}:`);
  await sleep(50); // the last MONITOR lines in flight
  masterHistory.stop();
  cluster.history = undefined;
  history.masterEvents = masterHistory.events;
  return {
    ...history,
    spec,
    bound,
    runFrom,
    runTo,
    cycles,
    masterCount: cluster.size,
    harnessStalls,
    ttl: settings.ttl,
    commandTimeout: settings.commandTimeout,
    retryDelay: settings.retryDelay,
    retryJitter: settings.retryJitter,
  };
}
