import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { RedlockModule, RedlockService } from '../../lib/index.js';
import { RedlockHealthIndicator } from '../../lib/terminus/index.js';
import { sleep, waitFor } from '../support/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redlock: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.redlock.isHealthy('locks')]);
  }
}

interface Report {
  status: string;
  details: {
    locks: {
      status: string;
      quorum: number;
      trusted: number;
      total: number;
      message?: string;
      masters: Record<string, unknown>[];
    };
  };
}

describe('RedlockHealthIndicator with real Terminus, real masters', () => {
  let redis: RedisMasters;
  let app: INestApplication;
  let url: string;
  const TTL = 1_000;

  const get = async (): Promise<{ code: number; body: Report }> => {
    const res = await fetch(`${url}/health`);
    const body = (await res.json()) as Report & { info?: Report['details']; error?: Report['details'] };
    return { code: res.status, body };
  };

  beforeAll(async () => {
    redis = await startRedisMasters(3);
    const ref = await Test.createTestingModule({
      imports: [
        TerminusModule,
        // connectTimeout bounds each health check's INFO probe: generous, so that a loaded machine's
        // slow answer is not read as a master that does not answer
        RedlockModule.forRoot({
          nodes: redis.urls,
          ttl: TTL,
          connectTimeout: 2_000,
          commandTimeout: 200,
          logger: false,
        }),
      ],
      controllers: [HealthController],
      providers: [RedlockHealthIndicator],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
    url = url.replace('[::1]', '127.0.0.1');
    // The restart guard counts a fresh master once its uptime passes the TTL plus drift, and reads
    // Redis's whole-second uptime one second short: up to TTL + drift + 2 s after the start. Wait
    // for the library to count all three rather than sleep a guess (a fixed 2.3 s sleep read
    // "fresh, distrusted for 11 ms" on some runs, and the first check answered 503).
    const redlock = app.get(RedlockService);
    expect(await waitFor(() => redlock.masterStates().every((m) => m.trusted), 10_000)).toBe(true);
  }, 30_000);
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('all up: status ok, indicator up, each master connected and trusted with a round-trip time', async () => {
    const { code, body } = await get();
    expect(code).toBe(200);
    expect(body.status).toBe('ok');
    const locks = body.details.locks;
    expect(locks).toMatchObject({ status: 'up', quorum: 2, trusted: 3, total: 3 });
    for (const [i, m] of locks.masters.entries()) {
      expect(m).toMatchObject({
        master: redis.urls[i].replace('redis://', ''),
        connected: true,
        trusted: true,
        distrustedFor: 0,
        maxmemoryPolicy: 'noeviction',
      });
      expect(typeof m.roundTripMs).toBe('number');
    }
  });

  it('a master distrusted (restarted empty): degraded, naming it, why and for how long', async () => {
    await redis.masters[2].kill();
    await redis.masters[2].restart();
    let report: { code: number; body: Report } | undefined;
    const deadline = Date.now() + 5_000;
    do {
      await sleep(50);
      report = await get();
    } while (report.body.details.locks.masters[2].connected !== true && Date.now() < deadline);
    expect(report.code).toBe(200);
    expect(report.body.status).toBe('degraded');
    const locks = report.body.details.locks;
    expect(locks.status).toBe('degraded');
    expect(locks.trusted).toBe(2);
    expect(locks.masters[2]).toMatchObject({ connected: true, trusted: false });
    expect(['fresh', 'restarted', 'unknown']).toContain(locks.masters[2].distrust);
    expect(locks.masters[2].distrustedFor).toBeGreaterThan(0);
    expect(locks.masters[2].distrustedFor).toBeLessThanOrEqual(TTL + 12 + 1_000);
    // ... and up again once the guard has run out
    await sleep(TTL + 1_500);
    // polled briefly: on a loaded machine one check's INFO can miss the probe bound and read as not answering
    let after = await get();
    for (const deadline = Date.now() + 5_000; after.body.details.locks.status !== 'up' && Date.now() < deadline;) {
      await sleep(100);
      after = await get();
    }
    expect(after.body.details.locks.status).toBe('up');
  });

  it('one master hung (SIGSTOP: its connection stays up, nothing answers): degraded, then up once it answers again', async () => {
    redis.masters[2].pause();
    try {
      const { code, body } = await get();
      expect(code).toBe(200);
      expect(body.details.locks).toMatchObject({ status: 'degraded', trusted: 2 });
      expect(body.details.locks.masters[2]).toMatchObject({ connected: true, trusted: false, distrust: 'unreachable' });
      expect(String(body.details.locks.masters[2].lastError)).toContain('no answer');
    } finally {
      redis.masters[2].resume();
    }
    // the next check gets its answer again (polled: the resumed server may be slow on a loaded machine)
    let after = await get();
    for (const deadline = Date.now() + 5_000; after.body.details.locks.status !== 'up' && Date.now() < deadline;) {
      await sleep(100);
      after = await get();
    }
    expect(after.body.details.locks).toMatchObject({ status: 'up', trusted: 3 });
  });

  it('one master down: degraded (a quorum is left), the master unreachable', async () => {
    await redis.masters[2].kill();
    await sleep(300);
    const { code, body } = await get();
    expect(code).toBe(200);
    expect(body.status).toBe('degraded');
    expect(body.details.locks).toMatchObject({ status: 'degraded', trusted: 2 });
    expect(body.details.locks.masters[2]).toMatchObject({ connected: false, trusted: false, distrust: 'unreachable' });
    expect(body.details.locks.message).toContain('2 of 3 masters count');
  });

  it('a majority down: down, HTTP 503', async () => {
    await redis.masters[1].kill();
    await sleep(300);
    const { code, body } = await get();
    expect(code).toBe(503);
    expect(body.status).toBe('error');
    expect(body.details.locks).toMatchObject({ status: 'down', trusted: 1, quorum: 2 });
    expect(body.details.locks.masters.filter((m) => m.connected === false)).toHaveLength(2);
  });
});
