/**
 * The masters' side, on real redis-server processes: the `logger` option and the start-up report,
 * `masterStates()`, `whenTrusted()`, unreachable masters named with their network error, node
 * entries checked and redacted, and one listener per user-supplied client.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { inspect } from 'node:util';
import {
  LockAcquisitionError,
  Redlock,
  RedlockConfigError,
  RedlockError,
  type RedlockLogger,
} from '../../lib/index.js';
import { rejectionOf, resourceName, useMasters, waitFor } from '../support/index.js';

/** A logger that keeps every line, by level. */
function capture(): RedlockLogger & { lines: { level: string; message: string }[]; text(): string } {
  const lines: { level: string; message: string }[] = [];
  const at = (level: string) => (message: string) => void lines.push({ level, message });
  return {
    lines,
    log: at('log'),
    warn: at('warn'),
    error: at('error'),
    debug: at('debug'),
    text: () => lines.map((l) => `${l.level}: ${l.message}`).join('\n'),
  };
}

describe('start-up report, masterStates() and whenTrusted() (3 fresh masters)', () => {
  const set = useMasters(3);

  it('logs which masters are distrusted, for how long and why; masterStates() and the error say so; whenTrusted() waits it out', async () => {
    const logger = capture();
    const redlock = new Redlock({
      nodes: set.urls,
      ttl: 1_000,
      restartGuard: { largestTtl: 2_000 },
      retryCount: 0,
      logger,
    });
    try {
      // Never Infinity, not even before connect or while INFO is still on its way.
      for (const ms of redlock.distrustedFor) expect(Number.isFinite(ms)).toBe(true);
      await redlock.connect();
      for (const ms of redlock.distrustedFor) expect(Number.isFinite(ms)).toBe(true);

      const states = redlock.masterStates();
      expect(states.map((s) => s.label)).toEqual(redlock.masters);
      for (const s of states) {
        expect(s.connected).toBe(true);
        expect(s.maxmemoryPolicy).toBe('noeviction');
        expect(s.evicting).toBe(false);
        expect(s.runId).toMatch(/^[0-9a-f]{40}$/);
        expect(s.roundTripMs).toBeGreaterThanOrEqual(0);
        expect(s.role).toBe('master');
      }
      // Started a moment ago: the guard (2 s + drift) still distrusts at least one of them.
      const distrusted = states.filter((s) => !s.trusted);
      expect(distrusted.length).toBeGreaterThan(0);
      for (const s of distrusted) {
        expect(s.distrust).toBe('fresh');
        expect(s.distrustedFor).toBeGreaterThan(0);
        expect(s.distrustedFor).toBeLessThanOrEqual(2_000 + 20 + 2);
        expect(logger.text()).toContain(`Master ${s.label} is distrusted for`);
      }
      expect(logger.text()).toMatch(/brand-new server.*restartGuard/);

      if (states.filter((s) => s.trusted).length < redlock.quorum) {
        const error = await rejectionOf(redlock.acquire(resourceName('fresh'), 1_000));
        expect(error).toBeInstanceOf(LockAcquisitionError);
        expect((error as Error).message).toMatch(/`restartGuard`: fresh server, trusted again in at most \d+ ms/);
        const restarted = (error as LockAcquisitionError).outcomes.filter((o) => o.status === 'restarted');
        expect(restarted.length).toBeGreaterThan(0);
        for (const o of restarted) expect(o).toMatchObject({ distrust: 'fresh' });
      }

      await redlock.whenTrusted({ timeout: 10_000 });
      const lock = await redlock.acquire(resourceName('trusted'), 1_000);
      await lock.release();
      // "Trusted again" is logged when each distrust ends.
      expect(
        await waitFor(
          () => distrusted.every((s) => logger.text().includes(`Master ${s.label} is trusted again`)),
          3_000,
        ),
      ).toBe(true);
      // No log line carries a lock value.
      expect(logger.text()).not.toContain(lock.value);
    } finally {
      await redlock.close();
    }
  });

  it('whenTrusted() rejects after its timeout, naming the masters that do not count and why', async () => {
    const redlock = new Redlock({ nodes: set.urls, restartGuard: { largestTtl: 600_000 }, logger: false });
    try {
      await redlock.connect();
      const error = await rejectionOf(redlock.whenTrusted({ timeout: 100 }));
      expect(error).toBeInstanceOf(RedlockError);
      expect((error as Error).message).toContain(`${set.urls.length - 0 > 0 ? redlock.masters[0] : ''} fresh for`);
      for (const ms of redlock.distrustedFor) expect(ms).toBeLessThanOrEqual(600_000 + 6_000 + 2);
    } finally {
      await redlock.close();
    }
  });

  it('warns about unreachable masters with the network error, and about an even count; outcomes carry the network error; no password anywhere', async () => {
    const logger = capture();
    const secret = 'S3cret-pw-xyz';
    const redlock = new Redlock({
      nodes: [set.urls[0], `redis://:${secret}@127.0.0.1:1`],
      restartGuard: false,
      retryCount: 0,
      connectTimeout: 500,
      logger,
    });
    try {
      await redlock.connect();
      expect(logger.text()).toMatch(
        /warn: Master 127\.0\.0\.1:1 is unreachable \(connect ECONNREFUSED 127\.0\.0\.1:1\)/,
      );
      expect(logger.text()).toMatch(/warn: `nodes` lists 2 masters, an even number/);
      const [, down] = redlock.masterStates();
      expect(down).toMatchObject({ label: '127.0.0.1:1', connected: false, trusted: false, distrust: 'unreachable' });
      expect(down.lastError).toContain('ECONNREFUSED 127.0.0.1:1');

      const error = (await rejectionOf(redlock.acquire(resourceName('down'), 1_000))) as LockAcquisitionError;
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect(error.outcomes[1].status).toBe('error');
      expect(error.outcomes[1].error!.message).toContain(
        '127.0.0.1:1 is unreachable: connect ECONNREFUSED 127.0.0.1:1',
      );
      expect(error.message).not.toContain("Stream isn't writeable");
      for (const text of [
        logger.text(),
        error.message,
        String(error),
        error.stack ?? '',
        JSON.stringify(error),
        JSON.stringify(redlock),
        inspect(redlock),
        JSON.stringify(redlock.masterStates()),
      ]) {
        expect(text).not.toContain(secret);
      }
    } finally {
      await redlock.close();
    }
  });

  it('`logger: false` silences the library', async () => {
    const warn = console.warn;
    const error = console.error;
    const printed: unknown[] = [];
    console.warn = (...args: unknown[]) => void printed.push(args);
    console.error = (...args: unknown[]) => void printed.push(args);
    try {
      const redlock = new Redlock({ nodes: [set.urls[0], 'redis://127.0.0.1:1'], logger: false, connectTimeout: 300 });
      await redlock.connect();
      await redlock.close();
      expect(printed).toEqual([]);
      // The default outside Nest prints warnings on the console.
      const noisy = new Redlock({
        nodes: [set.urls[0], 'redis://127.0.0.1:1'],
        restartGuard: false,
        connectTimeout: 300,
      });
      await noisy.connect();
      await noisy.close();
      expect(printed.map(String).join('\n')).toContain('[Redlock] Master 127.0.0.1:1 is unreachable');
    } finally {
      console.warn = warn;
      console.error = error;
    }
  });

  it('refuses a malformed logger, naming the option', () => {
    expect(() => new Redlock({ nodes: set.urls, logger: {} as never })).toThrow(
      expect.objectContaining({ option: 'logger' }),
    );
  });

  it('adds one ready listener to a user-supplied client for twelve instances, none after close(), and no MaxListenersExceededWarning', async () => {
    const mine = new Redis(set.urls[0]);
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      await mine.ping();
      const counts = () => ['ready', 'error', 'close', 'end', 'connect'].map((e) => mine.listenerCount(e));
      const before = counts();
      const redlocks = await Promise.all(
        Array.from({ length: 12 }, () =>
          set.redlock({ nodes: [mine, set.urls[1], set.urls[2]], restartGuard: true, logger: false }),
        ),
      );
      expect(mine.listenerCount('ready')).toBe(before[0] + 1);
      expect(counts().slice(1)).toEqual(before.slice(1));
      // A reconnect reaches every instance through that one listener.
      mine.disconnect(true);
      expect(await waitFor(() => mine.status === 'ready', 3_000)).toBe(true);
      expect(
        await waitFor(
          () => redlocks.every((r) => r.masterStates()[0].distrust === 'fresh' || r.masterStates()[0].trusted),
          3_000,
        ),
      ).toBe(true);
      await Promise.all(redlocks.map((r) => r.close()));
      expect(counts()).toEqual(before);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      mine.disconnect();
    }
  });

  it('a retrying waiter subscribes to its release channel once, however many times it retries', async () => {
    // The holder follows no channel (a holder with pub/sub on follows revocations: one SUBSCRIBE per master).
    const holder = await set.redlock({ logger: false, wakeOnRelease: false });
    const waiter = await set.redlock({ logger: false });
    const resource = resourceName('subscribe-once');
    const subscribeCalls = async (): Promise<number[]> =>
      Promise.all(
        set.clients.map(async (c) =>
          Number(/cmdstat_subscribe:calls=(\d+)/.exec(await c.info('commandstats'))?.[1] ?? 0),
        ),
      );
    const lock = await holder.acquire(resource, 5_000);
    const before = await subscribeCalls();
    const error = await rejectionOf(waiter.acquire(resource, 1_000, { retryCount: 6, retryDelay: 30, retryJitter: 0 }));
    expect((error as LockAcquisitionError).attempts).toBe(7);
    const after = await subscribeCalls();
    expect(after.map((n, i) => n - before[i])).toEqual([1, 1, 1]);
    await lock.release();
  });
});

