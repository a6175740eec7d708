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
  const using: Cycle = async (key) => void (await work.viaUsing(key));
  const locked: Cycle = async (key) => void (await work.viaDecorator(key));
  // First calls compile the decorator, the call chain and the lock path: warm both arms alike, so
  // that round 1's first arm does not pay them alone (the route workload does the same).
  for (const cycle of [locked, using])
    await Promise.all(
      Array.from({ length: 64 }, async (_, c) => {
        for (let n = 0; n < 30; n++) await cycle(`warm-decorator:${c}:${n}`);
      }),
    );
  return { using, locked, close: () => app.close() };
}
