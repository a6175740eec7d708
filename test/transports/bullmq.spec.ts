/**
 * BullMQ workers (`WorkerHost.process(job)`, `#job.data.id`) in two app instances, on a queue in
 * a redis-server of its own and locks on three masters: 40 jobs over 5 ids each run once, never
 * two of one id at once, none failed. A busy key under `retryCount: 0` fails that attempt, and
 * BullMQ's own `attempts` and `backoff` run the job again once the key is free.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Inject, type INestApplication } from '@nestjs/common';
import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { Locked, RedlockService } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { useMasters, waitFor } from '../support/index.js';
import { startApp } from '../support/nest.js';
import {
  CRITICAL_SECTION,
  CriticalSection,
  INSTANCE,
  ONE_TRY,
  instanceProviders,
  transportOptions,
} from './fixtures/critical-section.js';

@Processor('items', { concurrency: 5 })
class ItemsProcessor extends WorkerHost {
  constructor(
    @Inject(CRITICAL_SECTION) private readonly section: CriticalSection,
    @Inject(INSTANCE) private readonly instance: string,
  ) {
    super();
  }

  @Locked('job-item:#job.data.id')
  process(job: Job<{ id: string }>): Promise<string> {
    return this.section.run(job.data.id, this.instance, 10);
  }
}

@Processor('items-once')
class ItemsOnceProcessor extends WorkerHost {
  @Locked('job-item:#job.data.id', ONE_TRY)
  async process(job: Job<{ id: string }>): Promise<string> {
    return job.data.id;
  }
}

/** Injects the queues so the test can add jobs through Nest, as an application would. */
class Queues {
  constructor(
    @InjectQueue('items') readonly items: Queue,
    @InjectQueue('items-once') readonly once: Queue,
  ) {}
}

const masters = useMasters(3);
const section = new CriticalSection();
const apps: INestApplication[] = [];
let queueServer: RedisMasters;

async function startInstance(name: string): Promise<INestApplication> {
  const { port } = new URL(queueServer.urls[0]);
  const app = await startApp(transportOptions(masters.urls), {
    imports: [
      BullModule.forRoot({ connection: { host: '127.0.0.1', port: Number(port) } }),
      BullModule.registerQueue({ name: 'items' }, { name: 'items-once' }),
    ],
    providers: [ItemsProcessor, ItemsOnceProcessor, Queues, ...instanceProviders(section, name)],
  });
  apps.push(app);
  return app;
}

let a: INestApplication;
let queues: Queues;

beforeAll(async () => {
  queueServer = await startRedisMasters(1);
  a = await startInstance('A');
  await startInstance('B');
  queues = a.get(Queues);
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await queueServer?.stop();
});

describe('BullMQ workers, two instances', () => {
  it('runs 40 jobs over 5 ids once each, one job of an id at a time across both workers, none failed', async () => {
    await queues.items.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'item', data: { id: `id-${i % 5}` } })));
    const settled = await waitFor(async () => {
      const counts = await queues.items.getJobCounts('completed', 'failed');
      return counts.completed + counts.failed === 40;
    }, 60_000);
    expect(settled).toBe(true);
    expect(await queues.items.getJobCounts('completed', 'failed')).toEqual({ completed: 40, failed: 0 });
    const byWorker = new Set((await queues.items.getCompleted(0, 39)).map((job) => job.returnvalue as string));
    expect(byWorker).toEqual(new Set(['A', 'B']));
    expect(section.entered).toBe(40);
    expect(section.maxInside).toBe(1);
  });

  it("a busy key under retryCount: 0 fails the attempt; BullMQ's attempts and backoff run it again", async () => {
    const held = await a.get(RedlockService).acquire('job-item:7', 10_000);
    let job: Job;
    try {
      job = await queues.once.add('item', { id: '7' }, { attempts: 5, backoff: { type: 'fixed', delay: 100 } });
      const failedOnce = await waitFor(
        async () => ((await queues.once.getJob(job.id!))?.attemptsMade ?? 0) >= 1,
        20_000,
      );
      expect(failedOnce).toBe(true);
      const attempt = (await queues.once.getJob(job.id!))!;
      expect(attempt.failedReason).toMatch(/^Could not lock "job-item:7"/);
      expect(await attempt.getState()).not.toBe('completed');
    } finally {
      await held.release();
    }
    const done = await waitFor(async () => (await queues.once.getJob(job.id!))!.isCompleted(), 20_000);
    expect(done).toBe(true);
    const finished = (await queues.once.getJob(job.id!))!;
    expect(finished.returnvalue).toBe('7');
    expect(finished.attemptsMade).toBeGreaterThanOrEqual(2);
  });
});
