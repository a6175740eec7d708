/** App start-up helpers and option presets for the Nest integration suites. */
import { Test } from '@nestjs/testing';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { RedlockModule, type RedlockModuleOptions, type RedlockNode } from '../../lib/index.js';
import { LARGEST_TTL } from './inspector.js';

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
