/**
 * nestjs-quorum-lock/testing: @Locked options under the Redis-free stand-in behave as users expect
 * from the real service: turns of sibling calls, onBusy 'skip', minHold, maxHold, mode and limit.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  currentLock,
  LockAcquisitionError,
  Locked,
  LockLostError,
  lockModeOf,
  RedlockConfigError,
} from '../../lib/index.js';
import { RedlockTestingModule, RedlockTestingService } from '../../lib/testing/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

@Injectable()
class Jobs {
  running = 0;
  most = 0;
  runs = 0;
  seen: string[] = [];

  async #work(ms: number): Promise<void> {
    this.running++;
    this.most = Math.max(this.most, this.running);
    this.runs++;
    try {
      await sleep(ms);
    } finally {
      this.running--;
    }
  }

  @Locked('order:#id')
  async step(id: string): Promise<void> {
    this.seen.push(id);
    await this.#work(30);
  }

  @Locked('order:#id')
  async both(id: string): Promise<void> {
    await Promise.all([this.step(id), this.step(id)]); // siblings of one holder: one at a time
  }

  @Locked('order:#id', { onBusy: 'skip' })
  async stepOrSkip(id: string): Promise<string> {
    this.seen.push(id);
    await this.#work(50);
    return 'ran';
  }

  @Locked('order:#id')
  async siblingsSkipping(id: string): Promise<(string | undefined)[]> {
    return Promise.all([this.stepOrSkip(id), this.stepOrSkip(id)]);
  }

  @Locked('report', { ttl: 2_000, onBusy: 'skip', minHold: 400 })
  async report(): Promise<string> {
    this.runs++;
    return 'built';
  }

  @Locked('long', { maxHold: 100 })
  async long(): Promise<boolean> {
    const { signal } = currentLock()!;
    await sleep(400);
    return signal.aborted;
  }

  @Locked('catalog', { mode: 'read' })
  async read(): Promise<string> {
    await this.#work(60);
    return lockModeOf(currentLock()!).mode;
  }

  @Locked('catalog', { onBusy: 'skip' })
  async write(): Promise<string> {
    await this.#work(10);
    return 'written';
  }

  @Locked('export:#tenant', { limit: 2, onBusy: 'skip' })
  async export(tenant: string): Promise<number | undefined> {
    this.seen.push(tenant);
    await this.#work(60);
    return lockModeOf(currentLock()!).limit;
  }

  @Locked('export:#tenant', { limit: 3 })
  async exportWithAnotherLimit(tenant: string): Promise<void> {
    this.seen.push(tenant);
  }
}

async function setUp() {
  const stub = new RedlockTestingService();
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockTestingModule.forRoot(stub)],
    providers: [Jobs],
  }).compile();
  await moduleRef.init();
  return { moduleRef, stub, jobs: moduleRef.get(Jobs) };
}

describe('RedlockTestingService: @Locked options behave as with Redis', () => {
  it('sibling calls of one holder take turns on the inherited lock (one at a time), and acquire nothing', async () => {
    const { moduleRef, stub, jobs } = await setUp();
    await jobs.both('7');
    expect(jobs.runs).toBe(2);
    expect(jobs.most).toBe(1);
    expect(stub.acquisitions).toHaveLength(1);
    await moduleRef.close();
  });

  it("onBusy 'skip': undefined when simulated busy, and for a sibling while the other has the turn", async () => {
    const { moduleRef, stub, jobs } = await setUp();
    stub.simulateBusy('order:1');
    await expect(jobs.stepOrSkip('1')).resolves.toBeUndefined();
    expect(jobs.runs).toBe(0);
    stub.clearSimulations();
    await expect(jobs.siblingsSkipping('2')).resolves.toEqual(['ran', undefined]);
    expect(jobs.runs).toBe(1);
    await moduleRef.close();
  });

  it('minHold keeps the resource busy after the work until minHold after the acquisition (a second run is skipped)', async () => {
    const { moduleRef, stub, jobs } = await setUp();
    await expect(jobs.report()).resolves.toBe('built');
    expect(stub.heldResources).toEqual(['report']);
    await expect(jobs.report()).resolves.toBeUndefined(); // skipped: still held by the first run's minHold
    await expect(stub.tryAcquire('report')).resolves.toBeNull();
    await sleep(600);
    expect(stub.heldResources).toEqual([]);
    await expect(jobs.report()).resolves.toBe('built');
    expect(jobs.runs).toBe(2);
    stub.clearSimulations(); // also ends what minHold keeps
    expect(stub.heldResources).toEqual([]);
    await moduleRef.close();
  });

  it('maxHold loses the lock at that moment: the signal aborts with LockLostError and the call rejects with it', async () => {
    const { moduleRef, stub, jobs } = await setUp();
    const call = jobs.long();
    await expect(call).rejects.toBeInstanceOf(LockLostError);
    await expect(call).rejects.toMatchObject({ reason: 'max-hold' });
    expect(stub.heldResources).toEqual([]);
    await moduleRef.close();
  });

  it("mode 'read': readers share, a writer is busy beside them and runs once they are done", async () => {
    const { moduleRef, stub, jobs } = await setUp();
    const readers = Promise.all([jobs.read(), jobs.read()]);
    await sleep(10);
    expect(jobs.running).toBe(2);
    await expect(jobs.write()).resolves.toBeUndefined(); // onBusy 'skip' beside readers
    await expect(stub.acquire('catalog', 1_000)).rejects.toBeInstanceOf(LockAcquisitionError);
    await expect(readers).resolves.toEqual(['read', 'read']);
    expect(jobs.most).toBe(2);
    await expect(jobs.write()).resolves.toBe('written');
    await moduleRef.close();
  });

  it('limit: up to limit holders at once, each its own lock; one more is busy; another limit is refused naming both', async () => {
    const { moduleRef, stub, jobs } = await setUp();
    const results = await Promise.all([jobs.export('acme'), jobs.export('acme'), jobs.export('acme')]);
    expect(results.filter((r) => r === 2)).toHaveLength(2);
    expect(results.filter((r) => r === undefined)).toHaveLength(1);
    expect(jobs.most).toBe(2);
    const held = await stub.acquire('export:acme', 5_000, { limit: 2 });
    const other = jobs.exportWithAnotherLimit('acme');
    await expect(other).rejects.toBeInstanceOf(RedlockConfigError);
    await expect(other).rejects.toMatchObject({ option: 'limit', message: expect.stringMatching(/3.*2/) });
    await held.release();
    await expect(stub.acquire('export:acme', 1_000, { mode: 'read', limit: 2 })).rejects.toMatchObject({
      option: 'mode',
    });
    await moduleRef.close();
  });
});
