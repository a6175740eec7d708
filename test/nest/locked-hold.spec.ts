/**
 * `@Locked` with `onBusy`, `minHold` and `maxHold`, in a Nest application on 3 real masters: a
 * skipped call resolves to undefined with no error logged, minHold keeps the lock after the method,
 * maxHold aborts a hung method's signal and the call rejects with LockLostError.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  currentLock,
  Locked,
  LockLostError,
  RedlockConfigError,
  RedlockModule,
  RedlockService,
} from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { RedisInspector, sleep, waitFor } from '../support/index.js';
import { fastOptions } from '../support/nest.js';

/** A logger that records every line by level, so that the test can assert nothing was logged as an error. */
class RecordingLogger implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];
  log = (message: unknown): void => void this.lines.push({ level: 'log', message: String(message) });
  error = (message: unknown): void => void this.lines.push({ level: 'error', message: String(message) });
  warn = (message: unknown): void => void this.lines.push({ level: 'warn', message: String(message) });
  debug = (message: unknown): void => void this.lines.push({ level: 'debug', message: String(message) });
  verbose = (message: unknown): void => void this.lines.push({ level: 'verbose', message: String(message) });
}

@Injectable()
class JobsService {
  runs = 0;
  hook: () => Promise<unknown> = async () => undefined;

  @Locked('job:#id', { onBusy: 'skip' })
  async skipWhenBusy(id: string): Promise<string> {
    this.runs++;
    await this.hook();
    return `ran ${id}`;
  }

  @Locked('fire:#id', { ttl: 3_000, onBusy: 'skip', minHold: 1_200 })
  async oncePerFire(id: string): Promise<string> {
    this.runs++;
    return `fired ${id}`;
  }

  @Locked('hung:#id', { ttl: 400, maxHold: 900 })
  async hung(id: string): Promise<string> {
    const { signal } = currentLock()!;
    await new Promise((resolve) => signal.addEventListener('abort', resolve));
    await sleep(100); // winds down after being told
    return `stopped ${id}`;
  }
}

let redis: RedisMasters;
let inspector: RedisInspector;
let app: INestApplication;
let jobs: JobsService;
let redlock: RedlockService;
const logger = new RecordingLogger();

beforeAll(async () => {
  redis = await startRedisMasters(3);
  inspector = new RedisInspector(redis.urls);
  await inspector.waitForUptime();
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot(fastOptions(redis.urls, { restartGuard: false, retryDelay: 30_000, retryJitter: 0 })),
    ],
    providers: [JobsService],
  }).compile();
  app = moduleRef.createNestApplication({ logger });
  await app.init();
  jobs = app.get(JobsService);
  redlock = app.get(RedlockService);
});

afterAll(async () => {
  await app?.close();
  await inspector?.close();
  await redis?.stop();
});

beforeEach(async () => {
  jobs.runs = 0;
  jobs.hook = async () => undefined;
  logger.lines.length = 0;
  await inspector.flush();
});

describe("@Locked(…, { onBusy: 'skip' })", () => {
  it('resolves to undefined without running the method while another holder has the lock, logs no error, and retries nothing', async () => {
    const holder = await redlock.acquire('job:j-1', 5_000, { retryCount: 0 });
    // retryDelay is 30 s in this app: a retry would not settle within the race below.
    const result = await Promise.race([
      jobs.skipWhenBusy('j-1'),
      new Promise((resolve) => setTimeout(resolve, 5_000, 'still waiting').unref()),
    ]);
    expect(result).toBeUndefined();
    expect(jobs.runs).toBe(0);
    expect(logger.lines.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
    expect(
      logger.lines.some((l) => l.level === 'debug' && /Skipped "job:j-1": held by another holder/.test(l.message)),
    ).toBe(true);
    await holder.release();
    await expect(jobs.skipWhenBusy('j-1')).resolves.toBe('ran j-1');
    expect(jobs.runs).toBe(1);
  });

  it('two concurrent calls: one runs, the other resolves to undefined', async () => {
    let release!: () => void;
    jobs.hook = () => new Promise((resolve) => (release = () => resolve(undefined)));
    const first = jobs.skipWhenBusy('j-2');
    await waitFor(async () => (await inspector.holders('lock:job:j-2')) === 3);
    await expect(jobs.skipWhenBusy('j-2')).resolves.toBeUndefined();
    release();
    await expect(first).resolves.toBe('ran j-2');
    expect(jobs.runs).toBe(1);
  });
});

describe('@Locked(…, { minHold })', () => {
  it('keeps the lock after a quick method until minHold, so a second fire within minHold is skipped', async () => {
    await expect(jobs.oncePerFire('f-1')).resolves.toBe('fired f-1');
    expect(await inspector.holders('lock:fire:f-1')).toBeGreaterThanOrEqual(2); // still held after the method returned
    await expect(jobs.oncePerFire('f-1')).resolves.toBeUndefined(); // a late duplicate fire is skipped
    expect(jobs.runs).toBe(1);
    expect(await waitFor(async () => (await inspector.holders('lock:fire:f-1')) === 0, 3_000)).toBe(true); // lapsed at minHold, before the 3 s TTL
  });

  it('refuses minHold above ttl at decoration, naming the option', () => {
    const declare = () => {
      class TooLong {
        @Locked('x:#id', { ttl: 1_000, minHold: 2_000 })
        async run(id: string): Promise<string> {
          return id;
        }
      }
      return TooLong;
    };
    expect(declare).toThrow(RedlockConfigError);
    try {
      declare();
    } catch (error) {
      expect((error as RedlockConfigError).option).toBe('minHold');
    }
  });

  it("refuses onBusy other than 'wait' | 'skip' at decoration, naming the option", () => {
    let error: unknown;
    try {
      class Bad {
        @Locked('x:#id', { onBusy: 'later' as never })
        async run(id: string): Promise<string> {
          return id;
        }
      }
      void Bad;
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe('onBusy');
  });

  it('refuses an option @Locked does not know (a typo) at decoration, naming it and the closest one', () => {
    let error: unknown;
    try {
      class Typo {
        @Locked('x:#id', { minhold: 500 } as never)
        async run(id: string): Promise<string> {
          return id;
        }
      }
      void Typo;
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe('minhold');
    expect((error as Error).message).toContain('did you mean `minHold`?');
  });
});

describe('@Locked(…, { maxHold })', () => {
  it('a method hung past maxHold has its signal aborted, and the call rejects with LockLostError once it settles', async () => {
    const error = await jobs.hung('h-1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as Error).message).toMatch(/maxHold/);
    expect(await inspector.gone('lock:hung:h-1')).toBe(true);
  });
});
