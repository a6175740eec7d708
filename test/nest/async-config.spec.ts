/**
 * forRootAsync with @nestjs/config (useFactory and useClass), and invalid options refused at start-up
 * with a RedlockConfigError naming the option, before anything reaches the masters.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Locked,
  RedlockConfigError,
  RedlockModule,
  RedlockService,
  type RedlockModuleOptions,
} from '../../lib/index.js';
import { configRoot, redlockFromClass, redlockFromFactory } from './fixtures/config.js';
import { OrdersFeatureModule } from './fixtures/feature.module.js';
import { OrdersService } from './fixtures/orders.service.js';
import { initApp, useNestMasters } from '../support/nest.js';

const masters = useNestMasters(3, { resetStats: true });

describe('forRootAsync with ConfigModule', () => {
  it.each([
    ['useFactory + inject: [ConfigService]', redlockFromFactory],
    ['useClass implementing RedlockOptionsFactory', redlockFromClass],
  ])('%s: reads the masters from ConfigService and @Locked works', async (_label, redlockModule) => {
    const app = await initApp({ imports: [configRoot(masters.urls), redlockModule()], providers: [OrdersService] });
    try {
      expect(app.get(RedlockService).masters).toEqual(masters.urls.map((u) => u.replace('redis://', '')));
      const orders = app.get(OrdersService);
      orders.hook = async (id: string) => masters.inspector.held(`lock:order:${id}`);
      await expect(orders.process('cfg-1')).resolves.toBe(3);
      expect(await masters.inspector.released()).toBe(true);
    } finally {
      await app.close();
    }
  });
});

describe('global by default', () => {
  it.each([
    ['forRoot', () => RedlockModule.forRoot({ nodes: masters.urls, ttl: 900, commandTimeout: 100 })],
    ['forRootAsync', redlockFromFactory],
  ])(
    '%s: a provider in a feature module that does not import RedlockModule gets its lock',
    async (_label, redlockModule) => {
      const app = await initApp({ imports: [configRoot(masters.urls), redlockModule(), OrdersFeatureModule] });
      try {
        const orders = app.get(OrdersService);
        orders.hook = async (id: string) => masters.inspector.held(`lock:order:${id}`);
        await expect(orders.process('global-1')).resolves.toBe(3);
      } finally {
        await app.close();
      }
    },
  );

  it('isGlobal: false: the feature module cannot resolve RedlockService, and start-up says so', async () => {
    const error = await startUpError({
      imports: [RedlockModule.forRoot({ nodes: masters.urls, isGlobal: false }), OrdersFeatureModule],
    });
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/RedlockService/);
  });
});

/** Compiles and inits; resolves to what start-up threw (undefined if it started). */
async function startUpError(metadata: ModuleMetadata): Promise<unknown> {
  let app: INestApplication | undefined;
  try {
    const moduleRef = await Test.createTestingModule(metadata).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await app?.close();
  }
}

describe('invalid options are refused at start-up', () => {
  const cases: [string, (urls: string[]) => Partial<RedlockModuleOptions>][] = [
    ['nodes', () => ({ nodes: [] })],
    ['ttl', () => ({ ttl: -5 })],
    ['retryCount', () => ({ retryCount: -1 })],
    ['retryJitter', () => ({ retryDelay: 10, retryJitter: 50 })],
    ['driftFactor', () => ({ driftFactor: 0.7 })],
    ['nodes[1]', (urls) => ({ nodes: [urls[0], urls[0], urls[1]] })],
    ['nodes[2]', (urls) => ({ nodes: [urls[0], urls[1], 'http://127.0.0.1:1'] })],
  ];

  it.each(cases)('forRoot: %s', async (option, bad) => {
    const clientsBefore = await masters.inspector.connectedClients(0);
    const error = await startUpError({
      imports: [RedlockModule.forRoot({ nodes: masters.urls, ...bad(masters.urls) })],
      providers: [OrdersService],
    });
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe(option);
    expect((error as Error).message).toContain(`\`${option}\``);
    expect(await masters.inspector.totalKeys()).toBe(0);
    expect(await masters.inspector.scriptCalls()).toBe(0);
    expect(await masters.inspector.connectedClients(0)).toBe(clientsBefore);
  });

  it('forRootAsync: a factory returning `ttl: -5` is refused the same way', async () => {
    const error = await startUpError({
      imports: [
        configRoot(masters.urls),
        RedlockModule.forRootAsync({ useFactory: () => ({ nodes: masters.urls, ttl: -5 }) }),
      ],
      providers: [OrdersService],
    });
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).option).toBe('ttl');
    expect((error as Error).message).toMatch(/`ttl`.*-5/);
    expect(await masters.inspector.totalKeys()).toBe(0);
    expect(await masters.inspector.scriptCalls()).toBe(0);
  });

  it('@Locked refuses a bad ttl when the decorator is applied', () => {
    const declare = () => {
      class BadTtl {
        @Locked('x:#id', -5)
        async run(id: string): Promise<string> {
          return id;
        }
      }
      return BadTtl;
    };
    expect(declare).toThrow(RedlockConfigError);
    expect(declare).toThrow(/BadTtl\.run/);
  });
});