describe('nodes entries are trimmed and checked, and never leak a password', () => {
  const secret = 'pw-Zq81x';

  /** The error `new Redlock({ nodes })` throws, checked to be a RedlockConfigError. */
  function configErrorOf(nodes: unknown): RedlockConfigError {
    let error: unknown;
    try {
      new Redlock({ nodes: nodes as never, logger: false });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RedlockConfigError);
    return error as RedlockConfigError;
  }

  /** `secret` appears nowhere in `e`: message, toString, stack, JSON or inspect. */
  function expectSecretHidden(e: RedlockConfigError): void {
    for (const text of [e.message, String(e), e.stack ?? '', JSON.stringify(e), inspect(e)])
      expect(text).not.toContain(secret);
  }
  const cases: [string, unknown[], string, RegExp][] = [
    [
      'a malformed http URL with user info',
      [`http://user:${secret}@db.example:6379`],
      'nodes[0]',
      /redis:\/\/ or rediss:\/\//,
    ],
    ['a bad port with a password', [`redis://:${secret}@db.example:99999`], 'nodes[0]', /bad port \("99999"\)/],
    ['an empty entry', ['redis://127.0.0.1:7001', '', 'redis://127.0.0.1:7002'], 'nodes[1]', /is empty.*stray comma/],
    ['only spaces', ['redis://127.0.0.1:7001', '   '], 'nodes[1]', /is empty \(only spaces\)/],
    [
      'two URLs in one entry',
      [`redis://:${secret}@127.0.0.1:7001, redis://127.0.0.1:7002`],
      'nodes[0]',
      /contains a space/,
    ],
    [
      'an option object with a bad port and a password',
      [{ host: 'db.example', port: 70_000, password: secret }],
      'nodes[0]',
      /bad port \(70000\)/,
    ],
    ['an option object with an empty host', [{ host: ' ', password: secret }], 'nodes[0]', /nodes\[0\]\.host/],
    [
      'an option object whose host is a URL with a password',
      [{ host: `redis://:${secret}@db.example`, port: 6379 }],
      'nodes[0]',
      /nodes\[0\]\.host.*not a URL/,
    ],
    [
      'the same master spelled LOCALHOST',
      ['redis://127.0.0.1:7001', `redis://:${secret}@LOCALHOST:7001`],
      'nodes[1]',
      /same master as `nodes\[0\]` \(127\.0\.0\.1:7001\)/,
    ],
    ['the same master spelled 127.1', ['redis://127.0.0.1:7001', 'redis://127.1:7001'], 'nodes[1]', /same master/],
    // Malformed URLs: however the scheme, slashes or user info are mistyped, the password is never shown.
    ['a URL missing its colon', [`redis//:${secret}@db.example:1`], 'nodes[0]', /not a valid URL/],
    ['a URL missing its colon, with a user', [`redis//user:${secret}@db.example:1`], 'nodes[0]', /not a valid URL/],
    ['a URL missing its scheme', [`//:${secret}@db.example:1`], 'nodes[0]', /not a valid URL/],
    ['a URL with one slash', [`redis:/:${secret}@db.example:1`], 'nodes[0]', /names no host/],
    ['a URL with three slashes', [`redis:///:${secret}@db.example:1`], 'nodes[0]', /names no host/],
    ['a password with a slash', [`redis://:${secret}/x@db.example:1`], 'nodes[0]', /./],
    ['a URL that ends at its user info', [`redis://:${secret}@`], 'nodes[0]', /./],
    ['a password with a space', [`redis://:${secret} x@db.example:1`], 'nodes[0]', /contains a space/],
    // ioredis reads every query parameter as an option: `?password=` is a password too.
    [
      'a bad port with a password in the query',
      [`redis://db.example:notaport?password=${secret}`],
      'nodes[0]',
      /bad port/,
    ],
    [
      'a bad port with a password after another query parameter',
      [`redis://db.example:notaport?db=1&password=${encodeURIComponent(secret)}&x`],
      'nodes[0]',
      /bad port/,
    ],
    [
      'a space in a URL with a sentinel password in the query',
      [`redis://db.example:1?sentinelPassword=${secret} x`],
      'nodes[0]',
      /contains a space/,
    ],
    [
      'the same master spelled ::ffff:127.0.0.1',
      ['redis://127.0.0.1:7001', 'redis://[::ffff:127.0.0.1]:7001'],
      'nodes[1]',
      /same master/,
    ],
    [
      'the same master spelled [::1] and localhost',
      ['redis://[0:0:0:0:0:0:0:1]:7001', 'redis://localhost:7001'],
      'nodes[1]',
      /same master/,
    ],
    [
      'the same master as an option object',
      ['redis://127.0.0.1:7001', { host: '127.0.0.1', port: 7001, password: secret }],
      'nodes[1]',
      /same master/,
    ],
  ];
  for (const [name, nodes, option, message] of cases) {
    it(`refuses ${name}, naming ${option}, with no password in message, toString, JSON or stack`, () => {
      const e = configErrorOf(nodes);
      expect(e.option).toBe(option);
      expect(e.message).toMatch(message);
      expectSecretHidden(e);
    });
  }

  it.each([
    `redis://:${secret}@db.example:1`,
    `redis://:${secret}@a:1,redis://:${secret}@b:1`,
    `redis//:${secret}@a:1`,
  ])(
    'refuses `nodes` given as one string (%#: an unsplit environment variable) without showing its password',
    (nodes) => {
      const e = configErrorOf(nodes);
      expect(e.option).toBe('nodes');
      expectSecretHidden(e);
    },
  );

  it('accepts an entry with stray spaces around it (REDLOCK_NODES split on commas)', async () => {
    const redlock = new Redlock({
      nodes: [' redis://127.0.0.1:7001', 'redis://127.0.0.1:7002 ', '\tredis://127.0.0.1:7003'],
      logger: false,
    });
    expect(redlock.masters).toEqual(['127.0.0.1:7001', '127.0.0.1:7002', '127.0.0.1:7003']);
    await redlock.close();
  });
});
