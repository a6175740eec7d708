/**
 * nestjs-quorum-lock/testing: @Locked methods under the Redis-free stand-in (currentLock, signal,
 * busy, unavailable, lost, reentrancy), and `imports: [AppModule]` without running the options factory.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  currentLock,
  Lock,
  LockAcquisitionError,
  Locked,
  LockLostError,
  RedlockModule,
  RedlockService,
} from '../../lib/index.js';
import { overrideRedlock, RedlockTestingModule, RedlockTestingService } from '../../lib/testing/index.js';

@Injectable()
class ImportService {
  seen: { lock: Lock | undefined; aborted: boolean }[] = [];
  pause: Promise<void> = Promise.resolve();

  @Locked('import:#tenant', 10_000)
  async import(tenant: string): Promise<string> {
    const lock = currentLock();
    this.seen.push({ lock, aborted: lock?.signal.aborted ?? true });
    await this.pause;
    lock!.signal.throwIfAborted();
    return `imported ${tenant}`;
  }

  @Locked('import:#tenant', { onBusy: 'skip' })
  async skipIfBusy(tenant: string): Promise<string> {
    return `ran ${tenant}`;
  }

  @Locked('import:#tenant')
  async outer(tenant: string): Promise<string> {
    return this.import(tenant); // reentrant: the same resource in the same call chain
  }
}

async function withStub(stub = new RedlockTestingService()) {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockTestingModule.forRoot(stub)],
    providers: [ImportService],
  }).compile();
  await moduleRef.init();
  return { moduleRef, stub, service: moduleRef.get(ImportService) };
}

describe('RedlockTestingService under @Locked', () => {
  it('runs the method inside a stub lock: currentLock() is the lock, its signal is live, and it is released after', async () => {
    const { moduleRef, stub, service } = await withStub();
    expect(moduleRef.get(RedlockService)).toBe(stub);
    await expect(service.import('acme')).resolves.toBe('imported acme');
    expect(service.seen[0].lock).toBeInstanceOf(Lock);
    expect(service.seen[0].lock!.resources).toEqual(['import:acme']);
    expect(service.seen[0].lock!.ttl).toBe(10_000);
    expect(service.seen[0].aborted).toBe(false);
    expect(service.seen[0].lock!.isHeld).toBe(false);
    expect(stub.acquisitions).toEqual([{ resources: ['import:acme'], ttl: 10_000 }]);
    expect(stub.heldResources).toEqual([]);
    await moduleRef.close();
  });

  it("simulateLoss aborts the running method's signal with LockLostError, and the call rejects with it", async () => {
    const { moduleRef, stub, service } = await withStub();
    let resume!: () => void;
    service.pause = new Promise((r) => (resume = r));
    const call = service.import('acme');
    await new Promise((r) => setImmediate(r));
    expect(stub.heldResources).toEqual(['import:acme']);
    const signal = currentLockOf(service).signal;
    expect(stub.simulateLoss('import:acme')).toBe(1);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    resume();
    await expect(call).rejects.toBe(signal.reason);
    await moduleRef.close();
  });

  it('simulateBusy makes the call reject with a busy LockAcquisitionError, and tryAcquire resolve to null', async () => {
    const { moduleRef, stub, service } = await withStub();
    stub.simulateBusy('import:acme');
    const error = await service.import('acme').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).busy).toBe(true);
    await expect(stub.tryAcquire('import:acme')).resolves.toBeNull();
    await expect(service.import('other')).resolves.toBe('imported other');
    stub.clearSimulations();
    await expect(service.import('acme')).resolves.toBe('imported acme');
    await moduleRef.close();
  });

  it('simulateUnavailable makes acquisitions fail with busy false (masters down, not another holder)', async () => {
    const { moduleRef, stub, service } = await withStub();
    stub.simulateUnavailable();
    const error = (await service.import('acme').catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.busy).toBe(false);
    expect(error.outcomes.every((o) => o.status === 'error')).toBe(true);
    await moduleRef.close();
  });

  it("onBusy: 'skip' resolves to undefined while busy, as the real service does (@Locked, using, acquire)", async () => {
    const { moduleRef, stub, service } = await withStub();
    stub.simulateBusy('import:acme');
    await expect(service.skipIfBusy('acme')).resolves.toBeUndefined();
    await expect(stub.using('import:acme', 1_000, async () => 1, { onBusy: 'skip' })).resolves.toBeUndefined();
    await expect(stub.acquire('import:acme', 1_000, { onBusy: 'skip' })).resolves.toBeUndefined();
    // 'wait' (the default) still rejects with the busy error, and an outage is never a skip.
    await expect(stub.using('import:acme', 1_000, async () => 1)).rejects.toBeInstanceOf(LockAcquisitionError);
    stub.clearSimulations();
    stub.simulateUnavailable();
    await expect(service.skipIfBusy('acme')).rejects.toMatchObject({ busy: false });
    stub.clearSimulations();
    await expect(service.skipIfBusy('acme')).resolves.toBe('ran acme');
    await moduleRef.close();
  });

  it('honours mode and limit like the real service: readers share, a writer waits for them, limit holders share up to limit', async () => {
    const stub = new RedlockTestingService();
    const r1 = await stub.acquire('catalog:7', 1_000, { mode: 'read' });
    const r2 = await stub.tryAcquire('catalog:7', 1_000, { mode: 'read' });
    expect(r2).toBeInstanceOf(Lock);
    await expect(stub.tryAcquire('catalog:7', 1_000)).resolves.toBeNull(); // a writer beside readers: busy
    await r1.release();
    await r2!.release();
    const w = await stub.acquire('catalog:7', 1_000, { mode: 'write' });
    await expect(stub.tryAcquire('catalog:7', 1_000, { mode: 'read' })).resolves.toBeNull(); // a reader beside a writer
    await w.release();

    const p1 = await stub.tryAcquire('export:acme', 1_000, { limit: 2 });
    const p2 = await stub.tryAcquire('export:acme', 1_000, { limit: 2 });
    expect(p1).toBeInstanceOf(Lock);
    expect(p2).toBeInstanceOf(Lock);
    await expect(stub.tryAcquire('export:acme', 1_000, { limit: 2 })).resolves.toBeNull();
    await expect(stub.tryAcquire('export:acme', 1_000, { limit: 3 })).rejects.toMatchObject({ option: 'limit' });
    await expect(
      stub.using('export:acme', 1_000, async () => 1, { limit: 2, onBusy: 'skip' }),
    ).resolves.toBeUndefined();
    await p1!.release();
    await expect(stub.using('export:acme', 1_000, async () => 1, { limit: 2 })).resolves.toBe(1);
    await expect(stub.acquire('x', 1_000, { mode: 'exclusive' as 'read' })).rejects.toMatchObject({ option: 'mode' });
  });

  it('is reentrant like the real service: a nested @Locked on a held resource does not acquire again', async () => {
    const { moduleRef, stub, service } = await withStub();
    await expect(service.outer('acme')).resolves.toBe('imported acme');
    expect(stub.acquisitions).toHaveLength(1);
    await moduleRef.close();
  });
});

function currentLockOf(service: ImportService): Lock {
  return service.seen.at(-1)!.lock!;
}

describe('overrideRedlock with imports: [AppModule]', () => {
  let factoryRuns = 0;
  @Module({
    imports: [
      RedlockModule.forRootAsync({
        useFactory: () => {
          factoryRuns++;
          const nodes = process.env.REDLOCK_NODES_THAT_ARE_NOT_SET;
          if (!nodes) throw new Error('REDLOCK_NODES_THAT_ARE_NOT_SET is not set');
          return { nodes: nodes.split(',') };
        },
      }),
    ],
    providers: [ImportService],
  })
  class AppModule {}

  it('never runs the options factory, and @Locked in AppModule uses the stand-in', async () => {
    const stub = new RedlockTestingService();
    const moduleRef = await overrideRedlock(Test.createTestingModule({ imports: [AppModule] }), stub).compile();
    await moduleRef.init();
    expect(factoryRuns).toBe(0);
    expect(moduleRef.get(RedlockService)).toBe(stub);
    await expect(moduleRef.get(ImportService).import('acme')).resolves.toBe('imported acme');
    expect(stub.acquisitions).toHaveLength(1);
    await moduleRef.close();
  });

  it('(control) without it, the factory runs and fails without its environment variable', async () => {
    await expect(Test.createTestingModule({ imports: [AppModule] }).compile()).rejects.toThrow(
      'REDLOCK_NODES_THAT_ARE_NOT_SET',
    );
    expect(factoryRuns).toBe(1);
  });
});
