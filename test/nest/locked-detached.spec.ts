/**
 * `@Locked` work left running by a decorated method, in two Nest application instances on 3 real
 * masters: a fire-and-forget `@Locked` call that inherits its caller's lock keeps that lock held
 * until it settles, even while it waits for a turn on another held lock, so the other instance
 * never gets the lock while its body runs.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { currentLock, Locked, RedlockService } from '../../lib/index.js';
import { now, sleep, waitFor } from '../support/index.js';
import { fastOptions, startApp, useNestMasters } from '../support/nest.js';

@Injectable()
class Ledger {
  /** Called by `post` once it has started `both` and is about to return. */
  onPosted: () => void = () => undefined;
  /** `audit` keeps the account's turn until this holds (or 1 s). */
  auditUntil: () => boolean = () => true;
  detached: Promise<void> | undefined;
  readonly both: { start?: number; end?: number; journalHeld?: boolean } = {};

  @Locked('account:#id', 2_000)
  async settle(id: string): Promise<void> {
    await Promise.all([this.audit(id), this.post(id)]);
  }

  @Locked('account:#0', 2_000)
  async audit(_id: string): Promise<void> {
    await waitFor(() => this.auditUntil(), 1_000);
  }

  @Locked('journal:#id', 2_000)
  async post(id: string): Promise<void> {
    this.detached = this.reconcile(id); // not awaited
    this.onPosted();
  }

  @Locked(['account:#id', 'journal:#id'], 2_000)
  async reconcile(id: string): Promise<void> {
    this.both.start = now();
    this.both.journalHeld = currentLock(`journal:${id}`)?.isHeld ?? false;
    await sleep(50);
    this.both.end = now();
  }
}

const masters = useNestMasters(3);

describe('@Locked work left running by its caller (two application instances)', () => {
  it('a fire-and-forget call that waits for a turn keeps the lock it inherited: the other instance gets it only after the call settled', async () => {
    const apps: INestApplication[] = [];
    try {
      apps.push(await startApp(fastOptions(masters.urls), { providers: [Ledger] }));
      apps.push(await startApp(fastOptions(masters.urls), { providers: [Ledger] }));
      const ledger = apps[0].get(Ledger);
      const other = apps[1].get(RedlockService);
      const contender: { acquired?: number } = {};
      let contending: Promise<void> | undefined;
      ledger.auditUntil = () => contender.acquired !== undefined;
      ledger.onPosted = () => {
        contending = other
          .acquire('journal:7', 2_000, { retryCount: 500, retryDelay: 10, retryJitter: 5 })
          .then(async (lock) => {
            contender.acquired = now();
            await sleep(300);
            await lock.release();
          });
      };
      await ledger.settle('7');
      await ledger.detached;
      await contending;
      expect(ledger.both.journalHeld).toBe(true);
      expect(contender.acquired!).toBeGreaterThanOrEqual(ledger.both.end!);
    } finally {
      await Promise.all(apps.map((app) => app.close()));
    }
    expect(await masters.inspector.released()).toBe(true);
  });
});
