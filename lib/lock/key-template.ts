import { LockKeyError } from '../errors/lock-key.error.js';
import type { ParameterList } from './parameter-names.js';

/**
 * What names the resources of a `@Locked` method:
 * - a template such as `'order:#id'`: `#name` is a parameter by name, `#0` by position, `#name.a.b`
 *   a property path, and `##` a literal `#`;
 * - an array of templates, to lock several resources at once;
 * - a function `(...args) => string | string[]` that receives the method's arguments.
 *
 * @example
 * \@Locked('order:#id') pay(id: string) {}
 * \@Locked(['account:#from', 'account:#to']) transfer(from: string, to: string, amount: number) {}
 * \@Locked('cart:#dto.cartId') checkout(dto: CheckoutDto) {}
 * \@Locked((user: User) => `user:${user.id}`) rename(user: User) {}
 * @publicApi
 */
export type LockKey = string | readonly string[] | ((...args: any[]) => string | readonly string[]);

/** Turns the method's arguments into resource names. */
export type ResourceResolver = (args: readonly unknown[]) => string[];

const PLACEHOLDER = /##|#([A-Za-z_$][\w$]*|\d+)((?:\.[A-Za-z_$][\w$]*|\.\d+)*)/g;

type Piece = string | { readonly index: number; readonly path: readonly string[]; readonly text: string };

function compileTemplate(template: string, params: ParameterList, where: string): Piece[] {
  if (typeof template !== 'string' || template.length === 0) {
    throw new LockKeyError(`@Locked on ${where}: a key template must be a non-empty string.`);
  }
  const pieces: Piece[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    pieces.push(template.slice(last, match.index));
    last = match.index + match[0].length;
    if (match[0] === '##') {
      pieces.push('#');
      continue;
    }
    const [text, head, tail] = match;
    let index: number;
    if (/^\d+$/.test(head)) {
      index = Number(head);
      if (index >= params.names.length && !params.open) {
        throw new LockKeyError(
          `@Locked('${template}') on ${where}: placeholder ${text} refers to argument ${index}, but the method takes ${params.names.length}.`,
        );
      }
    } else {
      index = params.names.indexOf(head);
      if (index < 0) {
        const known =
          params.names
            .filter(Boolean)
            .map((n) => `#${n}`)
            .join(', ') || 'none';
        throw new LockKeyError(
          `@Locked('${template}') on ${where}: placeholder #${head} names no parameter (parameters by name: ${known}). Use a position such as #0, or a key function.`,
        );
      }
    }
    pieces.push({ index, path: tail ? tail.slice(1).split('.') : [], text });
  }
  pieces.push(template.slice(last));
  return pieces.filter((p) => p !== '');
}

function valueAt(args: readonly unknown[], piece: Exclude<Piece, string>, template: string, where: string): string {
  let value: unknown = args[piece.index];
  for (const step of piece.path) {
    if (value === null || value === undefined) break;
    value = (value as Record<string, unknown>)[step];
  }
  const kind = value === null ? 'null' : typeof value;
  if (kind === 'string' || kind === 'bigint' || kind === 'boolean' || (kind === 'number' && Number.isFinite(value))) {
    const text = String(value);
    if (text.length > 0) return text;
  }
  const what =
    kind === 'string'
      ? 'an empty string'
      : kind === 'object' || kind === 'function'
        ? `an ${kind}`
        : kind === 'number'
          ? String(value)
          : kind;
  throw new LockKeyError(
    `@Locked('${template}') on ${where}: placeholder ${piece.text} is ${what} at call time; nothing was locked.`,
  );
}

/**
 * Compiles a `LockKey` once, at decoration time. Unknown placeholder names are refused now, naming
 * `where` (Class.method) and the placeholder; bad values at call time throw `LockKeyError`.
 */
export function compileLockKey(key: LockKey, params: ParameterList, where: string): ResourceResolver {
  if (typeof key === 'function') {
    return (args) => {
      const produced = key(...args);
      const list = typeof produced === 'string' ? [produced] : produced;
      if (!Array.isArray(list) || list.length === 0 || list.some((r) => typeof r !== 'string' || r.length === 0)) {
        throw new LockKeyError(
          `@Locked on ${where}: the key function returned no usable resource name (${JSON.stringify(produced)}); nothing was locked.`,
        );
      }
      return [...list];
    };
  }
  const templates = typeof key === 'string' ? [key] : key;
  if (!Array.isArray(templates) || templates.length === 0) {
    throw new LockKeyError(
      `@Locked on ${where}: the key must be a template string, a non-empty array of them, or a function.`,
    );
  }
  const compiled = templates.map((t) => ({ template: t, pieces: compileTemplate(t, params, where) }));
  return (args) =>
    compiled.map(({ template, pieces }) => {
      let out = '';
      for (const p of pieces) out += typeof p === 'string' ? p : valueAt(args, p, template, where);
      return out;
    });
}
