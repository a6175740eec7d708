/**
 * A hybrid app (HTTP plus a TCP microservice through `connectMicroservice(…, { inheritAppConfig: true })`),
 * as docs/transports.md shows it: the HTTP app's one global filter answers both, each in its own
 * shape, and `#id` names a handler parameter taken with `@Payload('id')`.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Module, Param, type INestApplication } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ClientProxyFactory, MessagePattern, Payload, Transport, type ClientProxy } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom, timeout } from 'rxjs';
import { Locked, RedlockExceptionFilter, RedlockModule, RedlockService } from '../../lib/index.js';
import { freePort } from '../../tools/redis-masters.js';
import { useMasters } from '../support/index.js';
import { ONE_TRY, expectErrorAnswer, transportOptions } from './fixtures/critical-section.js';

@Controller()
class StockController {
  @MessagePattern('reserve')
  @Locked('hybrid-stock:#id', ONE_TRY)
  async reserve(@Payload('id') id: string): Promise<string> {
    return `reserved ${id}`;
  }

  @Get('stock/:id')
  @Locked('hybrid-stock:#id', ONE_TRY)
  async read(@Param('id') id: string): Promise<string> {
    return `read ${id}`;
  }
}

const masters = useMasters(3);
let app: INestApplication;
let client: ClientProxy;
let base: string;

beforeAll(async () => {
  @Module({ imports: [RedlockModule.forRoot(transportOptions(masters.urls))], controllers: [StockController] })
  class HybridModule {}
  const moduleRef = await Test.createTestingModule({ imports: [HybridModule] }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  app.useGlobalFilters(new RedlockExceptionFilter(app.get(HttpAdapterHost)));
  const port = await freePort();
  app.connectMicroservice(
    { transport: Transport.TCP, options: { host: '127.0.0.1', port } },
    { inheritAppConfig: true },
  );
  await app.startAllMicroservices();
  await app.listen(0, '127.0.0.1');
  base = await app.getUrl();
  client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
  await client.connect();
});

afterAll(async () => {
  await client?.close();
  await app?.close();
});

describe('hybrid app: one global filter for HTTP and the microservice', () => {
  it("locks on the @Payload('id') parameter by name (#id) and answers the message", async () => {
    expect(await firstValueFrom(client.send<string>('reserve', { id: 'A-1' }).pipe(timeout(5_000)))).toBe(
      'reserved A-1',
    );
  });

  it('a busy lock answers the microservice client lock-busy and the HTTP client 409, from the one filter', async () => {
    const held = await app.get(RedlockService).acquire('hybrid-stock:A-2', 10_000);
    try {
      const rpc = await firstValueFrom(client.send('reserve', { id: 'A-2' }).pipe(timeout(5_000))).then(
        (value) => `expected an error, got ${JSON.stringify(value)}`,
        (error: unknown) => error,
      );
      expectErrorAnswer(rpc, 'lock-busy', 'hybrid-stock:A-2');
      const http = await fetch(`${base.replace('[::1]', '127.0.0.1')}/stock/A-2`);
      expect(http.status).toBe(409);
      expect(await http.json()).toMatchObject({ statusCode: 409, reason: 'lock-busy' });
    } finally {
      await held.release();
    }
  });
});
