/**
 * Issue 17 item 2 / issue 13 item 7: masters whose `maxmemory-policy` can evict lock keys. Real
 * redis-server processes started with `--maxmemory 4mb --maxmemory-policy allkeys-lru`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LockAcquisitionError, Redlock, RedlockConfigError, type RedlockLogger } from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { Redis } from 'ioredis';
import { rejectionOf, resourceName, waitFor } from '../support/index.js';

function capture(): RedlockLogger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
  return { lines, log: at('log'), warn: at('warn'), error: at('error') };
}

describe('masters with an evicting maxmemory-policy', () => {
  let evicting: RedisMasters;
  let noConfig: RedisMasters;
  const opened: Redlock[] = [];
  const make = (options: ConstructorParameters<typeof Redlock>[0]): Redlock => {
    const redlock = new Redlock(options);
    opened.push(redlock);
    return redlock;
  };

  beforeAll(async () => {
    evicting = await startRedisMasters(3, { args: ['--maxmemory', '4mb', '--maxmemory-policy', 'allkeys-lru'] });
    // CONFIG renamed away (as on managed services): the policy is still read, from INFO.
    noConfig = await startRedisMasters(3, {
      args: ['--maxmemory', '4mb', '--maxmemory-policy', 'volatile-lru', '--rename-command', 'CONFIG', ''],
    });
  });
  afterAll(async () => {
    await Promise.all(opened.map((r) => r.close()));
    await evicting?.stop();
    await noConfig?.stop();
  });

  it('refuses them by default: connect() rejects naming the master and the setting, masterStates() shows why, and their votes never count', async () => {
    const logger = capture();
    const redlock = make({ nodes: evicting.urls, restartGuard: false, retryCount: 0, logger });
    const error = await rejectionOf(redlock.connect());
    expect(error).toBeInstanceOf(RedlockConfigError);
    const e = error as RedlockConfigError;
    expect(e.option).toBe('nodes[0]');
    expect(e.message).toContain(`Master ${redlock.masters[0]} has \`maxmemory-policy allkeys-lru\` (maxmemory 4mb)`);
    expect(e.message).toContain('maxmemory-policy noeviction');
    expect(e.message).toContain('allowEvictingMasters: true');

    for (const s of redlock.masterStates()) {
      expect(s).toMatchObject({
        connected: true,
        trusted: false,
        distrust: 'evicting-policy',
        maxmemoryPolicy: 'allkeys-lru',
        maxmemory: 4 * 1024 * 1024,
        evicting: true,
      });
    }
    // Every use is refused the same way (acquire() connects first when connect() did not succeed).
    expect(await rejectionOf(redlock.acquire(resourceName('evict'), 2_000))).toBeInstanceOf(RedlockConfigError);
  });

  it('a master whose policy turns evicting after start-up loses its vote, and an error is logged naming it', async () => {
    const fine = await startRedisMasters(3);
    try {
      const logger = capture();
      const redlock = make({ nodes: fine.urls, restartGuard: false, retryCount: 0, logger });
      await redlock.connect();
      const admin = new Redis(fine.urls[0]);
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      admin.disconnect();
      const [first] = await redlock.refreshMasterStates();
      expect(first).toMatchObject({ trusted: false, distrust: 'evicting-policy', maxmemoryPolicy: 'allkeys-lru' });
      expect(logger.lines.join('\n')).toContain(
        `error: Master ${redlock.masters[0]} has \`maxmemory-policy allkeys-lru\``,
      );
      await fine.masters[1].kill();
      const refused = (await rejectionOf(redlock.acquire(resourceName('evict-later'), 2_000))) as LockAcquisitionError;
      expect(refused).toBeInstanceOf(LockAcquisitionError);
      expect(refused.outcomes.map((o) => [o.status, o.distrust])).toEqual([
        ['excluded', 'evicting-policy'],
        ['error', undefined],
        ['granted', undefined],
      ]);
      expect(refused.message).toContain('maxmemory-policy can evict lock keys');
      await redlock.close();
    } finally {
      await fine.stop();
    }
  });

  it('with allowEvictingMasters: true they vote, and each is warned about once, also across reconnects', async () => {
    const logger = capture();
    const name = `evict-${process.pid}`;
    const nodes = evicting.masters.map((m) => ({ host: '127.0.0.1', port: m.port, connectionName: name }));
    const redlock = make({ nodes, restartGuard: false, allowEvictingMasters: true, logger });
    const idsOf = async (): Promise<string[]> =>
      Promise.all(
        evicting.urls.map(async (url) => {
          const c = new Redis(url);
          const list = (await c.client('LIST')) as string;
          c.disconnect();
          return list
            .split('\n')
            .filter((l) => l.includes(` name=${name} `))
            .map((l) => /id=(\d+)/.exec(l)![1])
            .join(',');
        }),
      );
    await redlock.connect();
    const warnings = () =>
      logger.lines.filter((l) => l.startsWith('warn:') && l.includes('maxmemory-policy allkeys-lru'));
    expect(warnings()).toHaveLength(3);
    for (const [i, label] of redlock.masters.entries()) expect(warnings()[i]).toContain(`Master ${label} has`);
    expect(warnings()[0]).toContain('`allowEvictingMasters` is on');
    for (const s of redlock.masterStates())
      expect(s).toMatchObject({ trusted: true, maxmemoryPolicy: 'allkeys-lru', evicting: true });
    const lock = await redlock.acquire(resourceName('allowed'), 2_000);
    await lock.release();
    await redlock.refreshMasterStates();
    // Drop every connection of the library: it reconnects, reads INFO again, and does not warn again.
    const runIds = redlock.masterStates().map((s) => s.runId);
    const before = await idsOf();
    await Promise.all(
      evicting.urls.map(async (url) => {
        const killer = new Redis(url);
        await killer.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
        killer.disconnect();
      }),
    );
    expect(await waitFor(async () => (await idsOf()).every((ids, i) => ids !== '' && ids !== before[i]), 5_000)).toBe(
      true,
    );
    expect(await waitFor(() => redlock.masterStates().every((s) => s.connected && s.trusted), 5_000)).toBe(true);
    expect(redlock.masterStates().map((s) => s.runId)).toEqual(runIds);
    expect(warnings()).toHaveLength(3);
  });

  it('reads the policy from INFO where CONFIG is disabled, and refuses volatile-lru too (lock keys are the keys with a TTL)', async () => {
    const redlock = make({ nodes: noConfig.urls, restartGuard: false, logger: false });
    const error = (await rejectionOf(redlock.connect())) as RedlockConfigError;
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(error.message).toContain('`maxmemory-policy volatile-lru`');
    expect(error.message).toContain('they are the keys with a TTL');
    expect(redlock.masterStates().map((s) => s.maxmemoryPolicy)).toEqual([
      'volatile-lru',
      'volatile-lru',
      'volatile-lru',
    ]);
  });
});
