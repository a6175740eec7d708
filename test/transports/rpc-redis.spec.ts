/**
 * A Redis-transport microservice (its broker a redis-server of its own, locks on three masters):
 * the lock's answers do not depend on the transport, and a handler that returns an Observable keeps
 * its lock while it streams and reaches the client with the same answers as a promise handler.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Module, UseGuards, type CanActivate, type INestMicroservice } from '@nestjs/common';
import {
  ClientProxyFactory,
  MessagePattern,
  Payload,
  RpcException,
  Transport,
  type ClientProxy,
} from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { Observable, firstValueFrom, toArray } from 'rxjs';
import { Locked, RedlockExceptionFilter, RedlockModule, RedlockService, currentLock } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { useMasters, waitFor, whilePaused } from '../support/index.js';
import {
  LOSABLE,
  ONE_TRY,
  errorOf,
  expectErrorAnswer,
  expectNoMasterPort,
  transportOptions,
} from './fixtures/critical-section.js';

/** Rejects every call before the handler runs, as an auth guard would. */
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    throw new RpcException({ code: 'forbidden' });
  }
}

let streaming = 0;

@Controller()
class StreamHandler {
  @MessagePattern('count')
  @Locked('stream-item:#data.id', ONE_TRY)
  count(@Payload() data: { id: string; until?: number }): Observable<number> {
    return new Observable<number>((subscriber) => {
      streaming++;
      let n = 0;
      const tick = setInterval(() => {
        subscriber.next(++n);
        if (n === (data.until ?? 3)) {
          clearInterval(tick);
          subscriber.complete();
        }
      }, 20);
      return () => clearInterval(tick);
    });
  }

  @MessagePattern('stop-on-loss')
  @Locked('stream-item:#data.id', LOSABLE)
  async stopOnLoss(@Payload() data: { id: string }): Promise<string> {
    const { signal } = currentLock()!;
    streaming++;
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    signal.throwIfAborted(); // the README's pattern: stop writing once the lock is gone
    return data.id;
  }

  @MessagePattern('guarded')
  @UseGuards(DenyGuard)
  @Locked('stream-item:#data.id', ONE_TRY)
  async guarded(@Payload() data: { id: string }): Promise<string> {
    return data.id;
  }
}

const masters = useMasters(3);
let broker: RedisMasters;
let app: INestMicroservice;
let client: ClientProxy;

beforeAll(async () => {
  broker = await startRedisMasters(1);
  const { port } = new URL(broker.urls[0]);
  const options = { host: '127.0.0.1', port: Number(port) };
  @Module({ imports: [RedlockModule.forRoot(transportOptions(masters.urls))], controllers: [StreamHandler] })
  class InstanceModule {}
  const moduleRef = await Test.createTestingModule({ imports: [InstanceModule] }).compile();
  app = moduleRef.createNestMicroservice({ transport: Transport.REDIS, options, logger: false });
  app.useGlobalFilters(new RedlockExceptionFilter());
  await app.listen();
  client = ClientProxyFactory.create({ transport: Transport.REDIS, options });
  await client.connect();
});

afterAll(async () => {
  await client?.close();
  await app?.close();
  await broker?.stop();
});

describe('Redis-transport microservice', () => {
  it('an Observable handler streams every value while holding its lock, and frees it at the end', async () => {
    const values = firstValueFrom(client.send<number>('count', { id: 's1', until: 20 }).pipe(toArray()));
    const service = app.get(RedlockService);
    const started = streaming;
    expect(await waitFor(() => streaming > started, 10_000)).toBe(true);
    await expect(service.tryAcquire('stream-item:s1', 1_000)).resolves.toBeNull();
    expect(await values).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const after = await service.tryAcquire('stream-item:s1', 1_000);
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('a busy lock errors an Observable handler with lock-busy, naming the resource', async () => {
    const held = await app.get(RedlockService).acquire('stream-item:s2', 10_000);
    try {
      expectErrorAnswer(await errorOf(client, 'count', { id: 's2' }), 'lock-busy', 'stream-item:s2');
    } finally {
      await held.release();
    }
  });

  it('a handler that stops with signal.throwIfAborted() once its lock is lost is answered lock-lost', async () => {
    const answer = errorOf(client, 'stop-on-loss', { id: 'lost' });
    const started = streaming;
    expect(await waitFor(() => streaming > started, 10_000)).toBe(true);
    const settled = await whilePaused(masters.masters.slice(0, 2), () => answer);
    expectErrorAnswer(settled, 'lock-lost', 'stream-item:lost');
    expectNoMasterPort(settled, masters);
  });

  it("a guard's RpcException passes through unchanged and takes no lock", async () => {
    expect(await errorOf(client, 'guarded', { id: 'g' })).toEqual({ code: 'forbidden' });
    const free = await app.get(RedlockService).tryAcquire('stream-item:g', 1_000);
    expect(free).not.toBeNull();
    await free!.release();
  });
});
