/**
 * "Run this @Cron job on one instance only": two and three Nest application instances in this
 * process, each with its own Redlock connections and its own real @nestjs/schedule scheduler, fire
 * the same every-second job under `@Locked(…, { onBusy: 'skip', minHold })`. Each fire runs exactly
 * once, also when one instance fires a few hundred ms late (clock skew); standbys log no error; a
 * majority of masters down is an error, not a silent skip.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Inject, Injectable, type INestApplication, type LoggerService, type Provider } from '@nestjs/common';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { Locked, RedlockModule } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { RedisInspector, sleep, waitFor } from '../support/index.js';
import { fastOptions } from '../support/nest.js';

/** ttl and minHold of the jobs: a fire holds its lock for 700 ms, so an instance up to 700 ms late skips it. */
const TTL = 900;
const MIN_HOLD = 700;
/** How late the skewed instance fires. */
const SKEW = 300;

const INSTANCE = Symbol('instance');
const SKEW_MS = Symbol('skew');

interface Run {
  instance: number;
  /** The second of the fire, as the instance's scheduler saw it (before any skew). */
  fire: number;
  job: string;
}

/** Every job run in this process, in order. */
const runs: Run[] = [];
const secondOf = (ms: number): number => Math.round(ms / 1_000);

@Injectable()
class EverySecondJob {
  constructor(@Inject(INSTANCE) private readonly instance: number) {}

  @Cron('* * * * * *')
  @Locked('cron:every-second', { ttl: TTL, onBusy: 'skip', minHold: MIN_HOLD })
  async tick(): Promise<void> {
    runs.push({ instance: this.instance, fire: secondOf(Date.now()), job: 'every-second' });
    await sleep(20); // a short job: it ends long before minHold
  }
}

/** The same job on an instance whose scheduler fires `skew` ms late (a late clock, a slow start). */
@Injectable()
class SkewedJob {
  constructor(
    @Inject(INSTANCE) private readonly instance: number,
    @Inject(SKEW_MS) private readonly skew: number,
  ) {}

  @Cron('* * * * * *')
  async fire(): Promise<void> {
    const fire = secondOf(Date.now());
    await sleep(this.skew);
    await this.tick(fire);
  }

  @Locked('cron:skewed', { ttl: TTL, onBusy: 'skip', minHold: MIN_HOLD })
  async tick(fire: number): Promise<void> {
    runs.push({ instance: this.instance, fire, job: 'skewed' });
    await sleep(20);
  }
}

/** Nest logger output of all instances (Logger's static methods go to the last logger installed). */
class RecordingLogger implements LoggerService {
  readonly errors: string[] = [];
  log(): void {}
  warn(): void {}
  debug(): void {}
  verbose(): void {}
  error(message: unknown, ...rest: unknown[]): void {
    this.errors.push(
      [message, ...rest].map((m) => (m instanceof Error ? `${m.name}: ${m.message}` : String(m))).join(' '),
    );
  }
}

let redis: RedisMasters;
let inspector: RedisInspector;
const logger = new RecordingLogger();

beforeAll(async () => {
  redis = await startRedisMasters(3);
  inspector = new RedisInspector(redis.urls);
  await inspector.waitForUptime();
});

afterAll(async () => {
  await inspector?.close();
  await redis?.stop();
});

async function startInstance(instance: number, job: Provider, skew = 0): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot(fastOptions(redis.urls)), ScheduleModule.forRoot()],
    providers: [job, { provide: INSTANCE, useValue: instance }, { provide: SKEW_MS, useValue: skew }],
  }).compile();
  const app = moduleRef.createNestApplication({ logger });
  await app.init();
  return app;
}

/**
 * Runs `instances` apps for at least `fires` fires while all of them are up, and returns the runs of
 * `job` per fire second within that window.
 */
