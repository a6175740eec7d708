import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../tools/redis-masters.js';
import { builtCli, mastersOlderThan, resourceName, useMasters, waitFor } from '../support/index.js';

const built = builtCli('owner-revoke');
// Long enough that a holder starved of CPU on a loaded machine (its renewal late by a second or
// more) still holds the lock when the test revokes it.
const TTL = 5_000;

/** Runs `nestjs-quorum-lock run …` from the built bin to its end (never rejects). */
const startRun = (...args: string[]): Promise<{ code: number | null; stderr: string }> =>
  built.start('run', ...args).done;

beforeAll(() => built.build(), 120_000);
afterAll(() => built.remove());

describe('CLI: owner in run and inspect, release --force (built bin, real masters)', () => {
  const set = useMasters(3);
  let dir: string;
  let nodes: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'quorum-lock-owner-'));
    nodes = set.urls.join(',');
    // The CLI keeps the restart guard on: wait until these fresh masters count for TTL-long locks.
    expect(await mastersOlderThan(set, TTL * 1.01 + 2)).toBe(true);
  }, 15_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A child that marks it started, then waits (until killed). */
  const waiting = (started: string): string[] => [
    '--',
    'sh',
    '-c',
    `touch ${started}; while true; do sleep 0.05; done`,
  ];

  it('run --owner stores the owner: inspect shows it, and a busy run exits 75 naming it; release --force exits 0 and the run ends 1 (revoked)', async () => {
    const resource = resourceName('cli-owner');
    const started = join(dir, 'owner-started');
    const holder = startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      '--owner',
      'nightly@cron-1',
      '--grace',
      '200',
      ...waiting(started),
    );
    expect(await waitFor(() => existsSync(started), 15_000)).toBe(true);

    const table = await built.cli('inspect', '--nodes', nodes, resource);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[1]).toMatch(/\bOWNER\b/);
    expect(table.stdout.split('\n').find((l) => l.startsWith(resource))).toMatch(/\bheld\b.*nightly@cron-1/);
    const json = JSON.parse((await built.cli('inspect', '--nodes', nodes, '--json', resource)).stdout) as {
      locks: { owner: string; masters: { owner: string }[] }[];
    };
    expect(json.locks[0].owner).toBe('nightly@cron-1');
    expect(json.locks[0].masters.map((m) => m.owner)).toEqual(['nightly@cron-1', 'nightly@cron-1', 'nightly@cron-1']);

    const busy = await startRun('--nodes', nodes, '--resource', resource, '--ttl', String(TTL), '--', 'true');
    expect(busy.code).toBe(75);
    expect(busy.stderr).toContain('"nightly@cron-1"');

    const released = await built.cli('release', resource, '--force', '--reason', 'stuck job', '--nodes', nodes);
    expect(released.code).toBe(0);
    expect(released.stdout).toContain('"nightly@cron-1"');
    const end = await holder;
    expect(end.code).toBe(1);
    expect(end.stderr).toMatch(/revoked/);
    expect((await Promise.all(set.clients.map((c) => c.exists(`lock:${resource}`)))).every((n) => n === 0)).toBe(true);
  });

  it('release --force exits 1 when nothing is held; without --force it is a usage error (2) and removes nothing', async () => {
    const resource = resourceName('cli-free');
    const free = await built.cli('release', resource, '--force', '--nodes', nodes);
    expect(free.code).toBe(1);
    expect(free.stdout).toMatch(/Nothing held/);

    await set.clients[0].set(`lock:${resource}`, 'someone', 'PX', 60_000);
    await set.clients[1].set(`lock:${resource}`, 'someone', 'PX', 60_000);
    const unforced = await built.cli('release', resource, '--nodes', nodes);
    expect(unforced.code).toBe(2);
    expect(unforced.stderr).toMatch(/--force/);
    expect(await set.clients[0].get(`lock:${resource}`)).toBe('someone');
    const forced = await built.cli('release', resource, '--force', '--nodes', nodes);
    expect(forced.code).toBe(0);
    expect(await set.clients[0].exists(`lock:${resource}`)).toBe(0);
  });

  it('a revoked run: the command gets SIGTERM (it may clean up), and run exits 1 even though the command exited 0', async () => {
    const resource = resourceName('cli-revoke-term');
    const started = join(dir, 'term-started');
    const termed = join(dir, 'term-received');
    const holder = startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      '--grace',
      '30000', // far longer than the test waits: the command ends on SIGTERM, never on SIGKILL
      '--',
      'sh',
      '-c',
      `trap 'touch ${termed}; exit 0' TERM; touch ${started}; while true; do sleep 0.05; done`,
    );
    expect(await waitFor(() => existsSync(started), 15_000)).toBe(true);
    const released = await built.cli('release', resource, '--force', '--reason', 'operator', '--nodes', nodes);
    expect(released.code).toBe(0);
    const end = await holder;
    expect(existsSync(termed)).toBe(true);
    expect(end.code).toBe(1);
    expect(end.stderr).toMatch(/revoked/);
    expect(end.stderr).toMatch(/SIGTERM/);
    expect(end.stderr).not.toMatch(/sending SIGKILL/);
  });

  it('a run holding a long lock hears a revoke from another process at once, not at its next renewal', async () => {
    const LONG = 30_000; // its first renewal comes a third of it after its acquisition
    // The CLI keeps the restart guard on: it takes a LONG lock only on masters older than LONG.
    expect(await waitFor(() => mastersOlderThan(set, LONG * 1.01 + 2), 60_000, 1_000)).toBe(true);
    const resource = resourceName('cli-revoke-fast');
    const started = join(dir, 'fast-started');
    const spawned = performance.now(); // before its acquisition, so before its first renewal by LONG / 3
    const holder = built.start(
      'run',
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(LONG),
      '--owner',
      'long-job',
      ...waiting(started),
    );
    expect(await waitFor(() => existsSync(started), 15_000)).toBe(true);
    const operator = await set.redlock();
    const result = await operator.revoke(resource, { reason: 'from another process' });
    expect(result).toMatchObject({ revoked: true, owner: 'long-job' });
    const end = await holder.done;
    // ended before any renewal could have found the keys gone: it heard the revocation
    expect(performance.now() - spawned).toBeLessThan(LONG / 3);
    expect(end.code).toBe(1);
    expect(end.stderr).toMatch(/revoked/);
    expect(end.stderr).toContain('from another process');
  }, 90_000);

  it("inspect shows each reader's and each permit holder's owner; release --force removes them all", async () => {
    const reading = await set.redlock({ owner: 'reader-a' });
    const reading2 = await set.redlock({ owner: 'reader-b' });
    const counting = await set.redlock({ owner: 'exporter' });
    const [catalog, exports] = [resourceName('cli-owner-read'), resourceName('cli-owner-permits')];
    const readers = [
      await reading.acquire(catalog, 60_000, { mode: 'read' }),
      await reading2.acquire(catalog, 60_000, { mode: 'read' }),
    ];
    const permit = await counting.acquire(exports, 60_000, { limit: 2 });

    const table = await built.cli('inspect', '--nodes', nodes);
    const lines = table.stdout.split('\n');
    const reads = lines.filter((l) => l.startsWith(`${catalog} `));
    expect(reads.map((l) => /\breader-[ab]\b/.exec(l)?.[0]).sort()).toEqual(['reader-a', 'reader-b']);
    expect(lines.find((l) => l.startsWith(`${exports} `))).toMatch(/\bpermit [12]\/2\b.*\bexporter\b/);
    const json = JSON.parse((await built.cli('inspect', '--nodes', nodes, '--json', catalog)).stdout) as {
      locks: { readers: { owner: string }[] }[];
    };
    expect(json.locks[0].readers.map((r) => r.owner).sort()).toEqual(['reader-a', 'reader-b']);

    for (const [resource, locks] of [
      [catalog, readers],
      [exports, [permit]],
    ] as const) {
      const released = await built.cli('release', resource, '--force', '--nodes', nodes);
      expect(released.code).toBe(0);
      for (const lock of locks) expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
    }
  });

  it('run on a resource held by readers exits 75 naming their owner, and runs nothing', async () => {
    const holder = await set.redlock({ owner: 'shared-holder' });
    const resource = resourceName('cli-busy-shared');
    const ran = join(dir, `busy-ran-${resource}`);
    const lock = await holder.acquire(resource, TTL, { mode: 'read' });
    const end = await startRun('--nodes', nodes, '--resource', resource, '--ttl', String(TTL), '--', 'touch', ran);
    expect(end.code).toBe(75);
    expect(end.stderr).toContain('held by the reader "shared-holder"');
    expect(existsSync(ran)).toBe(false);
    await lock.release();
  });

  it('a bad --reason or --owner exits 2 naming it and leaves the holder and the masters as they were', async () => {
    const resource = resourceName('cli-bad-input');
    await Promise.all(set.clients.map((c) => c.set(`lock:${resource}`, 'someone', 'PX', 60_000)));
    // This resource's keys only: tombstones of the revokes in the tests before may expire meanwhile.
    const keys = async (): Promise<string[][]> =>
      Promise.all(set.clients.map(async (c) => (await c.keys(`lock:${resource}*`)).sort()));
    const before = await keys();
    const long = await built.cli('release', resource, '--force', '--reason', 'x'.repeat(1_025), '--nodes', nodes);
    expect(long.code).toBe(2);
    expect(long.stderr).toMatch(/--reason/);
    const owner = await startRun('--nodes', nodes, '--resource', resource, '--owner', 'two\nlines', '--', 'true');
    expect(owner.code).toBe(2);
    expect(owner.stderr).toMatch(/--owner/);
    const longOwner = await startRun(
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--owner',
      'o'.repeat(257),
      '--',
      'true',
    );
    expect(longOwner.code).toBe(2);
    expect(longOwner.stderr).toMatch(/--owner/);
    expect(await keys()).toEqual(before);
    expect(await set.clients[0].get(`lock:${resource}`)).toBe('someone');
  });

  it('a bad --reason is refused before connecting to anything', async () => {
    const nowhere = `redis://127.0.0.1:${await freePort()}`;
    const bad = await built.cli('release', 'r', '--force', '--reason', 'x'.repeat(1_025), '--nodes', nowhere);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--reason/);
    expect(bad.stderr).not.toMatch(/unreachable|masters count/);
  });

  it.each([['release'], ['run']])('%s --help prints the usage of release and run, exit 0', async (command) => {
    const help = await built.cli(command, '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/nestjs-quorum-lock release <resource> --force .*\[--reason text\]/);
    expect(help.stdout).toMatch(
      /nestjs-quorum-lock run .*--resource R .*\[--owner text\] .*\[--grace 5000\].* -- <command>/,
    );
  });

  it('--reason and --force belong to release only, and the help text names release', async () => {
    const misplaced = await built.cli('inspect', '--force', '--nodes', nodes);
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toMatch(/--force is an option of release only/);
    const help = await built.cli('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/nestjs-quorum-lock release <resource> --force/);
    expect(help.stdout).toMatch(/release --force: 0 a holder was removed; 1 nothing was held/);
  });
});
