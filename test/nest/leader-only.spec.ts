/**
 * @LeaderOnly in two Nest application instances (one process, separate Redlock connections each):
 * the method runs only where the resource is led, campaigning starts at bootstrap, app.close()
 * resigns and the other instance takes over within a few round trips.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable, Scope, type INestApplication } from '@nestjs/common';
import { LeaderOnly, LockKeyError, RedlockConfigError } from '../../lib/index.js';
import { waitFor } from '../support/index.js';
import { fastOptions, startApp, useNestMasters } from '../support/nest.js';

const RESOURCE = 'leader-only:job';

@Injectable()
class LeaderJob {
  calls = 0;

  @LeaderOnly(RESOURCE, { ttl: 900, retryDelay: 2_000 })
  async run(label: string): Promise<string> {
    this.calls++;
    return `ran ${label}`;
  }

  @LeaderOnly(RESOURCE)
  async also(): Promise<string> {
    return 'also';
  }
}

/** Request-scoped: never campaigned at bootstrap, so its first call starts the campaign. */
@Injectable({ scope: Scope.REQUEST })
class ScopedLeaderJob {
  calls = 0;

  @LeaderOnly('leader-only:scoped')
  async run(): Promise<string> {
    this.calls++;
    return 'ran';
  }
}

/** Not provided by any module, so never injected. */
class NotDiscovered {
  @LeaderOnly('leader-only:lazy')
  async run(): Promise<string> {
    return 'ran';
  }
}

const masters = useNestMasters(3);

const startJobApp = (): Promise<INestApplication> => startApp(fastOptions(masters.urls), { providers: [LeaderJob] });

describe('@LeaderOnly', () => {
  it('runs the method in the leading instance only; the other resolves to undefined; app.close() hands over', async () => {
    const apps = [await startJobApp(), await startJobApp()];
    try {
      const jobs = apps.map((app) => app.get(LeaderJob));
      // Campaigns started at bootstrap, before any call: the lock is already held.
      expect(await waitFor(async () => (await masters.inspector.held(`lock:${RESOURCE}`)) >= 2, 2_000)).toBe(true);

      for (let i = 0; i < 10; i++) {
        const results = await Promise.all(jobs.map((job) => job.run(`#${i}`)));
        expect(results.filter((r) => r === `ran #${i}`)).toHaveLength(1);
        expect(results.filter((r) => r === undefined)).toHaveLength(1);
      }
      const leader = jobs.findIndex((job) => job.calls > 0);
      expect(jobs[leader].calls).toBe(10);
      expect(jobs[1 - leader].calls).toBe(0);
      expect(await jobs[leader].also()).toBe('also'); // same resource, same campaign
      expect(await jobs[1 - leader].also()).toBeUndefined();

      const closing = performance.now();
      await apps[leader].close();
      // The standby's retry delay is 2 s; the release on close wakes it at once.
      const took = await (async () => {
        const ok = await waitFor(async () => (await jobs[1 - leader].run('after')) === 'ran after', 1_500, 5);
        return ok ? performance.now() - closing : Infinity;
      })();
      expect(took).toBeLessThan(1_500);
      console.log(`@LeaderOnly takeover after app.close() (3 masters, in-process): ${took.toFixed(1)} ms`);
      expect(await jobs[leader].run('closed')).toBeUndefined();
    } finally {
      await Promise.all(apps.map((app) => app.close()));
    }
    expect(await masters.inspector.released()).toBe(true);
  });

  it('a method whose campaign never started resolves to undefined once the application has closed', async () => {
    const app = await startApp(fastOptions(masters.urls), { providers: [ScopedLeaderJob] });
    let job: ScopedLeaderJob;
    try {
      job = await app.resolve(ScopedLeaderJob); // built, never called: no campaign yet
    } finally {
      await app.close();
    }
    // Its first call after close(): nothing leads any more, so it does not run and does not reject.
    await expect(job.run()).resolves.toBeUndefined();
    expect(job.calls).toBe(0);
    expect(await masters.inspector.released()).toBe(true);
  });

  it('an instance Nest did not build rejects with a RedlockError that says why', async () => {
    await expect(new NotDiscovered().run()).rejects.toThrow(/RedlockService was not injected/);
  });

  it('refuses bad arguments at decoration', () => {
    expect(() => LeaderOnly('')).toThrow(LockKeyError);
    expect(() => LeaderOnly('x', { ttl: -5 })).toThrow(RedlockConfigError);
    expect(() => LeaderOnly('x', { retryDelay: 10, retryJitter: 20 })).toThrow(RedlockConfigError);
    expect(() => LeaderOnly('x', { fencing: 1 as never })).toThrow(RedlockConfigError);
  });
});
