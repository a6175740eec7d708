import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib/index.js';
import { freePort } from '../../tools/redis-masters.js';
import { builtCli, mastersOlderThan, resourceName, useMasters, waitFor } from '../support/index.js';

const built = builtCli('master-down');
const TTL = 5_000;

beforeAll(() => built.build(), 120_000);
afterAll(() => built.remove());

describe('CLI with masters down: release --force, inspect and run (built bin, real masters)', () => {
  const set = useMasters(3);
  let dead: string[];

  beforeAll(async () => {
    dead = [`redis://127.0.0.1:${await freePort()}`, `redis://127.0.0.1:${await freePort()}`];
    expect(await mastersOlderThan(set, TTL * 1.01 + 2)).toBe(true);
  }, 15_000);

  const keysOn = async (resource: string): Promise<number> =>
    (await Promise.all(set.clients.map((c) => c.exists(`lock:${resource}`)))).reduce((a, b) => a + b, 0);

  it('one master of three down: inspect shows the owner, release --force revokes (exit 0) and the holder aborts as revoked', async () => {
    const holder = await set.redlock({ owner: 'worker@host-7' });
    const resource = resourceName('down-one');
    const lock = await holder.acquire(resource, TTL, { autoExtend: true });
    const nodes = [set.urls[0], set.urls[1], dead[0]].join(',');

    const table = await built.cli('inspect', '--nodes', nodes, resource);
    expect(table.stdout.split('\n').find((l) => l.startsWith(resource))).toMatch(/\bheld\b.*worker@host-7/);

    const forced = await built.cli('release', resource, '--force', '--reason', 'stuck', '--nodes', nodes);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain('worker@host-7');
    expect(await waitFor(() => lock.signal.aborted, 5_000)).toBe(true);
    expect((lock.signal.reason as LockLostError).reason).toBe('revoked');
    // gone from the two masters the CLI reached (the third, "down" for it, lets its copy lapse)
    for (const c of set.clients.slice(0, 2)) expect(await c.exists(`lock:${resource}`)).toBe(0);
  }, 60_000);

  it('one master of three down: run acquires on the two others, runs the command and exits with its code, releasing', async () => {
    const resource = resourceName('down-run');
    const nodes = [dead[0], set.urls[1], set.urls[2]].join(',');
    const end = await built.start(
      'run',
      '--nodes',
      nodes,
      '--resource',
      resource,
      '--ttl',
      String(TTL),
      '--',
      'sh',
      '-c',
      'exit 3',
    ).done;
    expect(end.code).toBe(3);
    expect(await keysOn(resource)).toBe(0);
  }, 60_000);

  it('two masters of three down: release --force of a held lock does not say "nothing held" and exits non-zero, removing nothing it cannot vouch for', async () => {
    const holder = await set.redlock({ owner: 'worker@host-8' });
    const resource = resourceName('down-two');
    const lock = await holder.acquire(resource, TTL, { autoExtend: true });
    const nodes = [set.urls[0], dead[0], dead[1]].join(',');

    const forced = await built.cli('release', resource, '--force', '--nodes', nodes);
    expect(forced.code).not.toBe(0);
    expect(forced.stdout).not.toMatch(/Nothing held/);
    expect(forced.stderr).toMatch(/master|quorum/i);
    expect(lock.isHeld).toBe(true);
    await lock.release();
  }, 60_000);

  it('every master down: release --force, inspect and run exit non-zero without hanging', async () => {
    const resource = resourceName('down-all');
    const nodes = dead.join(',') + `,redis://127.0.0.1:${await freePort()}`;
    const forced = await built.cli('release', resource, '--force', '--nodes', nodes, '--timeout', '500');
    expect(forced.code).not.toBe(0);
    expect(forced.stdout).not.toMatch(/Nothing held/);
    const table = await built.cli('inspect', '--nodes', nodes, '--timeout', '500', resource);
    expect(table.code).not.toBe(0);
    const end = await built.start('run', '--nodes', nodes, '--resource', resource, '--', 'true').done;
    expect(end.code).not.toBe(0);
    expect(end.code).not.toBe(75);
  }, 90_000);
});
