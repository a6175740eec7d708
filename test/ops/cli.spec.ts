import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { builtCli, resourceName, startMonitor, useMasters, waitFor } from '../support/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';

const built = builtCli('inspect');

const cli = built.cli;

beforeAll(() => built.build(), 120_000);
afterAll(() => built.remove());

describe('the nestjs-quorum-lock command-line inspector (built bin, real masters)', () => {
  const set = useMasters(3);
  let secured: RedisMasters;

  beforeAll(async () => {
    secured = await startRedisMasters(1);
    const admin = new Redis(secured.urls[0]);
    await admin.config('SET', 'requirepass', 's3cr3t-pw');
    admin.disconnect();
  });
  afterAll(() => secured?.stop());

  it('inspect: lists held locks with agreement, time left and fencing counters, as a table and as JSON', async () => {
    const redlock = await set.redlock({ fencing: true });
    const order = resourceName('order');
    const lock = await redlock.acquire(order, 30_000);
    const other = resourceName('invoice');
    await set.clients[0].set(`lock:${other}`, 'stray-holder', 'PX', 30_000); // a minority key
    try {
      const nodes = set.urls.join(',');
      const table = await cli('inspect', '--nodes', nodes);
      expect(table.code).toBe(0);
      const line = table.stdout.split('\n').find((l) => l.startsWith(order))!;
      expect(line).toMatch(/\bheld\s+3\/3\s+\d+(\.\d)? s\s+1\s+/);
      expect(table.stdout.split('\n').find((l) => l.startsWith(other))).toMatch(/\bminority\s+1\/3\s+-/);
      expect(table.stdout).not.toContain(lock.value); // the table abbreviates holder values

      const json = await cli('inspect', '--nodes', nodes, '--json', 'order:*');
      const report = JSON.parse(json.stdout) as {
        quorum: number;
        locks: {
          resource: string;
          held: boolean;
          agreeing: number;
          validity: number;
          fencingCounter?: number;
          masters: { pttl: number }[];
        }[];
      };
      expect(report.quorum).toBe(2);
      const found = report.locks.find((l) => l.resource === order)!;
      expect(found).toMatchObject({ held: true, agreeing: 3, fencingCounter: lock.fencingToken });
      expect(found.validity).toBeGreaterThan(20_000);
      expect(found.validity).toBeLessThanOrEqual(30_000);
      expect(report.locks.some((l) => l.resource === other)).toBe(false); // filtered by the pattern
    } finally {
      await lock.release();
      await set.clients[0].del(`lock:${other}`);
    }
  });

  it('inspect: readers of a read-write lock and permits of a counting lock, one row each, under their resource', async () => {
    const redlock = await set.redlock();
    const catalog = resourceName('catalog');
    const exports = resourceName('exports');
    const readers = [
      await redlock.acquire(catalog, 30_000, { mode: 'read' }),
      await redlock.acquire(catalog, 30_000, { mode: 'read' }),
    ];
    const permits = [
      await redlock.acquire(exports, 30_000, { limit: 3 }),
      await redlock.acquire(exports, 30_000, { limit: 3 }),
    ];
    try {
      const nodes = set.urls.join(',');
      const table = await cli('inspect', '--nodes', nodes);
      expect(table.code).toBe(0);
      expect(table.stdout).not.toContain('WRONGTYPE');
      const lines = table.stdout.split('\n');
      const reads = lines.filter((l) => l.startsWith(`${catalog} `));
      expect(reads).toHaveLength(2);
      for (const l of reads) expect(l).toMatch(/\bread\s+3\/3\s+\d+(\.\d)? s\s+-\s+/);
      const slots = lines.filter((l) => l.startsWith(`${exports} `));
      expect(slots).toHaveLength(2);
      for (const l of slots) expect(l).toMatch(/\bpermit [123]\/3\s+3\/3\s+\d+(\.\d)? s\s+/);
      // the slot and limit keys are not listed as locks of their own
      expect(table.stdout).not.toMatch(/:permit:\d|:limit\b/);

      const json = JSON.parse((await cli('inspect', '--nodes', nodes, '--json')).stdout) as {
        locks: {
          resource: string;
          readers: { value: string; held: boolean; agreeing: number }[];
          permits?: { limit: number; held: number; slots: { value: string }[] };
          masters: { error?: string }[];
        }[];
      };
      const r = json.locks.find((l) => l.resource === catalog)!;
      expect(r.readers.map((x) => x.value).sort()).toEqual(readers.map((l) => l.value).sort());
      expect(r.readers.every((x) => x.held && x.agreeing === 3)).toBe(true);
      for (const m of r.masters) expect(m.error).toBeUndefined();
      const p = json.locks.find((l) => l.resource === exports)!;
      expect(p.permits).toMatchObject({ limit: 3, held: 2 });
      expect(p.permits!.slots.map((x) => x.value).sort()).toEqual(permits.map((l) => l.value).sort());
      expect(json.locks.filter((l) => l.resource.startsWith(exports))).toHaveLength(1);
    } finally {
      await Promise.all([...readers, ...permits].map((l) => l.release()));
    }
  });

  it('inspect: uses SCAN, never KEYS, and writes nothing', async () => {
    const seen: string[] = [];
    const m = await startMonitor(set.urls[0]);
    m.on('monitor', (_t: string, args: string[]) => seen.push(String(args[0]).toLowerCase()));
    try {
      await cli('inspect', '--nodes', set.urls.join(','));
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      m.disconnect();
    }
    expect(seen).toContain('scan');
    expect(seen).not.toContain('keys');
    for (const write of ['set', 'del', 'pexpire', 'eval', 'evalsha', 'expire']) expect(seen).not.toContain(write);
  });

  it('masters: uptime, restart-guard state and maxmemory-policy; a master that is down; exit code 1 below a quorum', async () => {
    await set.clients[1].config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const res = await cli('masters', '--nodes', `${set.urls.join(',')}`, '--ttl', '600000');
      expect(res.code).toBe(1); // no master is past a 10-minute restart guard: none counts (below)
      const rows = res.stdout.split('\n');
      const row = (url: string) => rows.find((l) => l.startsWith(url.replace('redis://', '')))!;
      expect(row(set.urls[0])).toMatch(
        /\bup\s+master\s+\S+\s+\d+(\.\d)? (ms|s)\s+distrusted for \d+ min\s+noeviction$/,
      );
      expect(row(set.urls[1])).toMatch(/allkeys-lru \(can evict locks: set noeviction\)$/);
      const json = JSON.parse((await cli('masters', '--nodes', set.urls.join(','), '--ttl', '1', '--json')).stdout) as {
        masters: { restartGuard: { trusted: boolean }; maxmemoryPolicy: string; uptimeSeconds: number }[];
      };
      expect(json.masters[0].maxmemoryPolicy).toBe('noeviction');
      expect(typeof json.masters[0].uptimeSeconds).toBe('number');

      const down = await cli('masters', '--nodes', `${set.urls[0]},redis://127.0.0.1:1,redis://127.0.0.1:2`);
      expect(down.code).toBe(1);
      expect(down.stdout).toMatch(/127\.0\.0\.1:1\s+down \(/);
      expect(down.stdout).toContain('1 of 3 reachable; a lock needs 2.');
    } finally {
      await set.clients[1].config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('masters: exit code 1 when fewer than a quorum would count for a lock (down, restart guard, evicting, same server twice), 0 when a quorum would', async () => {
    const [a, b, c] = set.urls;
    const port = (url: string): string => new URL(url).port;
    // INFO's uptime is whole seconds, counted one short: past a 1 ms guard from 2 s on
    const uptime = async (i: number): Promise<number> =>
      Number(/uptime_in_seconds:(\d+)/.exec(await set.clients[i].info('server'))?.[1]);
    expect(await waitFor(async () => (await Promise.all([0, 1, 2].map(uptime))).every((u) => u >= 2), 5_000, 100)).toBe(
      true,
    );
    // all three reachable, noeviction, up for longer than a 1 ms guard: all count
    const ok = await cli('masters', '--nodes', [a, b, c].join(','), '--ttl', '1');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('3 of 3 count for locks up to 1 ms.');

    // reachable, but a 10-minute TTL's restart guard distrusts these young servers: none counts
    const young = await cli('masters', '--nodes', [a, b, c].join(','), '--ttl', '600000');
    expect(young.code).toBe(1);
    expect(young.stdout).toContain('0 of 3 count for locks up to 600000 ms');
    expect(young.stdout).toContain(`127.0.0.1:${port(a)}: restart guard`);
    expect(young.stdout).toContain('below the quorum of 2, no lock can be taken now.');

    await set.clients[1].config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      // one evicting, one down: a single master counts
      const evicting = await cli('masters', '--nodes', [a, b, 'redis://127.0.0.1:1'].join(','), '--ttl', '1');
      expect(evicting.code).toBe(1);
      expect(evicting.stdout).toContain(`127.0.0.1:${port(b)}: maxmemory-policy allkeys-lru`);
      expect(evicting.stdout).toContain('127.0.0.1:1: unreachable');
      // one evicting of three: a quorum still counts
      const two = await cli('masters', '--nodes', [a, b, c].join(','), '--ttl', '1', '--json');
      expect(two.code).toBe(0);
      const report = JSON.parse(two.stdout) as { quorum: number; counting: number; masters: { counts: boolean }[] };
      expect(report).toMatchObject({ quorum: 2, counting: 2 });
      expect(report.masters.map((m) => m.counts)).toEqual([true, false, true]);
    } finally {
      await set.clients[1].config('SET', 'maxmemory-policy', 'noeviction');
    }

    // the same server under two spellings votes once: with a third node down, one vote of three
    const twice = await cli(
      'masters',
      '--nodes',
      [a, `redis://localhost:${port(a)}`, 'redis://127.0.0.1:1'].join(','),
      '--ttl',
      '1',
    );
    expect(twice.code).toBe(1);
    expect(twice.stdout).toContain(`localhost:${port(a)}: same server as 127.0.0.1:${port(a)}`);
  });

  it('never prints a password from a URL, in output or in errors', async () => {
    const port = new URL(secured.urls[0]).port;
    const good = `redis://:s3cr3t-pw@127.0.0.1:${port}`;
    const bad = `redis://:wr0ng-pw@127.0.0.1:${port}`;
    for (const args of [
      ['masters', '--nodes', `${good},${bad}`],
      ['masters', '--nodes', `${good},${bad}`, '--json'],
      ['inspect', '--nodes', `${good},${bad}`],
      ['inspect', '--nodes', `${good},${bad}`, '--json'],
      ['inspect', '--nodes', 'http://:s3cr3t-pw@x'],
      ['inspect', '--nodes', `redis//:s3cr3t-pw@127.0.0.1:${port}`],
      ['masters', '--nodes', `redis:/:s3cr3t-pw@127.0.0.1:${port}`],
      ['masters', '--nodes', `redis://:s3cr3t-pw/x@127.0.0.1:${port}`],
      ['masters', '--nodes', 'redis://127.0.0.1:notaport?password=s3cr3t-pw'],
      ['inspect', '--nodes', `redis://127.0.0.1:${port}?password=wr0ng-pw`],
    ]) {
      const res = await cli(...args);
      const all = res.stdout + res.stderr;
      expect(all).not.toContain('s3cr3t-pw');
      expect(all).not.toContain('wr0ng-pw');
    }
    const ok = await cli('masters', '--nodes', good);
    expect(ok.stdout).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}\\s+up`));
  });

  it('refuses bad usage with exit code 2 and the usage text', async () => {
    const res = await cli('inspect');
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--nodes is required');
    expect((await cli('frobnicate', '--nodes', set.urls[0])).stderr).toContain('unknown command');
    const none = await cli('masters', '--nodes', ',');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--nodes lists no master');
  });

  it("checks each --nodes entry with the library's node parser: a bad port is bad usage naming --nodes", async () => {
    // The library refuses port 0 in `nodes`; the CLI used to try it and report the master down (exit 1).
    for (const command of ['masters', 'inspect']) {
      const res = await cli(command, '--nodes', `${set.urls[0]},redis://:s3cr3t-pw@127.0.0.1:0`);
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(/`--nodes` has a bad port \("0"\)/);
      expect(res.stderr).not.toContain('s3cr3t-pw');
    }
    const cluster = await cli('masters', '--nodes', 'cluster:127.0.0.1:7000+127.0.0.1:0');
    expect(cluster.code).toBe(2);
    expect(cluster.stderr).toMatch(/`--nodes\.cluster\[1\]` has a bad port/);
  });
});
