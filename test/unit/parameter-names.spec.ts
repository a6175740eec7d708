import { describe, expect, it } from '@jest/globals';
import { parameterNamesOf } from '../../lib/lock/parameter-names.js';

type AnyFn = (...args: never[]) => unknown;

/**
 * A function from exact source text (indirect eval), so that the parser sees what a runtime would,
 * independent of how ts-jest transpiles this file.
 */
const fromSource = (source: string): AnyFn => (0, eval)(`(${source})`) as AnyFn;

describe('parameterNamesOf', () => {
  it('reads plain parameters', () => {
    expect(parameterNamesOf(fromSource('function pay(id, amount) {}'))).toEqual({
      names: ['id', 'amount'],
      open: false,
    });
  });

  it('reads no parameters as an empty, closed list', () => {
    expect(parameterNamesOf(fromSource('function run() {}'))).toEqual({ names: [], open: false });
  });

  it('reads the parameters of a TypeScript class method as compiled by the test toolchain', () => {
    class OrderService {
      pay(id: string, amount: number, currency = 'EUR'): string {
        return `${id}${amount}${currency}`;
      }
    }
    expect(parameterNamesOf(OrderService.prototype.pay as AnyFn)).toEqual({
      names: ['id', 'amount', 'currency'],
      open: false,
    });
  });

  it('is not fooled by default values containing commas, parentheses, brackets and strings', () => {
    const fn = fromSource(
      'function f(a = g(1, 2), b = \'x, y)\', c = "q\\"(,", d = `t, ${h(3, 4)}`, e = [1, 2], f = { k: (1, 2) }, last) {}',
    );
    expect(parameterNamesOf(fn)).toEqual({ names: ['a', 'b', 'c', 'd', 'e', 'f', 'last'], open: false });
  });

  it('gives no name to destructured parameters, keeping positions', () => {
    const fn = fromSource('function f({ a, b }, [c, d], { e } = { e: 1 }, named) {}');
    expect(parameterNamesOf(fn)).toEqual({ names: [undefined, undefined, undefined, 'named'], open: false });
  });

  it('reports a rest parameter as open, with its name', () => {
    expect(parameterNamesOf(fromSource('function f(a, ...rest) {}'))).toEqual({ names: ['a', 'rest'], open: true });
    expect(parameterNamesOf(fromSource('(...args) => args'))).toEqual({ names: ['args'], open: true });
  });

  it.each([
    ['an async method', '(class { async pay(id, amount) {} }).prototype.pay'],
    ['a static async method', '(class { static async pay(id, amount) {} }).pay'],
    ['an async function', '(async function pay(id, amount) {})'],
    ['an async arrow', '(async (id, amount) => id)'],
    ['a generator method', '(class { *pay(id, amount) {} }).prototype.pay'],
    ['an async generator method', '(class { async *pay(id, amount) {} }).prototype.pay'],
  ])('reads %s', (_, source) => {
    expect(parameterNamesOf((0, eval)(source) as AnyFn)).toEqual({ names: ['id', 'amount'], open: false });
  });

  it('skips block and line comments in the parameter list', () => {
    const fn = fromSource("function f(/* first, (not a name) */ a /* ) */, // b, c ) 'x\n  b = 1 /* , d */,\n  c) {}");
    expect(parameterNamesOf(fn)).toEqual({ names: ['a', 'b', 'c'], open: false });
  });

  it('reads a method whose parameters are spread over several lines with trailing comma', () => {
    const fn = fromSource('function f(\n  first,\n  second,\n) {}');
    expect(parameterNamesOf(fn)).toEqual({ names: ['first', 'second'], open: false });
  });

  it('reports a function whose source cannot be read (bound: "[native code]") as open, not as taking no arguments', () => {
    // A method replaced by another decorator with a bound function has no readable parameter list.
    // Claiming "0 parameters, closed" makes `@Locked('job:#0')` fail at decoration ("the method takes 0").
    function original(this: unknown, id: string): string {
      return id;
    }
    const bound = original.bind(null) as AnyFn;
    expect(Function.prototype.toString.call(bound)).toContain('[native code]');
    expect(parameterNamesOf(bound).open).toBe(true);
  });
});
