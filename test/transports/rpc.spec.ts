/**
 * A TCP microservice (`@MessagePattern`, `#data.id`) in two app instances on one set of masters:
 * the same id never runs in both at once, and a busy lock reaches the client's Observable as
 * `{ status: 'error', reason: 'lock-busy', message }` through RedlockExceptionFilter.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Controller, Module, UseFilters } from '@nestjs/common';
import {
  ClientProxyFactory,
  MessagePattern,
  Payload,
  RpcException,
  Transport,
  type ClientProxy,
} from '@nestjs/microservices';
import type { INestMicroservice } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo, Server } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { Locked, RedlockExceptionFilter, RedlockModule, RedlockService } from '../../lib/index.js';
import { useMasters, whilePaused } from '../support/index.js';
import {
  CriticalSection,
  CustomAnswerFilter,
  LOSABLE,
  LossProbe,
  ONE_TRY,
  SectionHandler,
  errorOf,
  expectErrorAnswer,
  expectNoMasterPort,
  instanceProviders,
  transportOptions,
} from './fixtures/critical-section.js';
import { useTwoInstances, type AtClose } from './fixtures/two-instances.js';

const probe = new LossProbe();

@Controller()
class ItemsHandler extends SectionHandler {
  @MessagePattern('work')
  @Locked('rpc-item:#data.id')
  work(@Payload() data: { id: string }): Promise<string> {
    return this.enter(data.id);
  }

  @MessagePattern('work-once')
  @Locked('rpc-item:#data.id', ONE_TRY)
  workOnce(@Payload() data: { id: string }): Promise<string> {
    return this.enter(data.id);
  }

  @MessagePattern('work-once-custom')
  @UseFilters(CustomAnswerFilter)
  @Locked('rpc-item:#data.id', ONE_TRY)
  workOnceCustom(@Payload() data: { id: string }): Promise<string> {
    return this.enter(data.id);
  }

  @MessagePattern('work-until-lost')
  @Locked('rpc-item:#data.id', LOSABLE)
  workUntilLost(@Payload() data: { id: string }): Promise<string> {
    return probe.runUntilLost(data.id);
  }

  @MessagePattern('own-error')
  ownError(): never {
    throw new RpcException({ code: 'out-of-stock', sku: 'A-1' });
  }
}

const masters = useMasters(3);
const section = new CriticalSection();

async function startInstance(name: string, atClose: AtClose): Promise<{ app: INestMicroservice; client: ClientProxy }> {
  @Module({
    imports: [RedlockModule.forRoot(transportOptions(masters.urls))],
    controllers: [ItemsHandler],
    providers: instanceProviders(section, name),
  })
  class InstanceModule {}
  const moduleRef = await Test.createTestingModule({ imports: [InstanceModule] }).compile();
  const app = moduleRef.createNestMicroservice({
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port: 0 },
    logger: false,
  });
  app.useGlobalFilters(new RedlockExceptionFilter());
  atClose(() => app.close());
  await app.listen();
  const { port } = app.unwrap<Server>().address() as AddressInfo;
  const client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
  atClose(() => client.close());
  await client.connect();
  return { app, client };
}

const two = useTwoInstances(startInstance);

describe('TCP microservice, two instances', () => {
  it('runs calls for the same id one at a time across both instances; every call is answered', async () => {
    const before = section.entered;
    const calls = Array.from({ length: 10 }, (_, i) =>
      firstValueFrom((i % 2 === 0 ? two.a : two.b).client.send<string>('work', { id: 'same' })),
    );
    const answers = await Promise.all(calls);
    expect(new Set(answers)).toEqual(new Set(['A', 'B']));
    expect(section.entered - before).toBe(10);
    expect(section.maxInside).toBe(1);
  });

  it('a busy lock errors the Observable with { status, reason: lock-busy, message } naming the resource', async () => {
    const held = await two.a.app.get(RedlockService).acquire('rpc-item:7', 10_000);
    try {
      const answer = await errorOf(two.b.client, 'work-once', { id: '7' });
      expectErrorAnswer(answer, 'lock-busy', 'rpc-item:7');
    } finally {
      await held.release();
    }
  });

  it('no quorum (two of three masters paused) errors with lock-unavailable, naming no master', async () => {
    const answer = await whilePaused(masters.masters.slice(0, 2), () =>
      errorOf(two.b.client, 'work-once', { id: '9' }),
    );
    expectErrorAnswer(answer, 'lock-unavailable', 'rpc-item:9');
    expectNoMasterPort(answer, masters);
  });

  it('a lock lost while the handler ran errors with lock-lost, naming no master', async () => {
    const answer = await probe.loseLockOf(masters, errorOf(two.b.client, 'work-until-lost', { id: 'lost' }));
    expectErrorAnswer(answer, 'lock-lost', 'rpc-item:lost');
    expectNoMasterPort(answer, masters);
  });

  it("a subclass's answer() reaches the client", async () => {
    const held = await two.a.app.get(RedlockService).acquire('rpc-item:8', 10_000);
    try {
      const answer = await errorOf(two.b.client, 'work-once-custom', { id: '8' });
      expect(answer).toEqual({ status: 'error', reason: 'come-back-later', message: 'custom answer in rpc' });
    } finally {
      await held.release();
    }
  });

  it('a payload that makes no key errors with bad-lock-key', async () => {
    const answer = await errorOf(two.b.client, 'work-once', {});
    expectErrorAnswer(answer, 'bad-lock-key');
  });

  it("the handler's own RpcException passes through unchanged", async () => {
    expect(await errorOf(two.a.client, 'own-error', {})).toEqual({ code: 'out-of-stock', sku: 'A-1' });
  });
});
