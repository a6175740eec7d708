import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { Locked } from 'nestjs-quorum-lock';
import { InventoryService } from './inventory.service.js';

/** The name of the report's cron job in each instance's `SchedulerRegistry` (main.ts starts it). */
export const SALES_REPORT_JOB = 'sales-report';

let instances = 0;

/**
 * A job that must run once per fire across all shop instances. Every instance's scheduler fires it
 * every second; the lock lets one instance run each fire, and the others skip it quietly
 * (`onBusy: 'skip'`: no error, no log above debug). `minHold` keeps the lock for 800 ms after the
 * fire even though the report takes a few ms, so an instance whose clock or scheduler is up to
 * 800 ms late finds the lock still held and skips too, instead of running the same fire again.
 * If a majority of the masters is down, the call rejects with `LockAcquisitionError` and the
 * scheduler logs it: an outage is not mistaken for "another instance ran it".
 */
@Injectable()
export class SalesReportJob {
  /** Which shop instance this is (both run in one process in the sample; a host name in production). */
  readonly instance = `shop-${++instances}`;

  constructor(private readonly inventory: InventoryService) {}

  // disabled: main.ts starts the job once the freshly started masters count (restart guard).
  @Cron('* * * * * *', { name: SALES_REPORT_JOB, disabled: true })
  @Locked('report:sales', { ttl: 2_000, onBusy: 'skip', minHold: 800 })
  async report(): Promise<void> {
    const fire = Math.round(Date.now() / 1_000); // the second this fire belongs to
    await this.inventory.recordReport(fire, this.instance);
  }
}
