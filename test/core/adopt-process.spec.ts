/**
 * `toHandle()` / `adopt()` across OS processes on real masters: a forked child with its own
 * `RedlockService` adopts a handle sent to it as JSON text, extends, renews and releases it while
 * this process watches the masters and its own `Lock`; the child is SIGKILLed while it renews; and
 * the other way round, this process adopts a permit the child acquired.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { buildChild } from './child-build.js';
import type { AdoptChildConfig, FromAdoptChild, ToAdoptChild } from './fixtures/adopt-child.js';
import {
  expectAbsentOnAll,
  expectHeldOnAll,
  now,
  pttlsOn,
  rejectionOf,
  resourceName,
  useMasters,
  valuesOn,
  waitFor,
} from '../support/index.js';
import { LockLostError, type LockHandle } from '../../lib/index.js';

const COMMAND_TIMEOUT = 200;
/** Head-room for a loaded machine (2 cores shared by many test runs) on top of each bound. */
const SLACK = 2_000;

/** The child process: one request at a time, each answered over IPC. */
class AdoptProcess {
  private readonly child: ChildProcess;
  private readonly exited: Promise<unknown>;
  private readonly replies: FromAdoptChild[] = [];
  private waiting: ((message: FromAdoptChild) => void) | undefined;

  constructor(entry: string, config: AdoptChildConfig) {
    this.child = fork(entry, [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
    });
    this.exited = once(this.child, 'exit');
    this.child.on('message', (message: FromAdoptChild) => {
      const resolve = this.waiting;
      this.waiting = undefined;
      if (resolve) resolve(message);
      else this.replies.push(message);
    });
  }

  /** The next message from the child. */
  next(): Promise<FromAdoptChild> {
    const queued = this.replies.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  ask(message: ToAdoptChild): Promise<FromAdoptChild> {
    this.child.send(message);
    return this.next();
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.send({ type: 'close' } satisfies ToAdoptChild, () => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3_000);
    await this.exited;
    clearTimeout(timer);
  }
}

describe('adopt across OS processes (3 masters)', () => {
  const set = useMasters(3);
  let child: ReturnType<typeof buildChild>;
  const running: AdoptProcess[] = [];

  beforeAll(() => {
    child = buildChild('test/core/fixtures/adopt-child.ts');
  });

  afterAll(async () => {
    await Promise.all(running.map((p) => p.stop()));
    child?.remove();
  });

  async function start(): Promise<AdoptProcess> {
    const proc = new AdoptProcess(child.entry, { urls: set.urls, commandTimeout: COMMAND_TIMEOUT });
    running.push(proc);
    expect(await proc.next()).toEqual({ type: 'ready' });
    return proc;
  }

  it('a child adopts the handle sent as JSON, extends and releases it; this process sees it on the masters', async () => {
    const redlock = await set.redlock({ commandTimeout: COMMAND_TIMEOUT });
    const worker = await start();
    const resource = resourceName('adopt-proc');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, 2_000);

    const adopted = await worker.ask({ type: 'adopt', handle: JSON.stringify(lock.toHandle()) });
    expect(adopted).toMatchObject({ type: 'adopted', value: lock.value, ttl: 2_000 });
    expect((adopted as { validity: number }).validity).toBeGreaterThan(0);

    expect(await worker.ask({ type: 'extend', ttl: 8_000 })).toMatchObject({ type: 'extended' });
    await waitFor(async () => (await pttlsOn(set.clients, key)).every((p) => p > 6_000), 1_000, 10);
    for (const pttl of await pttlsOn(set.clients, key)) expect(pttl).toBeGreaterThan(6_000);
    await lock.extend(); // this process's lock keeps working beside the child's
    await expectHeldOnAll(set.clients, key, lock.value);

    expect(await worker.ask({ type: 'release' })).toEqual({ type: 'released' });
    await expectAbsentOnAll(set.clients, key);
    const error = await rejectionOf(lock.extend());
    expect(error).toBeInstanceOf(LockLostError);
    await expect(lock.release()).resolves.toBeUndefined();
    const next = await redlock.tryAcquire(resource, 1_000);
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('a child renews the adopted lock past its TTL; killed, the lock lapses and another holder gets it', async () => {
    const TTL = 1_000;
    const redlock = await set.redlock({ commandTimeout: COMMAND_TIMEOUT });
    const worker = await start();
    const resource = resourceName('adopt-proc-renew');
    const key = `lock:${resource}`;
    const lock = await redlock.acquire(resource, TTL); // not renewed here
    expect(
      await worker.ask({ type: 'adopt', handle: JSON.stringify(lock.toHandle()), autoExtend: true }),
    ).toMatchObject({ type: 'adopted' });

    // Three TTLs: only the child's renewal keeps the key on every master meanwhile.
    const until = now() + 3 * TTL;
    let missing: (string | null)[] | undefined;
    await waitFor(
      async () => {
        const values = await valuesOn(set.clients, key);
        if (values.some((v) => v !== lock.value)) missing = values;
        return missing !== undefined || now() >= until;
      },
      3 * TTL + SLACK,
      25,
    );
    expect(missing).toBeUndefined();

    worker.kill();
    expect(
      await waitFor(async () => (await valuesOn(set.clients, key)).every((v) => v === null), TTL + SLACK, 10),
    ).toBe(true);
    const next = await redlock.acquire(resource, 1_000, { retryCount: 0 });
    await next.release();
  });

  it('the other way round: this process adopts a permit the child acquired, and releases it for both', async () => {
    const redlock = await set.redlock({ commandTimeout: COMMAND_TIMEOUT });
    const owner = await start();
    const resource = resourceName('adopt-proc-permit');
    const acquired = await owner.ask({ type: 'acquire', resource, ttl: 3_000, options: { limit: 2 } });
    expect(acquired.type).toBe('acquired');
    const handle = JSON.parse((acquired as { handle: string }).handle) as LockHandle;
    expect(handle).toMatchObject({ version: 1, resources: [resource], mode: 'write', limit: 2 });

    const adopted = await redlock.adopt(handle);
    await adopted.extend();
    await adopted.release();
    const reply = await owner.ask({ type: 'extend' });
    expect(reply).toMatchObject({ type: 'failed', name: 'LockLostError', reason: 'majority-lost' });
    expect(await owner.ask({ type: 'release' })).toEqual({ type: 'released' });
    // Both permits are free again.
    const a = await redlock.tryAcquire(resource, 1_000, { limit: 2 });
    const b = await redlock.tryAcquire(resource, 1_000, { limit: 2 });
    expect([a, b].every((l) => l !== null)).toBe(true);
    await Promise.all([a!.release(), b!.release()]);
  });
});
