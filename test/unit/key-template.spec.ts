import { describe, expect, it } from '@jest/globals';
import { compileLockKey, type LockKey } from '../../lib/lock/key-template.js';
import { parameterNamesOf, type ParameterList } from '../../lib/lock/parameter-names.js';
import { LockKeyError } from '../../lib/errors/index.js';

const WHERE = 'OrderService.pay';
const params = (...names: (string | undefined)[]): ParameterList => ({ names, open: false });

/** Compiles `key` against `names` and resolves it with `args`. */
const resolve = (key: LockKey, names: ParameterList, ...args: unknown[]): string[] =>
  compileLockKey(key, names, WHERE)(args);

/** The LockKeyError thrown by `fn` (fails if it throws something else or nothing). */
function keyError(fn: () => unknown): LockKeyError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LockKeyError);
    return error as LockKeyError;
  }
  throw new Error('expected a LockKeyError, but nothing was thrown');
}

describe('compileLockKey: templates', () => {
  it('#name is a parameter by name', () => {
    expect(resolve('order:#id', params('id', 'amount'), 'A1', 5)).toEqual(['order:A1']);
    expect(resolve('order:#amount', params('id', 'amount'), 'A1', 5)).toEqual(['order:5']);
  });

  it('#0 is a parameter by position', () => {
    expect(resolve('order:#1/#0', params('id', 'amount'), 'A1', 5)).toEqual(['order:5/A1']);
  });

  it('#name.a.b is a property path', () => {
    expect(resolve('cart:#dto.cart.id', params('dto'), { cart: { id: 'c-9' } })).toEqual(['cart:c-9']);
    expect(resolve('cart:#0.cart.id', params('dto'), { cart: { id: 'c-9' } })).toEqual(['cart:c-9']);
    expect(resolve('row:#rows.1', params('rows'), ['x', 'y'])).toEqual(['row:y']);
  });

  it('a template without placeholders is used as it is', () => {
    expect(resolve('nightly-report', params())).toEqual(['nightly-report']);
  });

  it('several placeholders in one template', () => {
    expect(resolve('transfer:#from->#to', params('from', 'to'), 'a', 'b')).toEqual(['transfer:a->b']);
  });

  it('an array of templates names several resources', () => {
    expect(resolve(['account:#from', 'account:#to'], params('from', 'to', 'amount'), 'a', 'b', 10)).toEqual([
      'account:a',
      'account:b',
    ]);
  });

  it("'##' is a literal '#', never a placeholder", () => {
    expect(resolve('tag##1', params())).toEqual(['tag#1']);
    expect(resolve('a##id', params('id'), 'X')).toEqual(['a#id']);
    expect(resolve('##', params())).toEqual(['#']);
    expect(resolve('####', params())).toEqual(['##']);
    expect(resolve('x###id', params('id'), 'X')).toEqual(['x#X']);
  });

  it('a # that starts no placeholder is literal text', () => {
    expect(resolve('a#-b#', params('id'))).toEqual(['a#-b#']);
  });

  it('numbers, bigints and booleans are accepted', () => {
    expect(resolve('n:#0', params('v'), 42)).toEqual(['n:42']);
    expect(resolve('n:#0', params('v'), 0)).toEqual(['n:0']);
    expect(resolve('n:#0', params('v'), 10n)).toEqual(['n:10']);
    expect(resolve('b:#0', params('v'), false)).toEqual(['b:false']);
    expect(resolve('b:#0', params('v'), true)).toEqual(['b:true']);
  });

  it('works with the names read from a real method', () => {
    class OrderService {
      pay(orderId: string, amount: number): number {
        return amount + orderId.length;
      }
    }
    const names = parameterNamesOf(OrderService.prototype.pay);
    expect(resolve('order:#orderId:#1', names, 'o-1', 7)).toEqual(['order:o-1:7']);
  });
});

describe('compileLockKey: refusals at decoration time', () => {
  it('refuses an unknown name, naming Class.method and the placeholder', () => {
    const error = keyError(() => compileLockKey('order:#orderId', params('id', 'amount'), WHERE));
    expect(error.message).toContain(WHERE);
    expect(error.message).toContain('#orderId');
  });

  it('refuses a name that only a destructured parameter could have had', () => {
    const error = keyError(() => compileLockKey('order:#id', params(undefined), WHERE));
    expect(error.message).toContain('#id');
    expect(error.message).toContain(WHERE);
  });

  it('refuses an unknown name in any template of an array', () => {
    const error = keyError(() => compileLockKey(['a:#id', 'b:#nope'], params('id'), WHERE));
    expect(error.message).toContain('#nope');
  });

  it('refuses a position past the last parameter, naming Class.method and the placeholder', () => {
    const error = keyError(() => compileLockKey('order:#2', params('id', 'amount'), WHERE));
    expect(error.message).toContain(WHERE);
    expect(error.message).toContain('#2');
  });

  it('accepts a position past the last named parameter when there is a rest parameter', () => {
    const resolver = compileLockKey('order:#3', { names: ['id', 'rest'], open: true }, WHERE);
    expect(resolver(['a', 'b', 'c', 'd'])).toEqual(['order:d']);
  });

  it('refuses an empty template and an empty array of templates', () => {
    keyError(() => compileLockKey('', params(), WHERE));
    keyError(() => compileLockKey([], params(), WHERE));
  });
});

describe('compileLockKey: bad values at call time are a LockKeyError (never "order:undefined")', () => {
  const resolver = compileLockKey('order:#id', params('id'), WHERE);

  it.each([
    ['undefined', undefined],
    ['null', null],
    ['an object', { id: 1 }],
    ['an array', ['a']],
    ['an empty string', ''],
    ['a function', () => 'x'],
    ['a symbol', Symbol('s')],
    ['NaN', NaN],
    ['Infinity', Infinity],
  ])('%s', (_, value) => {
    const error = keyError(() => resolver([value]));
    expect(error.message).toContain('#id');
    expect(error.message).toContain(WHERE);
  });

  it('a missing argument is undefined, so refused', () => {
    keyError(() => resolver([]));
  });

  it('a property path through undefined or null is refused', () => {
    const path = compileLockKey('cart:#dto.cart.id', params('dto'), WHERE);
    keyError(() => path([undefined]));
    keyError(() => path([{ cart: null }]));
    keyError(() => path([{ cart: {} }]));
  });

  it('the compiled resolver is reusable: one bad call does not affect the next', () => {
    keyError(() => resolver([undefined]));
    expect(resolver(['ok'])).toEqual(['order:ok']);
  });
});

describe('compileLockKey: key functions', () => {
  it('receives the arguments and may return a string', () => {
    expect(resolve((id: string, n: number) => `order:${id}:${n}`, params(), 'a', 2)).toEqual(['order:a:2']);
  });

  it('may return an array of names (copied)', () => {
    const names = ['a', 'b'];
    const out = resolve(() => names, params());
    expect(out).toEqual(['a', 'b']);
    expect(out).not.toBe(names);
  });

  it.each([
    ['an empty string', ''],
    ['an empty array', []],
    ['an array with an empty name', ['a', '']],
    ['an array with a non-string', ['a', 1]],
    ['undefined', undefined],
    ['a number', 5],
  ])('returning %s is a LockKeyError naming Class.method', (_, produced) => {
    const error = keyError(() => resolve((() => produced) as unknown as LockKey, params()));
    expect(error.message).toContain(WHERE);
  });

  it("does not interpret '#' in what it returns", () => {
    expect(resolve(() => 'tag#id', params('id'))).toEqual(['tag#id']);
  });
});
