/**
 * Workload 4: decorator overhead. A Nest application context (RedlockModule.forRoot over the same
 * masters) with one provider doing the same work twice: through a `@Locked` method, and through
 * `RedlockService.using` with the same resource, TTL and callback.
 */
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Locked, RedlockModule, RedlockService } from 'nestjs-quorum-lock';
import type { Cycle } from '../adapters/types.js';

const TTL = 10_000;

@Injectable()
class DecoratedWork {
  constructor(private readonly redlock: RedlockService) {}

  @Locked('#key', TTL)
  async viaDecorator(key: string): Promise<number> {
    return key.length;
  }

  viaUsing(key: string): Promise<number> {
    return this.redlock.using(key, TTL, async () => key.length);
  }
}

export interface DecoratorSubjects {
  using: Cycle;
  locked: Cycle;
  close(): Promise<void>;
}

export async function openDecoratorSubjects(urls: readonly string[]): Promise<DecoratorSubjects> {
  @Module({ imports: [RedlockModule.forRoot({ nodes: [...urls] })], providers: [DecoratedWork] })
  class BenchModule {}

  const app: INestApplicationContext = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  const work = app.get(DecoratedWork);
  return {
    using: async (key) => void (await work.viaUsing(key)),
    locked: async (key) => void (await work.viaDecorator(key)),
    close: () => app.close(),
  };
}
