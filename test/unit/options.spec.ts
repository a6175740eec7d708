import { describe, expect, it } from '@jest/globals';
import { RedlockConfigError } from '../../lib/errors/index.js';
import {
  REDLOCK_DEFAULTS,
  checkCallOptions,
  checkTtl,
  resolveOptions,
  resolveRetryOptions,
  type RedlockOptions,
} from '../../lib/options/redlock-options.js';

const nodes = ['redis://127.0.0.1:6379'];

/** The RedlockConfigError thrown by `fn` (fails if it throws something else or nothing). */
function refusal(fn: () => unknown): RedlockConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(RedlockConfigError);
    return error as RedlockConfigError;
  }
  throw new Error('expected a RedlockConfigError, but nothing was thrown');
}

function expectRefused(options: unknown, option: string): void {
  const error = refusal(() => resolveOptions(options as RedlockOptions));
  expect(error.option).toBe(option);
  expect(error.message).toContain(`\`${option}\``);
}

describe('resolveOptions', () => {
  it('fills in the documented defaults', () => {
    expect(resolveOptions({ nodes })).toEqual({
      nodes,
      keyPrefix: 'lock:',
      ttl: 10_000,
      driftFactor: 0.01,
      retryCount: 10,
      retryDelay: 200,
      retryJitter: 100,
      acquireTimeout: undefined,
      commandTimeout: 500,
      connectTimeout: 2_000,
      wakeOnRelease: true,
      restartGuard: { largestTtl: undefined },
      fencing: false,
      fencingPrefix: 'fence:',
      fencingQuorum: 1,
      logger: undefined,
      allowEvictingMasters: false,
    });
    expect(Object.isFrozen(REDLOCK_DEFAULTS)).toBe(true);
  });

  it('keeps the values given', () => {
    const options = {
      nodes,
      keyPrefix: '',
      ttl: 1,
      driftFactor: 0,
      retryCount: Infinity,
      retryDelay: 0,
      retryJitter: 0,
      acquireTimeout: 5_000,
      commandTimeout: 1,
      connectTimeout: 1,
      wakeOnRelease: false,
      restartGuard: false as const,
      fencing: false,
      fencingPrefix: 'counter:',
      fencingQuorum: 1,
      logger: false as const,
      allowEvictingMasters: true,
    };
    expect(resolveOptions(options)).toEqual(options);
  });

  it('accepts retryJitter equal to retryDelay and driftFactor just under 0.5', () => {
    expect(resolveOptions({ nodes, retryDelay: 50, retryJitter: 50, driftFactor: 0.49 })).toMatchObject({
      retryJitter: 50,
      driftFactor: 0.49,
    });
  });

  it.each([null, undefined, 'redis://x', 42])('refuses options %p (option `options`)', (options) => {
    expectRefused(options, 'options');
  });

  it.each([[[]], [undefined], ['redis://127.0.0.1:6379'], [{}]])('refuses nodes %p (option `nodes`)', (value) => {
    expectRefused({ nodes: value }, 'nodes');
  });

  it('refuses an option it does not know (a typo would otherwise be ignored), naming it and the closest option', () => {
    expectRefused({ nodes, tll: 5_000 }, 'tll');
    expect(refusal(() => resolveOptions({ nodes, tll: 5_000 } as RedlockOptions)).message).toContain(
      'did you mean `ttl`?',
    );
    expect(refusal(() => resolveOptions({ nodes, retryCont: 3 } as RedlockOptions)).message).toContain(
      'did you mean `retryCount`?',
    );
    expect(refusal(() => resolveOptions({ nodes, redisUrl: 'x' } as RedlockOptions)).message).not.toContain(
      'did you mean',
    );
    // isGlobal goes with the module's options; a factory may return it beside them
    expect(() => resolveOptions({ nodes, isGlobal: true } as RedlockOptions)).not.toThrow();
  });

  it('refuses a per-call option it does not know, naming it and the closest one', () => {
    const typo = refusal(() => checkCallOptions({ retryCont: 0 } as never));
    expect(typo.option).toBe('retryCont');
    expect(typo.message).toContain('did you mean `retryCount`?');
    expect(refusal(() => checkCallOptions({ minhold: 500 } as never)).message).toContain('did you mean `minHold`?');
    // a module option is not a per-call one
    expect(refusal(() => checkCallOptions({ keyPrefix: 'x:' } as never)).option).toBe('keyPrefix');
    // every per-call option of acquire, using, lead and @Locked passes
    expect(() =>
      checkCallOptions({
        signal: new AbortController().signal,
        autoExtend: true,
        fencing: false,
        ttl: 1_000,
        retryCount: 1,
        retryDelay: 10,
        retryJitter: 5,
        acquireTimeout: 100,
        mode: 'read',
        limit: 2,
        onBusy: 'skip',
        minHold: 10,
        maxHold: 100,
      } as never),
    ).not.toThrow();
  });

  it('refuses a non-string keyPrefix', () => {
    expectRefused({ nodes, keyPrefix: 5 }, 'keyPrefix');
  });

  it.each([0, -1, 1.5, NaN, Infinity, '1000', 2 ** 53])('refuses ttl %p', (ttl) => {
    expectRefused({ nodes, ttl }, 'ttl');
  });

  it.each([-0.01, 0.5, 0.6, NaN, Infinity, '0.01'])('refuses driftFactor %p', (driftFactor) => {
    expectRefused({ nodes, driftFactor }, 'driftFactor');
  });

  it.each([0, -5, 2.5, NaN])('refuses commandTimeout %p', (commandTimeout) => {
    expectRefused({ nodes, commandTimeout }, 'commandTimeout');
  });

  it.each([0, -5, 2.5, Infinity])('refuses connectTimeout %p', (connectTimeout) => {
    expectRefused({ nodes, connectTimeout }, 'connectTimeout');
  });

  it.each([-1, 1.5, NaN, -Infinity, '3'])(
    'refuses retryCount %p (Infinity is the way to retry forever)',
    (retryCount) => {
      expectRefused({ nodes, retryCount }, 'retryCount');
    },
  );

  it('refuses retryCount -1 with a message that points to Infinity', () => {
    expect(refusal(() => resolveOptions({ nodes, retryCount: -1 })).message).toContain('Infinity');
  });

  it.each([-1, 0.5, NaN, Infinity])('refuses retryDelay %p', (retryDelay) => {
    expectRefused({ nodes, retryDelay, retryJitter: 0 }, 'retryDelay');
  });

  it.each([-1, 0.5, NaN])('refuses retryJitter %p', (retryJitter) => {
    expectRefused({ nodes, retryJitter }, 'retryJitter');
  });

  it('refuses retryJitter greater than retryDelay', () => {
    expectRefused({ nodes, retryDelay: 100, retryJitter: 101 }, 'retryJitter');
  });

  it.each([0, -1, 1.5, NaN, Infinity])('refuses acquireTimeout %p', (acquireTimeout) => {
    expectRefused({ nodes, acquireTimeout }, 'acquireTimeout');
  });
});

