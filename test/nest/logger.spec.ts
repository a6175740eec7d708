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
const capturing: LoggerService = {
  log: at('log'),
  warn: at('warn'),
  error: at('error'),
  debug: at('debug'),
  verbose: at('verbose'),
};

beforeAll(async () => {
  redis = await startRedisMasters(1);
  Logger.overrideLogger(capturing);
});
afterAll(async () => {
  Logger.overrideLogger(true); // back to Nest's default logger
  await redis?.stop();
});
afterEach(() => void (lines.length = 0));

async function start(extra: Record<string, unknown>): Promise<() => Promise<void>> {
  const ref = await Test.createTestingModule({
    imports: [
      RedlockModule.forRoot({
        nodes: [redis.urls[0], 'redis://:hunter2secret@127.0.0.1:1', 'redis://127.0.0.1:2'],
        connectTimeout: 300,
        ...extra,
      }),
    ],
  }).compile();
  const app = ref.createNestApplication({ logger: capturing });
  await app.init();
  expect(app.get(RedlockService)).toBeInstanceOf(RedlockService);
  return () => app.close();
}

describe('RedlockService logging', () => {
  it("defaults to Nest's Logger with context Redlock: start-up warnings name unreachable masters with the network error, never the password", async () => {
    const close = await start({});
    try {
      const mine = lines.filter((l) => l.context === 'Redlock');
      expect(
        mine.some(
          (l) =>
            l.level === 'warn' &&
            /Master 127\.0\.0\.1:1 is unreachable \(connect ECONNREFUSED 127\.0\.0\.1:1\)/.test(l.message),
        ),
      ).toBe(true);
      expect(
        mine.some((l) => l.level === 'log' && /Master 127\.0\.0\.1:\d+ is distrusted for \d+ ms/.test(l.message)),
      ).toBe(true);
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

describe('RedlockService logging of lost locks', () => {
  it('warns with context Redlock, the resource and why, never the lock value', async () => {
    const ref = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: [redis.urls[0]], restartGuard: false })],
    }).compile();
    const app = ref.createNestApplication({ logger: capturing });
    await app.init();
    try {
      const redlock = app.get(RedlockService);
      const lock = await redlock.acquire('invoice:77', 2_000);
      const { Redis } = await import('ioredis');
      const admin = new Redis(redis.urls[0]);
      await admin.del('lock:invoice:77');
      admin.disconnect();
      await lock.extend().catch(() => undefined);
      const warned = lines.filter(
        (l) => l.context === 'Redlock' && l.level === 'warn' && l.message.includes('invoice:77'),
      );
      expect(warned).toHaveLength(1);
      expect(warned[0].message).toMatch(/lost|no longer/i);
      expect(warned[0].message).toContain('majority-lost');
      expect(JSON.stringify(lines)).not.toContain(lock.value);
      lines.length = 0;
      const released = await redlock.acquire('invoice:78', 2_000);
      await released.release();
      await released.extend().catch(() => undefined); // extending a released lock: not a loss worth a warning
      expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
