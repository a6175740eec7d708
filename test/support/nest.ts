/** App start-up helpers, their masters and option presets for the Nest integration suites. */
import { afterAll, beforeAll, beforeEach } from '@jest/globals';
import { Test } from '@nestjs/testing';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { RedlockModule, type RedlockModuleOptions, type RedlockNode } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { LARGEST_TTL, RedisInspector } from './inspector.js';

/** The masters of a Nest suite and one inspector on them (see {@link useNestMasters}). */
export interface NestMasters {
  readonly redis: RedisMasters;
  readonly urls: string[];
  readonly inspector: RedisInspector;
}

/**
 * Starts `count` masters in `beforeAll` and waits until the restart guard trusts them (apps use
 * it on), empties them before each test (and, with `resetStats`, resets their command stats), and
 * stops them in `afterAll`. The fields are filled in by `beforeAll`: read them inside tests.
 *
 * @example
 * const masters = useNestMasters(3);
 * it('…', async () => {
 *   const app = await startApp(fastOptions(masters.urls));
 *   expect(await masters.inspector.released()).toBe(true);
 * });
 */
export function useNestMasters(count: number, { resetStats = false } = {}): NestMasters {
  const set = {} as { redis: RedisMasters; urls: string[]; inspector: RedisInspector };
  beforeAll(async () => {
    set.redis = await startRedisMasters(count);
    set.urls = set.redis.urls;
    set.inspector = new RedisInspector(set.urls);
    await set.inspector.waitForUptime();
  });
  beforeEach(async () => {
    await set.inspector.flush();
    if (resetStats) await set.inspector.resetStats();
  });
  afterAll(async () => {
    await set.inspector?.close();
    await set.redis?.stop();
  });
  return set;
}

/** Options that keep lock traffic fast: small TTL, short command timeout, quick retries. */
export function fastOptions(urls: RedlockNode[], extra: Partial<RedlockModuleOptions> = {}): RedlockModuleOptions {
  return {
    nodes: urls,
    ttl: LARGEST_TTL,
    commandTimeout: 100,
    connectTimeout: 1_000,
    retryCount: 20,
    retryDelay: 20,
    retryJitter: 10,
    ...extra,
  };
}

/** Compiles a testing module from `metadata` alone (add RedlockModule yourself) and inits an app, logger off. */
export async function initApp(metadata: ModuleMetadata): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

/** `initApp` with `RedlockModule.forRoot(options)` imported first. */
export function startApp(options: RedlockModuleOptions, metadata: ModuleMetadata = {}): Promise<INestApplication> {
  return initApp({ ...metadata, imports: [RedlockModule.forRoot(options), ...(metadata.imports ?? [])] });
}

/** `startApp`, listening on a free loopback port; returns the base URL too. */
export async function startHttpApp(
  options: RedlockModuleOptions,
  metadata: ModuleMetadata = {},
): Promise<{ app: INestApplication; base: string }> {
  const app = await startApp(options, metadata);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, base: `http://127.0.0.1:${port}` };
}
