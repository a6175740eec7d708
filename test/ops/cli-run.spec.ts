import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { builtCli, mastersOlderThan, resourceName, useMasters, waitFor, type CliProcess } from '../support/index.js';

const exec = promisify(execFile);
const built = builtCli('run');
const { bin } = built;
const TTL = 2_000;

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Spawns `nestjs-quorum-lock run …` from the built bin: its pid, and its end (never rejects). */
const startRun = (...args: string[]): CliProcess => built.start('run', ...args);

/** A `sh -c` script as the child command. */
const sh = (script: string): string[] => ['--', 'sh', '-c', script];

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(() => built.build(), 120_000);
afterAll(() => built.remove());

describe('nestjs-quorum-lock run: a command under a lock (built bin, real masters)', () => {
  const set = useMasters(3);
  let dir: string;
  let nodes: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'quorum-lock-run-'));
    nodes = set.urls.join(',');
    // The CLI keeps the restart guard on: wait until these fresh masters count for TTL-long locks.
    expect(await mastersOlderThan(set, TTL * 1.01 + 2)).toBe(true);
  }, 15_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string): string => join(dir, name);
  const keysOn = async (resource: string): Promise<number> =>
    (await Promise.all(set.clients.map((c) => c.exists(`lock:${resource}`)))).reduce((a, b) => a + b, 0);

  it('runs the child under the lock, renews it past its TTL, refuses a second run with 75, passes the exit code through and releases', async () => {
    const resource = resourceName('job');
    const [started, go] = [file('a-started'), file('a-go')];
    const first = startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      ...sh(`touch ${started}; while [ ! -f ${go} ]; do sleep 0.05; done; exit 3`),
    );
    expect(await waitFor(() => existsSync(started), 15_000)).toBe(true);
    expect(await keysOn(resource)).toBe(3);

    // renewed: the key's PTTL goes back up while the child runs
    const before = await set.clients[0].pttl(`lock:${resource}`);
    expect(await waitFor(async () => (await set.clients[0].pttl(`lock:${resource}`)) > before, TTL * 3)).toBe(true);

    const second = await new Promise<Finished>((resolve) => {
      const r = startRun('--nodes', nodes, '--resource', resource, '--ttl', String(TTL), ...sh(`touch ${file('b')}`));
      void r.done.then(resolve);
    });
    expect(second.code).toBe(75);
    expect(second.stderr).toMatch(/is held/);
    expect(existsSync(file('b'))).toBe(false);

    writeFileSync(go, '');
    const end = await first.done;
    expect(end.code).toBe(3);
    expect(await keysOn(resource)).toBe(0); // released before the CLI exited
  }, 60_000);

  it('--wait: waits for the holder to release, then runs', async () => {
    const resource = resourceName('wait');
    const redlock = await set.redlock();
    const holder = await redlock.acquire(resource, 30_000);
    const ran = file('w-ran');
    const waiter = startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      '--wait',
      ...sh(`touch ${ran}`),
    );
    // it waits in the masters' queue for the key (docs/handoff.md), and runs nothing while the holder holds
    const queued = async (): Promise<boolean> =>
      (await Promise.all(set.clients.map((c) => c.exists(`lock:${resource}:handoff:queue`)))).some((n) => n === 1);
    expect(await waitFor(queued, 15_000)).toBe(true);
    expect(existsSync(ran)).toBe(false);
    expect(alive(waiter.pid)).toBe(true);
    await holder.release();
    const end = await waiter.done;
    expect(end.code).toBe(0);
    expect(existsSync(ran)).toBe(true);
    expect(await keysOn(resource)).toBe(0);
  }, 60_000);

  it('--wait-timeout: a wait that runs out exits 75 without running the command; a missing command exits 127', async () => {
    const resource = resourceName('timeout');
    const redlock = await set.redlock();
    const holder = await redlock.acquire(resource, 30_000);
    try {
      const ran = file('o-ran');
      const end = await startRun(
        '--nodes',
        nodes,
        '--resource',
        resource,
        '--ttl',
        String(TTL),
        '--wait-timeout',
        '1500', // long enough for a loaded machine's first round trips, far below the holder's 30 s
        ...sh(`touch ${ran}`),
      ).done;
      expect(end.code).toBe(75);
      expect(end.stderr).toMatch(/is held/);
      expect(existsSync(ran)).toBe(false);
    } finally {
      await holder.release();
    }
    const missing = await startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      '--',
      'no-such-command-here',
    ).done;
    expect(missing.code).toBe(127);
    expect(missing.stderr).toContain('no-such-command-here');
    expect(await keysOn(resource)).toBe(0);
  }, 60_000);

  it('--wait: SIGINT while waiting withdraws the waiter and exits 130; nothing runs and nothing is left behind', async () => {
    const resource = resourceName('interrupted');
    const redlock = await set.redlock();
    const holder = await redlock.acquire(resource, 30_000);
    const ran = file('i-ran');
    const waiter = startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      '--wait',
      ...sh(`touch ${ran}`),
    );
    const queued = async (): Promise<boolean> =>
      (await Promise.all(set.clients.map((c) => c.exists(`lock:${resource}:handoff:queue`)))).some((n) => n === 1);
    expect(await waitFor(queued, 15_000)).toBe(true);
    waiter.kill('SIGINT');
    const end = await waiter.done;
    expect(end.code).toBe(130);
    expect(await waitFor(async () => !(await queued()), 5_000)).toBe(true); // its ticket is withdrawn
    await holder.release();
    expect(await keysOn(resource)).toBe(0); // not handed to the waiter that left
    expect(existsSync(ran)).toBe(false);
  }, 60_000);

  it('lock lost: SIGTERM to the child, exit 1', async () => {
    const resource = resourceName('lost');
    const [started, termed] = [file('l-started'), file('l-termed')];
    const run = startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      ...sh(`trap 'touch ${termed}; exit 0' TERM; touch ${started}; while :; do sleep 0.05; done`),
    );
    expect(await waitFor(() => existsSync(started), 15_000)).toBe(true);
    // someone removes the lock on every master: the next renewal is refused by all of them
    await Promise.all(set.clients.map((c) => c.del(`lock:${resource}`)));
    const end = await run.done;
    expect(end.code).toBe(1);
    expect(existsSync(termed)).toBe(true);
    expect(end.stderr).toMatch(/lost/);
  }, 60_000);

  it('lock lost: a child that ignores SIGTERM is killed with SIGKILL after --grace', async () => {
    const resource = resourceName('stubborn');
    const [started, pidFile] = [file('s-started'), file('s-pid')];
    const run = startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      '--grace',
      '300',
      ...sh(`trap '' TERM; echo $$ > ${pidFile}; touch ${started}; while :; do sleep 0.05; done`),
    );
    expect(await waitFor(() => existsSync(started), 15_000)).toBe(true);
    const childPid = Number(readFileSync(pidFile, 'utf8').trim());
    await Promise.all(set.clients.map((c) => c.del(`lock:${resource}`)));
    const end = await run.done;
    expect(end.code).toBe(1);
    expect(end.stderr).toMatch(/SIGKILL/);
    expect(alive(childPid)).toBe(false);
  }, 60_000);

  it('a child killed by a signal: the CLI releases and exits 128 + signo (SIGKILL: 137)', async () => {
    const resource = resourceName('killed');
    const [started, pidFile] = [file('k-started'), file('k-pid')];
    const run = startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      ...sh(`echo $$ > ${pidFile}; touch ${started}; while :; do sleep 0.05; done`),
    );
    expect(await waitFor(() => existsSync(started), 15_000)).toBe(true);
    expect(await keysOn(resource)).toBe(3);
    process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGKILL');
    const end = await run.done;
    expect(end.code).toBe(137);
    expect(await keysOn(resource)).toBe(0);
  }, 60_000);

  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s to the CLI goes to the child; the lock is released after the child exits',
    async (sig) => {
      const resource = resourceName(`stop-${sig}`);
      const [started, termed] = [file(`${sig}-started`), file(`${sig}-termed`)];
      const run = startRun(
        '--nodes',
        nodes,
        '--resource',
        resource,
        '--ttl',
        String(TTL),
        ...sh(`trap 'touch ${termed}; exit 7' ${sig.slice(3)}; touch ${started}; while :; do sleep 0.05; done`),
      );
      expect(await waitFor(() => existsSync(started), 15_000)).toBe(true);
      run.kill(sig);
      const end = await run.done;
      expect(end.code).toBe(7);
      expect(existsSync(termed)).toBe(true);
      expect(await keysOn(resource)).toBe(0);
    },
    60_000,
  );

  it('bad arguments exit 2 naming the argument and write nothing; --help documents run', async () => {
    const resource = resourceName('bad');
    const cases: [string[], RegExp][] = [
      [['--nodes', nodes, ...sh('true')], /--resource/],
      [['--nodes', nodes, '--resource', resource], /command after --/],
      [['--nodes', nodes, '--resource', resource, '--'], /command after --/],
      [['--resource', resource, ...sh('true')], /--nodes/],
      [['--nodes', nodes, '--resource', resource, '--ttl', 'soon', ...sh('true')], /--ttl/],
      [['--nodes', nodes, '--resource', resource, '--ttl', '0', ...sh('true')], /--ttl/],
      [['--nodes', nodes, '--resource', resource, '--grace', '-1', ...sh('true')], /--grace/],
      [['--nodes', nodes, '--resource', resource, '--owner', 'x'.repeat(257), ...sh('true')], /--owner/],
      [['--nodes', nodes, '--resource', resource, '--owner', 'a\nb', ...sh('true')], /--owner/],
      [['--nodes', nodes, '--resource', resource, '--wait-timeout', 'x', ...sh('true')], /--wait-timeout/],
      [['--nodes', `redis://:s3cr3t-pw@127.0.0.1:1,${nodes}`, ...sh('true')], /--resource/],
      [['--nodes', 'redis//:s3cr3t-pw@127.0.0.1:1', '--resource', resource, ...sh('true')], /--nodes/],
    ];
    for (const [args, message] of cases) {
      const end = await startRun(...args).done;
      expect({ args, code: end.code }).toEqual({ args, code: 2 });
      expect(end.stderr).toMatch(message);
      expect(end.stderr).not.toContain('s3cr3t-pw');
    }
    expect(await keysOn(resource)).toBe(0);
    for (const c of set.clients) expect(await c.keys('*bad*')).toEqual([]);

    const { stdout } = await exec(process.execPath, [bin, '--help']);
    expect(stdout).toMatch(/nestjs-quorum-lock run --nodes .* --resource R/);
    expect(stdout).toContain('--grace');
  }, 60_000);
});
