/**
 * `RedlockService` logs through Nest's `Logger` with context `Redlock` by default; `logger: false`
 * silences it. Real masters, a real Nest application.
 */
import 'reflect-metadata';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedlockModule, RedlockService } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';

let redis: RedisMasters;
const lines: { level: string; message: string; context?: string }[] = [];
const at =
  (level: string) =>
  (message: unknown, context?: unknown): void =>
    void lines.push({ level, message: String(message), context: typeof context === 'string' ? context : undefined });
const capturing: LoggerService = { log: at('log'), warn: at('warn'), error: at('error'), debug: at('debug'), verbose: at('verbose') };

beforeAll(async () => {
  redis = await startRedisMasters(1);
  Logger.overrideLogger(capturing);
});
afterAll(async () => {
  Logger.overrideLogger(true as never); // back to Nest's default logger
  await redis?.stop();
});
afterEach(() => void (lines.length = 0));

async function start(extra: Record<string, unknown>): Promise<() => Promise<void>> {
  const ref = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: [redis.urls[0], 'redis://:hunter2secret@127.0.0.1:1', 'redis://127.0.0.1:2'], connectTimeout: 300, ...extra })],
  }).compile();
  const app = ref.createNestApplication({ logger: capturing });
  await app.init();
  expect(app.get(RedlockService)).toBeInstanceOf(RedlockService);
  return () => app.close();
}

describe('RedlockService logging', () => {
  it('defaults to Nest\'s Logger with context Redlock: start-up warnings name unreachable masters with the network error, never the password', async () => {
    const close = await start({});
    try {
      const mine = lines.filter((l) => l.context === 'Redlock');
      expect(mine.some((l) => l.level === 'warn' && /Master 127\.0\.0\.1:1 is unreachable \(connect ECONNREFUSED 127\.0\.0\.1:1\)/.test(l.message))).toBe(true);
      expect(mine.some((l) => l.level === 'log' && /Master 127\.0\.0\.1:\d+ is distrusted for \d+ ms/.test(l.message))).toBe(true);
      expect(JSON.stringify(lines)).not.toContain('hunter2secret');
    } finally {
      await close();
    }
  });

  it('`logger: false` silences the library', async () => {
    const close = await start({ logger: false });
    try {
      expect(lines.filter((l) => l.context === 'Redlock')).toEqual([]);
    } finally {
      await close();
    }
  });
});
