/**
 * Issue 8 item 9 (one server, one vote) and issue 15 item 3 (failover-aware guard), on real
 * redis-server processes. A small TCP proxy stands for a second address of the same server (a
 * host name, a load balancer, NAT) and for an address whose server changes (a failover behind a
 * proxy or a DNS name).
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import {
  LockAcquisitionError,
  LockExtensionError,
  LockLostError,
  Redlock,
  RedlockConfigError,
  type RedlockLogger,
} from '../../lib/index.js';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { inspector, rejectionOf, resourceName, sleep, useMasters, waitFor } from '../support/index.js';

/** A TCP proxy on 127.0.0.1 to `target()`'s port; `cut()` drops every proxied connection. */
async function proxy(
  target: () => number,
): Promise<{ port: number; url: string; sent: string[]; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const sent: string[] = [];
  const server: Server = createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: target() });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => sent.push(chunk.toString('latin1')));
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    sent,
    cut: () => sockets.forEach((s) => s.destroy()),
    close: () => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), server.close(() => resolve()))),
  };
}

function capture(): RedlockLogger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
  return { lines, log: at('log'), warn: at('warn'), error: at('error') };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

describe('one server, one vote (3 masters)', () => {
  const set = useMasters(3);

  it('connect() refuses one server listed twice under another address, naming both nodes; its second vote never counts', async () => {
    const alias = await proxy(() => set.masters[0].port);
    closers.push(alias.close);
    const logger = capture();
    const redlock = new Redlock({
      nodes: [set.urls[0], alias.url, set.urls[1]],
      restartGuard: false,
      retryCount: 0,
      logger,
    });
    closers.push(() => redlock.close());
    const error = (await rejectionOf(redlock.connect())) as RedlockConfigError;
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(error.option).toBe('nodes[1]');
    expect(error.message).toContain(
      `\`nodes[1]\` (127.0.0.1:${alias.port}) is the same Redis server as \`nodes[0]\` (${redlock.masters[0]})`,
    );
    const states = redlock.masterStates();
    expect(states[1]).toMatchObject({ trusted: false, distrust: 'duplicate', sameServerAs: redlock.masters[0] });
    expect(states[1].runId).toBe(states[0].runId);
  });

  it('a node that becomes the same server later (a DNS or proxy change) loses its vote: with one real server of three up, neither extend() nor acquire() succeeds', async () => {
    const spares = await startRedisMasters(2);
    closers.push(() => spares.stop());
    let target = spares.masters[0].port;
    const alias = await proxy(() => target);
    closers.push(alias.close);
    const logger = capture();
    const redlock = new Redlock({
      nodes: [set.urls[0], alias.url, spares.urls[1]],
      restartGuard: false,
      retryCount: 0,
      commandTimeout: 200,
      logger,
    });
    closers.push(() => redlock.close());
    await redlock.connect(); // three distinct servers
    const lock = await redlock.acquire(resourceName('one-server'), 5_000);

    // The alias now leads to master 0, and the third server goes away: one real server is left.
    target = set.masters[0].port;
    alias.cut();
    expect(await waitFor(() => redlock.masterStates()[1].distrust === 'duplicate', 5_000)).toBe(true);
    expect(logger.lines.join('\n')).toContain(
      `error: \`nodes[1]\` (127.0.0.1:${alias.port}) is the same Redis server as \`nodes[0]\``,
    );
    await spares.masters[1].kill();

    const extendError = await rejectionOf(lock.extend());
    expect(extendError instanceof LockExtensionError || extendError instanceof LockLostError).toBe(true);
    await lock.release();
    const acquireError = (await rejectionOf(
      redlock.acquire(resourceName('one-server-2'), 5_000),
    )) as LockAcquisitionError;
    expect(acquireError).toBeInstanceOf(LockAcquisitionError);
    expect(acquireError.outcomes.map((o) => o.status)).toEqual(['granted', 'excluded', 'error']);
    expect(acquireError.outcomes[1]).toMatchObject({ distrust: 'duplicate' });
    expect(acquireError.message).toContain('same server as another node');
    // The duplicate was sent nothing: reached first, it would have taken the key on the real server.
    expect(alias.sent.join('')).not.toContain('one-server-2');
  });
});

