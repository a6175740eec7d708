/**
 * The proxy's `cut-commands` fault: it tells a client's subscriber connection from its command
 * connection by what each sends, and cuts only the command connection (on a real redis-server).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { MasterProxy, classify, parseCommands, type ConnectionRole } from '../../chaos/proxy.js';
import { waitFor } from '../support/wait-for.js';

describe('what a connection sends tells its role', () => {
  const roleAfter = (...commands: string[][]): ConnectionRole => {
    let state = { role: 'unknown' as ConnectionRole, readyCheck: false };
    for (const c of commands) state = classify(state.role, c, state.readyCheck);
    return state.role;
  };

  it('a subscriber reads its server (INFO server) or subscribes after the ready check; a command connection runs anything else', () => {
    expect(roleAfter(['CLIENT', 'SETNAME', 'x'], ['info'], ['info', 'server'])).toBe('subscriber');
    expect(roleAfter(['info'], ['subscribe', 'ch'])).toBe('subscriber');
    expect(roleAfter(['info'], ['info'])).toBe('command'); // the ready check, then the master monitor's INFO
    expect(roleAfter(['info'], ['evalsha', 'abc', '1', 'k'])).toBe('command');
    expect(roleAfter(['info'])).toBe('unknown');
  });

  it('reads whole RESP commands and leaves a partial one for the next chunk', () => {
    const bytes = Buffer.from('*1\r\n$4\r\ninfo\r\n*2\r\n$4\r\ninfo\r\n$6\r\nser');
    const { commands, used } = parseCommands(bytes);
    expect(commands).toEqual([['info']]);
    expect(used).toBe('*1\r\n$4\r\ninfo\r\n'.length);
  });
});

describe('the cut-commands fault', () => {
  let masters: RedisMasters;
  let proxy: MasterProxy;
  const opened: Redis[] = [];
  beforeAll(async () => {
    masters = await startRedisMasters(1);
    proxy = new MasterProxy(0, Number(new URL(masters.urls[0]).port));
    await proxy.route('c1');
  }, 20_000);
  afterAll(async () => {
    for (const c of opened) c.disconnect();
    await proxy?.close();
    await masters?.stop();
  });

  it("cuts the client's command connection on each reconnection while its subscriber connects, reads its server and hears messages", async () => {
    const retry = { retryStrategy: () => 20, maxRetriesPerRequest: 0 };
    const commands = new Redis(proxy.url('c1'), retry);
    opened.push(commands);
    commands.on('error', () => undefined);
    await commands.info();
    proxy.setFault('c1', { kind: 'cut-commands' });
    // The library's subscriber: a duplicate that reads its server with INFO before it subscribes.
    const subscriber = commands.duplicate({ autoResubscribe: false, enableOfflineQueue: false });
    opened.push(subscriber);
    subscriber.on('error', () => undefined);
    const heard: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => heard.push(message));
    expect(await waitFor(() => subscriber.status === 'ready', 5_000)).toBe(true);
    expect(await subscriber.info('server')).toMatch(/run_id:/);
    await subscriber.subscribe('wakeups');
    const direct = new Redis(masters.urls[0]);
    opened.push(direct);
    await direct.publish('wakeups', 'handed');
    expect(await waitFor(() => heard.includes('handed'), 5_000)).toBe(true);
    // Every attempt of the command connection is reset: none of its commands reach the server.
    const attempts = await Promise.all(
      Array.from({ length: 5 }, () =>
        commands.set('cut:key', 'v').then(
          () => 'ok',
          () => 'failed',
        ),
      ),
    );
    expect(attempts).not.toContain('ok');
    expect(await direct.exists('cut:key')).toBe(0);
    proxy.setFault('c1', undefined);
    expect(
      await waitFor(
        () =>
          commands.set('cut:key', 'v').then(
            () => true,
            () => false,
          ),
        5_000,
      ),
    ).toBe(true);
    expect(subscriber.status).toBe('ready'); // the subscriber was never cut
  }, 20_000);
});
