import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';

const opened: Redis[] = [];
const started: RedisMasters[] = [];

/** Start masters that afterAll stops even if the test fails before stopping them itself. */
async function start(count: number): Promise<RedisMasters> {
  const redis = await startRedisMasters(count);
  started.push(redis);
  return redis;
}

/** A connected client that fails fast: no offline queue, no retries, 200 ms command timeout. */
async function open(url: string): Promise<Redis> {
  const client = new Redis(url, {
    lazyConnect: true,
    commandTimeout: 200,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  opened.push(client);
  await client.connect();
  return client;
}

/** 'alive' if `pid` exists, else the error code of `kill(pid, 0)`. */
function probe(pid: number): string | undefined {
  try {
    process.kill(pid, 0);
    return 'alive';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code;
  }
}

afterEach(() => {
  // Skip ended clients: ioredis' disconnect() on an already-closed stream leaves a 2 s timer behind.
  for (const client of opened.splice(0)) if (client.status !== 'end') client.disconnect();
});

afterAll(async () => {
  await Promise.all(started.map((redis) => redis.stop()));
});

describe('startRedisMasters', () => {
  let redis: RedisMasters;
  beforeAll(async () => {
    redis = await start(3);
  });

  it('starts independent masters with distinct ports and pids, each answering PING', async () => {
    const { masters, urls } = redis;
    expect(masters).toHaveLength(3);
    expect(urls).toEqual(masters.map((m) => `redis://127.0.0.1:${m.port}`));
    expect(new Set(masters.map((m) => m.port)).size).toBe(3);
    expect(new Set(masters.map((m) => m.pid)).size).toBe(3);
    for (const master of masters) {
      const client = await open(master.url);
      expect(await client.ping()).toBe('PONG');
      expect(await client.info('server')).toContain(`process_id:${master.pid}\r\n`);
    }
  });

  it('pause() makes commands time out and resume() makes them answer again', async () => {
    const [paused, other] = redis.masters;
    const client = await open(paused.url);
    const otherClient = await open(other.url);
    expect(await client.ping()).toBe('PONG');
    paused.pause();
    try {
      await expect(client.ping()).rejects.toThrow(/timed out/i);
      expect(await otherClient.ping()).toBe('PONG');
    } finally {
      paused.resume();
    }
    expect(await client.ping()).toBe('PONG');
  });

  it('kill() loses the data; restart() keeps the port and changes the pid', async () => {
    const master = redis.masters[1];
    const { port, pid } = master;
    const before = await open(master.url);
    expect(await before.set('key', 'value')).toBe('OK');
    await expect(master.restart()).rejects.toThrow(/still running/);

    await master.kill();
    expect(master.pid).toBeUndefined();
    expect(probe(pid!)).toBe('ESRCH');
    await expect(open(master.url)).rejects.toThrow(/ECONNREFUSED|Connection is closed/);

    await master.restart();
    expect(master.port).toBe(port);
    expect(master.pid).toEqual(expect.any(Number));
    expect(master.pid).not.toBe(pid);
    const after = await open(master.url);
    expect(await after.get('key')).toBeNull();
  });
});

describe('RedisMasters.stop', () => {
  it('terminates every process (even a paused one) and removes the temp dirs; idempotent', async () => {
    const redis = await start(2);
    const pids = redis.masters.map((m) => m.pid!);
    const dirs: string[] = [];
    for (const url of redis.urls) dirs.push((await (await open(url)).config('GET', 'dir'))[1]);
    expect(pids.map(probe)).toEqual(['alive', 'alive']);
    expect(dirs.map((dir) => existsSync(dir))).toEqual([true, true]);

    redis.masters[0].pause();
    await redis.stop();
    expect(pids.map(probe)).toEqual(['ESRCH', 'ESRCH']);
    expect(dirs.map((dir) => existsSync(dir))).toEqual([false, false]);
    expect(redis.masters.map((m) => m.pid)).toEqual([undefined, undefined]);
    await expect(redis.stop()).resolves.toBeUndefined();
  });

  it('is what `await using` calls on disposal', async () => {
    let pid: number | undefined;
    {
      await using redis = await start(1);
      pid = redis.masters[0].pid;
      expect(probe(pid!)).toBe('alive');
    }
    expect(probe(pid!)).toBe('ESRCH');
  });
});

describe('failures', () => {
  it('explains how to install redis-server when the binary (option or $REDIS_SERVER) is missing', async () => {
    const message =
      'redis-server was not found on PATH. Install it (Debian/Ubuntu: `apt-get install -y redis-server`) ' +
      'or set REDIS_SERVER to its path.';
    await expect(startRedisMasters(1, { redisServer: '/nonexistent/redis-server' })).rejects.toThrow(message);
    const saved = process.env.REDIS_SERVER;
    process.env.REDIS_SERVER = '/nonexistent/redis-server';
    try {
      await expect(startRedisMasters(1)).rejects.toThrow(message);
    } finally {
      if (saved === undefined) delete process.env.REDIS_SERVER;
      else process.env.REDIS_SERVER = saved;
    }
  });

  it('restart() fails clearly when another process took the port meanwhile', async () => {
    await using redis = await start(1);
    const master = redis.masters[0];
    await master.kill();
    const squatter = createServer((socket) => socket.destroy()).listen(master.port, '127.0.0.1');
    // The squatter must hold the port before restart() begins: listen() binds asynchronously.
    await new Promise((resolve) => squatter.once('listening', resolve));
    try {
      await expect(master.restart()).rejects.toThrow(`127.0.0.1:${master.port} is in use`);
      expect(master.pid).toBeUndefined();
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
