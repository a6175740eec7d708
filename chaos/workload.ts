/**
 * The lock users of the chaos run: a Nest application context with `RedlockModule.forRoot()` over the
 * proxied masters, a provider whose method is `@Locked`, and a provider that calls
 * `RedlockService.using`. Workers contend on a few hot resources (long holds, many contenders) and
 * spread over many cold ones (short holds), and record every critical section.
 *
 * The library is passed in (`createWorkload(lib, …)`) rather than imported, so that the same code
 * runs in the client processes of `npm run chaos` (the built package, `nestjs-quorum-lock`) and in
 * process under Jest (the sources, `lib/index.ts`).
 */
import { Inject, Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import type * as LibModule from 'nestjs-quorum-lock';
import { sharedNow } from './clock.js';
import { monitorLoopLag, type LoopStall } from './loop-lag.js';
import { FencedRegister } from './register.js';
import type { FailureRecord, ProbeRecord, SectionRecord } from './types.js';

type Lib = typeof LibModule;
type Lock = LibModule.Lock;
type Service = LibModule.RedlockService;

/** Everything a client needs to know. */
export interface WorkloadConfig {
  phase: string;
  client: string;
  /** One URL per master, in master order (through this client's proxy routes). */
  nodes: string[];
  registerUrl: string;
  ttl: number;
  commandTimeout: number;
  restartGuard: boolean;
  fencing: boolean;
  hotResources: number;
  coldResources: number;
  hotWorkers: number;
  coldWorkers: number;
  /** Hold time range of a hot section, ms (split in chunks, the signal checked between them). */
  hotHoldMs: [number, number];
  /**
   * A share of hot sections hold longer than the TTL, so that they live on renewals: range and share.
   * Long holds go to hot resource 0, taken by each client's first hot worker only (its sections are
   * long with probability share × hotWorkers): long holds then never stall the short, contended
   * sections on the other hot resources, and at most one worker per client waits behind them.
   */
  hotLongHoldMs: [number, number];
  hotLongShare: number;
  coldHoldMs: [number, number];
  retryDelay: number;
  retryJitter: number;
  acquireTimeout: number;
  /**
   * Clients (by id) that hand the library their own ioredis clients, one per master, with a jittered
   * `retryStrategy` (20–420 ms): after a master restarts, their command and subscriber connections
   * (the subscriber is a duplicate) come back in either order.
   */
  userClients?: string[];
  /** Opt in to masters whose `maxmemory-policy` can evict keys (the evicting-master phase). */
  allowEvictingMasters?: boolean;
}

/** Where records go, and the client-pause hook. */
export interface WorkloadHooks {
  section(record: SectionRecord): void;
  failure(record: FailureRecord): void;
  /** A measured stall of this client's event loop (loop-lag.ts). */
  stall?(record: LoopStall): void;
  /**
   * Called in a hot section between the signal check and the commit write. Returns a promise when a
   * targeted pause is armed (the writer then waits for it, stopped), undefined otherwise.
   */
  pauseBeforeWrite?(): Promise<void> | undefined;
}

export interface Workload {
  /** Creates the Nest application context, connects, and starts the workers. */
  start(): Promise<void>;
  /** Stops the workers (each finishes its section), then closes the application. */
  stop(): Promise<void>;
  /** Acquires and releases a fresh resource, with a generous budget: the liveness probe. */
  probe(round: number, budgetMs: number): Promise<ProbeRecord>;
  /** Sections completed so far. */
  readonly cycles: number;
}

interface Plan {
  hot: boolean;
  chunks: number[];
  gapMs: number;
  rec: Partial<SectionRecord>;
}

const rand = (lo: number, hi: number) => lo + Math.random() * (hi - lo);
const message = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

export function createWorkload(lib: Lib, config: WorkloadConfig, hooks: WorkloadHooks): Workload {
  const { phase, client, ttl } = config;
  const register = new FencedRegister(config.registerUrl);
  const retry = {
    retryCount: Infinity,
    retryDelay: config.retryDelay,
    retryJitter: config.retryJitter,
    acquireTimeout: config.acquireTimeout,
  };
  // Per-call options; `fencing` is per call on purpose (the module option is set as well).
  const lockedOptions: LibModule.LockedOptions = { ttl, fencing: config.fencing, ...retry };
  const usingOptions: LibModule.AcquireOptions = { fencing: config.fencing, ...retry };
  // Every other section through `using` (cold and hot) overrides the module option with `fencing: false`, so
  // that the unfenced acquire path runs too. Those holders are left out of the token checks.
  const unfencedOptions: LibModule.AcquireOptions = { fencing: false, ...retry };

  // An app-supplied client per master (userClients): the library neither opens nor closes it.
  const userNodes = config.userClients?.includes(client)
    ? config.nodes.map((url) => {
        const redis = new Redis(url, {
          lazyConnect: true,
          enableOfflineQueue: false,
          retryStrategy: () => 20 + Math.floor(Math.random() * 400),
        });
        redis.on('error', () => undefined);
        return redis;
      })
    : undefined;

  /** The critical section, the same whichever way the lock was taken. */
  async function body(lock: Lock, resource: string, plan: Plan): Promise<void> {
    const rec = plan.rec;
    rec.start = sharedNow();
    // The holder's claim, before anything else: the clock first, the validity after, so that a stall
    // between the two reads can only make the claimed deadline err low (the checker needs no excuse).
    const claimFrom = sharedNow();
    rec.claimedDeadline = claimFrom + lock.validity;
    rec.value = lock.value;
    rec.fencingToken = lock.fencingToken;
    // Validity first, the clock after: a preemption in between can only move the deadline later.
    const track = () => {
      const validity = lock.validity;
      const at = sharedNow();
      if (validity > 0) rec.deadline = at + validity;
    };
    // What the user's code observes: a read of `signal.aborted`, stamped before the read. A false
    // read after the deadline (re-read after an extension) is a lock-loss the code could not see.
    const aborted = (): boolean => {
      const at = sharedNow();
      const value = signal.aborted;
      if (!value) {
        track();
        if (at > rec.deadline!)
          rec.heldReadAfterDeadlineMs = Math.max(rec.heldReadAfterDeadlineMs ?? 0, at - rec.deadline!);
      }
      return value;
    };
    track();
    rec.deadline ??= rec.start;
    // Learn the new deadline after each extension (renewal calls lock.extend()).
    const extend = lock.extend.bind(lock);
    Object.defineProperty(lock, 'extend', {
      configurable: true,
      writable: true,
      value: async (newTtl?: number) => {
        const ext: SectionRecord['extensions'][number] = { at: sharedNow(), ok: false };
        rec.extensions!.push(ext);
        try {
          await extend(newTtl);
          ext.ok = true;
          const doneAt = sharedNow();
          Object.assign(ext, { doneAt, deadline: doneAt + lock.validity });
        } finally {
          track();
        }
      },
    });
    const signal = lock.signal;
    const onAbort = () => {
      rec.abortedAt = sharedNow();
      rec.deadlineAtAbort = rec.deadline;
      const reason: unknown = signal.reason;
      rec.abortReason = reason instanceof Error ? reason.message : String(reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });

    for (const ms of plan.chunks) {
      await sleep(ms);
      track();
      if (aborted()) {
        rec.stoppedEarly = true;
        break;
      }
    }
    // The commit: check the signal, then write. A pause between the two is what fencing is for.
    rec.checkedAt = sharedNow();
    rec.abortedAtCheck = aborted();
    const pause = plan.hot && !rec.abortedAtCheck ? hooks.pauseBeforeWrite?.() : undefined;
    if (pause) {
      rec.pausedBeforeWrite = true;
      await pause;
    } else if (plan.gapMs > 0) await sleep(plan.gapMs);
    else await tick();
    if (rec.abortedAtCheck) rec.commit = 'skipped';
    else {
      rec.wroteAt = sharedNow();
      try {
        rec.commit = await register.write(resource, rec.fencingToken, rec.id!);
      } catch {
        rec.commit = 'error';
      }
    }
    rec.end = sharedNow();
    track();
  }

  @Injectable()
  class LockedSections {
    @lib.Locked('#resource', lockedOptions)
    async run(resource: string, plan: Plan): Promise<void> {
      await body(lib.currentLock()!, resource, plan);
    }
  }

  @Injectable()
  class UsingSections {
    constructor(@Inject(lib.RedlockService) private readonly redlock: Service) {}

    run(resource: string, plan: Plan): Promise<void> {
      return this.redlock.using(
        resource,
        ttl,
        (lock) => body(lock, resource, plan),
        plan.rec.fenced ? usingOptions : unfencedOptions,
      );
    }
  }

  @Module({
    imports: [
      lib.RedlockModule.forRoot({
        nodes: userNodes ?? config.nodes,
        ttl,
        commandTimeout: config.commandTimeout,
        connectTimeout: 2_000,
        restartGuard: config.restartGuard,
        fencing: config.fencing,
        ...retry,
        // The library refuses evicting masters unless told otherwise; only the evicting-master phase opts in.
        allowEvictingMasters: config.allowEvictingMasters ?? false,
      }),
    ],
    providers: [LockedSections, UsingSections],
  })
  class ChaosClientModule {}

  let app: INestApplicationContext | undefined;
  let stopLagMonitor: (() => void) | undefined;
  let running = false;
  let seq = 0;
  let cycles = 0;
  const workers: Promise<void>[] = [];

  async function worker(hot: boolean, index: number): Promise<void> {
    const locked = app!.get(LockedSections);
    const using = app!.get(UsingSections);
    let turn = index;
    const longOdds = hot && index === 0 ? Math.min(1, config.hotLongShare * config.hotWorkers) : 0;
    // With long holds, hot resource 0 is theirs and the short sections share the others.
    const shortFrom = config.hotLongShare > 0 && config.hotResources > 1 ? 1 : 0;
    while (running) {
      const long = Math.random() < longOdds;
      const slot = long
        ? 0
        : hot
          ? shortFrom + Math.floor(Math.random() * (config.hotResources - shortFrom))
          : Math.floor(Math.random() * config.coldResources);
      const resource = `${phase}:${hot ? 'hot' : 'cold'}:${slot}`;
      const via = turn % 2 === 0 ? 'locked' : 'using';
      // Every other `using` section runs unfenced (`fencing: false`): on cold keys the unfenced acquire
      // path runs too, and on hot keys a release hands the key straight to such a waiter's ticket
      // (a fenced waiter's ticket gets a reservation and takes its token in a round of its own).
      const unfenced = turn % 4 === (hot ? 3 : 1);
      turn++;
      const [lo, hi] = long ? config.hotLongHoldMs : hot ? config.hotHoldMs : config.coldHoldMs;
      const hold = rand(lo, hi);
      const chunks: number[] = [];
      for (let left = hold; left > 0; left -= 40) chunks.push(Math.min(40, left));
      const rec: Partial<SectionRecord> = {
        id: `${client}:${++seq}`,
        phase,
        client,
        via,
        resource,
        hot,
        fenced: config.fencing && !unfenced,
        requestedAt: sharedNow(),
        stoppedEarly: false,
        pausedBeforeWrite: false,
        extensions: [],
      };
      const plan: Plan = { hot, chunks, gapMs: hot ? 1 : 0, rec };
      try {
        await (via === 'locked' ? locked.run(resource, plan) : using.run(resource, plan));
        rec.outcome = 'ok';
      } catch (error) {
        if (rec.start === undefined) {
          if (!running && !(error instanceof lib.LockAcquisitionError)) break; // shutting down
          const kind = error instanceof lib.LockAcquisitionError ? (error.busy ? 'busy' : 'unavailable') : 'other';
          hooks.failure({
            phase,
            client,
            resource,
            hot,
            requestedAt: rec.requestedAt!,
            failedAt: sharedNow(),
            kind,
            message: message(error),
          });
          if (kind === 'other') await sleep(20);
          continue;
        }
        rec.outcome = error instanceof lib.LockLostError ? 'lost' : 'error';
      }
      rec.settledAt = sharedNow();
      cycles++;
      hooks.section(rec as SectionRecord);
      if (hot) await sleep(rand(0, 5));
    }
  }

  return {
    get cycles() {
      return cycles;
    },
    async start() {
      stopLagMonitor = monitorLoopLag(client, (stall) => hooks.stall?.(stall));
      await register.connect();
      app = await NestFactory.createApplicationContext(ChaosClientModule, { logger: ['error'] });
      await app.init();
      running = true;
      for (let i = 0; i < config.hotWorkers; i++) workers.push(worker(true, i));
      for (let i = 0; i < config.coldWorkers; i++) workers.push(worker(false, i));
    },
    async stop() {
      running = false;
      await Promise.all(workers);
      await app?.close();
      for (const redis of userNodes ?? []) redis.disconnect();
      register.close();
      stopLagMonitor?.();
    },
    async probe(round, budgetMs) {
      const startedAt = sharedNow();
      const record: ProbeRecord = { phase, client, round, startedAt };
      try {
        const redlock = app!.get<Service>(lib.RedlockService);
        const lock = await redlock.acquire(`${phase}:probe:${client}:${round}`, ttl, {
          ...retry,
          acquireTimeout: budgetMs,
        });
        record.grantedAt = sharedNow();
        await lock.release();
      } catch (error) {
        record.error = message(error);
      }
      record.endedAt = sharedNow();
      return record;
    },
  };
}
