/**
 * Revoke through Nest: `RedlockService.revoke()` takes a lock from a running `@Locked` method, whose
 * call then rejects with `LockLostError` (reason `'revoked'`) once the method settles; the module's
 * `owner` and a per-method `owner` show in `inspect()`.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { currentLock, Locked, LockLostError, RedlockService } from '../../lib/index.js';
import { rejectionOf, waitFor } from '../support/index.js';
import { LARGEST_TTL } from '../support/inspector.js';
import { fastOptions, startApp, useNestMasters } from '../support/nest.js';

@Injectable()
class JobsService {
  /** What the running method saw. */
  seen: { aborted: boolean; reason?: unknown } | undefined;
  started = false;

  @Locked('job:#id', { ttl: LARGEST_TTL, owner: 'nightly-job' })
  async nightly(id: string): Promise<string> {
    void id;
    this.started = true;
    const signal = currentLock()!.signal;
    await waitFor(() => signal.aborted, 10_000);
    this.seen = { aborted: signal.aborted, reason: signal.reason };
    return 'finished normally';
  }

  @Locked('report:#id', LARGEST_TTL)
  async report(id: string, during: () => Promise<void>): Promise<void> {
    void id;
    await during();
  }
}

describe('RedlockService.revoke() and @Locked (3 masters)', () => {
  const masters = useNestMasters(3);

  it('a @Locked call whose lock is revoked rejects with LockLostError (revoked) after the method settles', async () => {
    const app = await startApp(fastOptions(masters.urls), { providers: [JobsService] });
    try {
      const jobs = app.get(JobsService);
      const redlock = app.get(RedlockService);
      const call = jobs.nightly('7');
      expect(await waitFor(() => jobs.started)).toBe(true);

      const result = await redlock.revoke('job:7', { reason: 'runaway' });

      expect(result.revoked).toBe(true);
      expect(result.owner).toBe('nightly-job');
      const error = await rejectionOf(call);
      expect(jobs.seen?.aborted).toBe(true); // the method saw it first, and ran to its end
      expect(error).toBeInstanceOf(LockLostError);
      expect((error as LockLostError).reason).toBe('revoked');
      expect((error as LockLostError).message).toContain('runaway');
      expect(jobs.seen?.reason).toBe(error);
    } finally {
      await app.close();
    }
  });

  it("the module's owner is stored with a @Locked call's lock", async () => {
    const app = await startApp(fastOptions(masters.urls, { owner: 'billing-api' }), { providers: [JobsService] });
    try {
      const jobs = app.get(JobsService);
      const redlock = app.get(RedlockService);
      let owner: string | null | undefined;
      await jobs.report('1', async () => {
        owner = (await redlock.inspect('report:1')).owner;
      });
      expect(owner).toBe('billing-api');
    } finally {
      await app.close();
    }
  });
});