describe('resolveRetryOptions (per-call overrides)', () => {
  const base = { retryCount: 10, retryDelay: 200, retryJitter: 100, acquireTimeout: undefined };

  it('merges the overrides over the base, ignoring undefined ones', () => {
    expect(resolveRetryOptions(base, { retryCount: 0, retryDelay: undefined, acquireTimeout: 300 })).toEqual({
      retryCount: 0,
      retryDelay: 200,
      retryJitter: 100,
      acquireTimeout: 300,
    });
    expect(resolveRetryOptions(base, undefined)).toEqual(base);
  });

  it('does not modify the base', () => {
    const copy = { ...base };
    resolveRetryOptions(base, { retryCount: 1 });
    expect(base).toEqual(copy);
  });

  it('checks the merged result: a lowered retryDelay below a base retryJitter the user set is refused naming retryJitter', () => {
    const error = refusal(() => resolveRetryOptions({ ...base, retryJitter: 150 }, { retryDelay: 50 }));
    expect(error.option).toBe('retryJitter');
  });

  it('a base retryJitter that is the default (half the base delay) follows a lowered retryDelay', () => {
    expect(resolveRetryOptions(base, { retryDelay: 50 })).toMatchObject({ retryDelay: 50, retryJitter: 25 });
  });

  it('refuses a bad per-call retryCount naming it', () => {
    expect(refusal(() => resolveRetryOptions(base, { retryCount: -1 })).option).toBe('retryCount');
  });
});

describe('checkTtl', () => {
  it('returns a positive safe integer unchanged', () => {
    expect(checkTtl(1)).toBe(1);
    expect(checkTtl(30_000)).toBe(30_000);
  });

  it('names the option it is given', () => {
    expect(refusal(() => checkTtl(0, 'acquireTimeout')).option).toBe('acquireTimeout');
    expect(refusal(() => checkTtl(-3)).option).toBe('ttl');
  });
});
