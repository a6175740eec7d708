import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Redlock } from '../../lib/index.js';
import { freePort, startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { waitFor } from '../support/index.js';

describe('a Sentinel-managed group as one master (real redis-server --sentinel)', () => {
  let masters: RedisMasters; // [0] primary, [1] its replica, [2] and [3] plain masters
  let sentinel: ChildProcess | undefined;
  let sentinelPort: number;
  let dir: string;

  beforeAll(async () => {
    masters = await startRedisMasters(4);
    const [primary, replica] = masters.masters;
    const admin = new Redis(replica.port, '127.0.0.1');
    await admin.call('REPLICAOF', '127.0.0.1', String(primary.port));
    await waitFor(async () => /master_link_status:up/.test(await admin.info('replication')), 15_000, 100);
    admin.disconnect();
    sentinelPort = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'sentinel-'));
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor mymaster 127.0.0.1 ${primary.port} 1`,
        'sentinel down-after-milliseconds mymaster 1000',
        'sentinel failover-timeout mymaster 5000',
      ].join('\n'),
    );
    sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
    const probe = new Redis(sentinelPort, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 100,
    });
    probe.on('error', () => undefined);
    await waitFor(
      async () => {
        try {
          if (probe.status === 'wait') await probe.connect();
          const replicas = (await probe.call('SENTINEL', 'REPLICAS', 'mymaster')) as unknown[];
          return replicas.length === 1;
        } catch {
          return false;
        }
      },
      20_000,
      200,
    );
    probe.disconnect();
  }, 60_000);

  afterAll(async () => {
    if (sentinel?.pid) process.kill(sentinel.pid, 'SIGKILL');
    await masters?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('distrusts the group after its master fails over to the replica (run_id changed, long uptime)', async () => {
    const [primary, , a, b] = masters.masters;
    const redlock = new Redlock({
      nodes: [
        { sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name: 'mymaster' },
        `redis://127.0.0.1:${a.port}`,
        `redis://127.0.0.1:${b.port}`,
      ],
      restartGuard: { largestTtl: 200 },
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    try {
      await redlock.connect();
      expect(
        await waitFor(async () => (await redlock.refreshMasterStates()).every((s) => s.trusted), 15_000, 200),
      ).toBe(true);
      const before = redlock.masterStates()[0].runId;
      expect(before).toBeDefined();
      // Long enough since start-up that a new server there cannot pass as "fresh": the guard must say why.
      await primary.kill();
      const seen = await waitFor(() => redlock.masterStates()[0].distrust === 'failover', 30_000, 100);
      expect(seen).toBe(true);
      const state = redlock.masterStates()[0];
      expect(state.runId).not.toBe(before);
      expect(state.failovers).toBeGreaterThanOrEqual(1);
      expect(state.label).toMatch(/^sentinel:mymaster@/);
    } finally {
      await redlock.close();
    }
  }, 60_000);
});
