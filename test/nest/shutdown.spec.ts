/**
 * app.close(): locks still held are released on every master and their signals abort; a
 * user-supplied ioredis instance stays open; the connections the module opened are closed.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  LockAcquisitionError,
  Locked,
  LockLostError,
  RedlockError,
  RedlockModule,
  RedlockService,
} from '../../lib/index.js';
import { LifecycleJobs, LifecycleModule } from './fixtures/startup.js';
import { waitFor } from '../support/index.js';
import { fastOptions, initApp, startApp, useNestMasters } from '../support/nest.js';

const masters = useNestMasters(3);

describe('shutdown', () => {
  it('releases held locks, aborts their signals, keeps the user client open and closes its own connections', async () => {
    const userClient = new Redis(masters.urls[0]);
    let app: INestApplication | undefined;
    try {
      await userClient.ping();
      const clientsBefore = await Promise.all([0, 1, 2].map((i) => masters.inspector.connectedClients(i)));

      app = await startApp(fastOptions([userClient, masters.urls[1], masters.urls[2]], { ttl: 900 }));
      const service = app.get(RedlockService);
      const plain = await service.acquire('shutdown:plain', 900);
      const renewed = await service.acquire('shutdown:renewed', 900, { autoExtend: true });
      const signals = [plain.signal, renewed.signal];
      expect(await masters.inspector.held('lock:shutdown:plain')).toBe(3);
      expect(await masters.inspector.held('lock:shutdown:renewed')).toBe(3);
      // Someone waits for a held lock (and gives up): whatever connections waiting opens must be closed too.
      await expect(
        service.acquire('shutdown:plain', 900, { retryCount: 2, retryDelay: 30, retryJitter: 0 }),
      ).rejects.toBeInstanceOf(LockAcquisitionError);
      // The module opened connections of its own to the URL masters.
      const clientsRunning = await Promise.all([0, 1, 2].map((i) => masters.inspector.connectedClients(i)));
      expect(clientsRunning[1]).toBeGreaterThan(clientsBefore[1]);
      expect(clientsRunning[2]).toBeGreaterThan(clientsBefore[2]);

      await app.close();
      const closedApp = app;
      app = undefined;

      // Released on all masters, not left to expire.
      expect(await masters.inspector.holders('lock:shutdown:plain')).toBe(0);
      expect(await masters.inspector.holders('lock:shutdown:renewed')).toBe(0);
      for (const signal of signals) {
        expect(signal.aborted).toBe(true);
        expect(signal.reason).toBeInstanceOf(LockLostError);
      }
      expect(plain.isHeld).toBe(false);
      // The user's instance is still open and usable.
      expect(userClient.status).toBe('ready');
      await expect(userClient.ping()).resolves.toBe('PONG');
      await expect(userClient.set('still', 'usable')).resolves.toBe('OK');
      // Every connection the module opened is gone; the user's is not.
      expect(
        await waitFor(async () => {
          const now = await Promise.all([0, 1, 2].map((i) => masters.inspector.connectedClients(i)));
          return now.every((n, i) => n === clientsBefore[i]);
        }, 2_000),
      ).toBe(true);
      // No new lock after close.
      await expect(closedApp.get(RedlockService).acquire('after-close', 900)).rejects.toBeInstanceOf(RedlockError);
    } finally {
      await app?.close();
      await userClient.quit();
    }
  });

  it('releases the lock of a @Locked-style using() still running at close, and the call rejects with LockLostError', async () => {
    const app = await startApp(fastOptions(masters.urls, { ttl: 900 }));
    let closing: Promise<void> | undefined;
    try {
      const service = app.get(RedlockService);
      let signal: AbortSignal | undefined;
      const running = service.using('shutdown:using', 900, async (lock) => {
        signal = lock.signal;
        closing = app.close();
        await new Promise((resolve) => setTimeout(resolve, 100));
        return 'done';
      });
      await expect(running).rejects.toBeInstanceOf(LockLostError);
      await closing;
      expect(signal!.aborted).toBe(true);
      expect(await masters.inspector.holders('lock:shutdown:using')).toBe(0);
    } finally {
      await (closing ?? app.close());
    }
  });

  it('app.close() withdraws a @Locked call queued for a busy key: once the holder releases, nothing is left on any master', async () => {
    @Injectable()
    class Jobs {
      // A long retry delay: the queued call makes no attempt of its own while the test runs.
      @Locked('queued:#0', { ttl: 5_000, retryCount: 1_000, retryDelay: 5_000, retryJitter: 0 })
      async run(_id: string): Promise<string> {
        return 'ran';
      }
    }
    const holderApp = await startApp(fastOptions(masters.urls));
    const waiterApp = await startApp(fastOptions(masters.urls), { providers: [Jobs] });
    try {
      const held = await holderApp.get(RedlockService).acquire('queued:1', 30_000);
      const running = waiterApp.get(Jobs).run('1');
      running.catch(() => undefined);
      const queue = 'lock:queued:1:handoff:queue';
      const queued = async (): Promise<boolean> =>
        (await Promise.all(masters.inspector.clients.map((c) => c.zcard(queue)))).every((n) => n === 1);
      expect(await waitFor(queued, 5_000)).toBe(true);
      await waiterApp.close();
      await expect(running).rejects.toBeInstanceOf(RedlockError);
      await held.release();
      // Nothing was handed to the closed app's call (the key would stay for its 5 s TTL).
      expect(await masters.inspector.released(500)).toBe(true);
    } finally {
      await Promise.all([holderApp.close(), waiterApp.close()]);
    }
  });
});

describe('lifecycle hooks of other providers', () => {
  it.each([
    ['RedlockModule imported first', true],
    ['feature module imported first', false],
  ])('%s: @Locked works in onModuleInit and in onApplicationShutdown', async (_label, redlockFirst) => {
    const redlock = RedlockModule.forRoot(fastOptions(masters.urls));
    const app = await initApp({ imports: redlockFirst ? [redlock, LifecycleModule] : [LifecycleModule, redlock] });
    const jobs = app.get(LifecycleJobs);
    const during: number[] = [];
    jobs.hook = async (step) => during.push(await masters.inspector.held(`lock:job:${step}`));
    try {
      expect(jobs.atInit).toEqual({ ok: true, value: { name: 'init', hook: undefined } });
    } finally {
      await app.close();
    }
    // Redlock closes after the other providers' shutdown hooks, so they can still lock.
    expect(jobs.atShutdown).toEqual({ ok: true, value: { name: 'shutdown', hook: 1 } });
    expect(during).toEqual([3]);
    expect(await masters.inspector.released()).toBe(true);
  });
});