async function runFires(
  starts: (() => Promise<INestApplication>)[],
  job: string,
  fires: number,
): Promise<{ perFire: Map<number, Run[]>; errors: string[] }> {
  const apps: INestApplication[] = [];
  try {
    for (const start of starts) apps.push(await start());
    logger.errors.length = 0; // from here on, while every instance runs
    const from = secondOf(Date.now()) + 1; // the first fire every instance is up for
    await waitFor(() => secondOf(Date.now()) >= from + fires, (fires + 3) * 1_000, 50);
    const to = secondOf(Date.now()) - 1; // the last fire whose runs (and skews) are surely over
    await sleep(SKEW + 200);
    // Taken before app.close(): a fire still running at close rejects with LockLostError (reason
    // 'shutdown'), which the scheduler logs; that is shutdown, not the steady state measured here.
    const errors = [...logger.errors];
    const perFire = new Map<number, Run[]>();
    for (let s = from; s <= to; s++) perFire.set(s, []);
    for (const run of runs) if (run.job === job && perFire.has(run.fire)) perFire.get(run.fire)!.push(run);
    return { perFire, errors };
  } finally {
    await Promise.all(apps.map((app) => app.close()));
  }
}

function expectOncePerFire(perFire: Map<number, Run[]>, instances: number): void {
  expect(perFire.size).toBeGreaterThanOrEqual(10);
  const counts = [...perFire.entries()].map(([fire, list]) => [fire, list.length]);
  expect(counts).toEqual([...perFire.keys()].map((fire) => [fire, 1]));
  // Not a one-instance show by accident: every run came from one of the instances started.
  for (const list of perFire.values()) for (const run of list) expect(run.instance).toBeLessThan(instances);
}

describe('@Cron under @Locked({ onBusy: "skip", minHold })', () => {
  it('two instances: each fire runs exactly once over ten fires, and the scheduler logs no error', async () => {
    const { perFire, errors } = await runFires(
      [0, 1].map((i) => () => startInstance(i, EverySecondJob)),
      'every-second',
      10,
    );
    expectOncePerFire(perFire, 2);
    expect(errors).toEqual([]);
  }, 40_000);

  it('three instances: each fire runs exactly once over ten fires, and the scheduler logs no error', async () => {
    const { perFire, errors } = await runFires(
      [0, 1, 2].map((i) => () => startInstance(i, EverySecondJob)),
      'every-second',
      10,
    );
    expectOncePerFire(perFire, 3);
    expect(errors).toEqual([]);
  }, 40_000);

  it(`one instance firing ${SKEW} ms late: still exactly once per fire (minHold ${MIN_HOLD} ms covers the skew)`, async () => {
    const { perFire, errors } = await runFires(
      [
        () => startInstance(0, SkewedJob, 0),
        () => startInstance(1, SkewedJob, SKEW),
        () => startInstance(2, SkewedJob, SKEW / 2),
      ],
      'skewed',
      10,
    );
    expectOncePerFire(perFire, 3);
    expect(errors).toEqual([]);
  }, 40_000);

  it('a majority of masters down is an error on every instance (LockAcquisitionError logged), not a silent skip', async () => {
    const apps = [await startInstance(0, EverySecondJob), await startInstance(1, EverySecondJob)];
    try {
      await sleep(1_200);
      logger.errors.length = 0;
      const before = runs.length;
      redis.masters[1].pause();
      redis.masters[2].pause();
      try {
        const pausedAt = secondOf(Date.now());
        expect(await waitFor(() => logger.errors.length >= 4, 6_000, 50)).toBe(true);
        // Nothing ran while no quorum could be reached.
        expect(runs.slice(before).filter((r) => r.fire > pausedAt + 1)).toEqual([]);
      } finally {
        redis.masters[1].resume();
        redis.masters[2].resume();
      }
      const errors = [...logger.errors];
      expect(errors.filter((e) => !e.startsWith('LockAcquisitionError'))).toEqual([]);
    } finally {
      await Promise.all(apps.map((app) => app.close()));
    }
  }, 30_000);
});
