/**
 * RedlockExceptionFilter on real Express and Fastify servers: busy → 409, masters unavailable → 503
 * (with Retry-After when the restart guard says how long), lost → 503 lock-lost, bad key → 400;
 * the body never carries the masters' addresses.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, HttpException, Module, Param, type INestApplication } from '@nestjs/common';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import {
  LockAcquisitionError,
  Locked,
  RedlockExceptionFilter,
  RedlockModule,
  RedlockService,
} from '../../lib/index.js';
import { RedlockTestingService } from '../../lib/testing/index.js';

const stub = new RedlockTestingService().simulateBusy('busy');

@Controller()
class LocksController {
  constructor(private readonly redlock: RedlockService) {}

  @Get('busy')
  busy() {
    return stub.using('busy', 1_000, () => 'never');
  }

  @Get('unavailable') // the real service, whose masters are a closed port: no quorum, not busy
  unavailable() {
    return this.redlock.acquire('anything', 1_000, { retryCount: 0 });
  }

  @Get('guarded') // what an acquisition refused by the restart guard carries: how long each master is kept out
  guarded() {
    const outcomes = [
      { master: '10.0.0.1:6379', status: 'restarted' as const, distrustedFor: 2_500 },
      { master: '10.0.0.2:6379', status: 'restarted' as const, distrustedFor: 900 },
      { master: '10.0.0.3:6379', status: 'granted' as const },
    ];
    throw new LockAcquisitionError(
      ['guarded'],
      1,
      outcomes,
      'Could not lock "guarded": 10.0.0.1:6379 restarted too recently',
    );
  }

  @Get('lost')
  lost() {
    return stub.using('lost', 1_000, async (lock) => {
      stub.simulateLoss('lost');
      return lock.signal.aborted;
    });
  }

  @Get('key/:id')
  @Locked('item:#id.missing')
  async key(@Param('id') id: string) {
    return id;
  }

  @Get('teapot') // not a RedlockError: the filter leaves it to Nest
  teapot() {
    throw new HttpException('teapot', 418);
  }
}

@Module({
  imports: [
    RedlockModule.forRoot({
      nodes: ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3'],
      connectTimeout: 100,
      restartGuard: false,
    }),
  ],
  controllers: [LocksController],
})
class AppModule {}

// `new RedlockExceptionFilter()` (as in a microservice's main.ts) must answer HTTP the same way.
describe.each([
  ['Express', () => new ExpressAdapter(), true],
  ['Fastify', () => new FastifyAdapter(), true],
  ['Express, built without HttpAdapterHost', () => new ExpressAdapter(), false],
  ['Fastify, built without HttpAdapterHost', () => new FastifyAdapter(), false],
])('RedlockExceptionFilter on %s', (_name, adapter, withAdapterHost) => {
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    app = await NestFactory.create(AppModule, adapter(), { logger: false });
    app.useGlobalFilters(
      withAdapterHost ? new RedlockExceptionFilter(app.get(HttpAdapterHost)) : new RedlockExceptionFilter(),
    );
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app?.close();
  });

  async function get(path: string) {
    const response = await fetch(base.replace('[::1]', '127.0.0.1') + path);
    const text = await response.text();
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: JSON.parse(text) as Record<string, unknown>,
      text,
    };
  }

  it('busy lock → 409 lock-busy', async () => {
    const { status, body, retryAfter } = await get('/busy');
    expect(status).toBe(409);
    expect(body).toEqual({ statusCode: 409, reason: 'lock-busy', message: expect.any(String) });
    expect(retryAfter).toBeNull();
  });

  it('masters unavailable → 503 lock-unavailable, no masters named in the body', async () => {
    const { status, body, retryAfter, text } = await get('/unavailable');
    expect(status).toBe(503);
    expect(body).toMatchObject({ statusCode: 503, reason: 'lock-unavailable' });
    expect(retryAfter).toBeNull();
    expect(text).not.toContain('127.0.0.1');
  });

  it('masters kept out by the restart guard → 503 with Retry-After in whole seconds (the longest wait, rounded up)', async () => {
    const { status, body, retryAfter, text } = await get('/guarded');
    expect(status).toBe(503);
    expect(body).toMatchObject({ statusCode: 503, reason: 'lock-unavailable' });
    expect(retryAfter).toBe('3');
    expect(text).not.toContain('10.0.0.1');
  });

  it('lost lock → 503 lock-lost without Retry-After', async () => {
    const { status, body, retryAfter } = await get('/lost');
    expect(status).toBe(503);
    expect(body).toMatchObject({ statusCode: 503, reason: 'lock-lost' });
    expect(retryAfter).toBeNull();
  });

  it('a request value that makes no key → 400 bad-lock-key', async () => {
    const { status, body } = await get('/key/7');
    expect(status).toBe(400);
    expect(body).toMatchObject({ statusCode: 400, reason: 'bad-lock-key' });
  });

  it('other errors are left to Nest', async () => {
    const { status, body } = await get('/teapot');
    expect(status).toBe(418);
    expect(body).toMatchObject({ statusCode: 418, message: 'teapot' });
  });
});