describe('failover-aware restart guard', () => {
  let servers: RedisMasters; // [old master X, replica Y, two more masters]
  const clients: Redis[] = [];
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await servers?.stop();
  });

  it('a node whose server changed (run_id) although the new one has been up for long is distrusted for the whole guard, and says failover', async () => {
    servers = await startRedisMasters(4);
    const [x, y, b, c] = servers.masters;
    for (const m of servers.masters) clients.push(inspector(m.url));
    const [, yClient] = clients;
    let target = x.port;
    const vip = await proxy(() => target);
    closers.push(vip.close);
    const guardTtl = 500;
    const guardMs = guardTtl + guardTtl * 0.01 + 2;
    // Everyone has been up longer than the guard (INFO's uptime is whole seconds, counted one less).
    await sleep(2_100 + guardMs);

    const logger = capture();
    const redlock = new Redlock({ nodes: [vip.url, b.url, c.url], ttl: guardTtl, retryCount: 0, logger });
    closers.push(() => redlock.close());
    await redlock.connect();
    await redlock.whenTrusted({ timeout: 5_000 });
    expect(redlock.masterStates()[0]).toMatchObject({ trusted: true, failovers: 0 });

    // Y replicates X, then is promoted and takes X's address (the proxy now leads to Y).
    await clients[0].config('SET', 'repl-diskless-sync-delay', '0'); // no 5 s wait for more replicas
    await yClient.replicaof('127.0.0.1', String(x.port));
    expect(await waitFor(async () => /master_link_status:up/.test(await yClient.info('replication')), 5_000)).toBe(
      true,
    );
    await yClient.replicaof('NO', 'ONE');
    target = y.port;
    vip.cut();

    expect(await waitFor(() => redlock.masterStates()[0].failovers === 1, 5_000)).toBe(true);
    const state = redlock.masterStates()[0];
    expect(state).toMatchObject({ connected: true, trusted: false, distrust: 'failover' });
    expect(state.uptimeMs).toBeGreaterThanOrEqual(guardMs); // the plain uptime rule would trust it at once
    expect(state.distrustedFor).toBeGreaterThan(0);
    expect(logger.lines.join('\n')).toMatch(
      /Master 127\.0\.0\.1:\d+ is distrusted for \d+ ms: another server now answers at this address/,
    );

    // Its vote does not count; with B paused, no quorum.
    b.pause();
    try {
      const error = (await rejectionOf(redlock.acquire(resourceName('failover'), guardTtl))) as LockAcquisitionError;
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect(error.outcomes[0]).toMatchObject({ status: 'restarted', distrust: 'failover' });
    } finally {
      b.resume();
    }
    // After the guard it counts again.
    await redlock.whenTrusted({ timeout: 5_000 });
    expect(await waitFor(() => redlock.masterStates()[0].trusted, guardMs + 1_000)).toBe(true);
  });

  it('a replica promoted in place (REPLICAOF NO ONE: master_replid changes, run_id does not) is distrusted once seen', async () => {
    const [x, y, b, c] = servers.masters;
    const [, yClient] = clients;
    await yClient.replicaof('127.0.0.1', String(x.port));
    expect(await waitFor(async () => /master_link_status:up/.test(await yClient.info('replication')), 5_000)).toBe(
      true,
    );
    const guardTtl = 500;
    const redlock = new Redlock({ nodes: [y.url, b.url, c.url], ttl: guardTtl, retryCount: 0, logger: false });
    closers.push(() => redlock.close());
    await redlock.connect();
    await redlock.whenTrusted({ timeout: 5_000 });
    const before = redlock.masterStates()[0];
    expect(before).toMatchObject({ role: 'slave', failovers: 0 });

    await yClient.replicaof('NO', 'ONE');
    const [after] = await redlock.refreshMasterStates();
    expect(after).toMatchObject({
      role: 'master',
      runId: before.runId,
      trusted: false,
      distrust: 'failover',
      failovers: 1,
    });
  });
});
