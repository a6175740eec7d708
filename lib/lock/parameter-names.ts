/**
 * Reads a function's parameter names from its source text, at decoration time, so that key templates
 * can say `#id` instead of `#0`. Destructured parameters have no name (use their position); a rest
 * parameter is reported so that positions past it are accepted.
 */
export interface ParameterList {
  /** Names by position; `undefined` for a destructured parameter. */
  readonly names: readonly (string | undefined)[];
  /** True when the last parameter is `...rest`, or the source could not be read. */
  readonly open: boolean;
}

/** Splits the text between the first `(` and its matching `)` at top-level commas. */
function topLevelParameters(source: string): string[] | undefined {
  const start = source.indexOf('(');
  if (start < 0) return undefined;
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (let i = start + 1; i < source.length; i++) {
    const c = source[i];
    if (c === '"' || c === "'" || c === '`') {
      const end = skipString(source, i);
      current += source.slice(i, end);
      i = end - 1;
    } else if (c === '/' && (source[i + 1] === '/' || source[i + 1] === '*')) {
      const end = source[i + 1] === '/' ? source.indexOf('\n', i) : source.indexOf('*/', i) + 2;
      i = (end <= 1 || end < i ? source.length : end) - 1;
    } else if (c === '(' || c === '[' || c === '{') {
      depth++;
      current += c;
    } else if (c === ')' && depth === 0) {
      if (current.trim()) parts.push(current.trim());
      return parts;
    } else if (c === ')' || c === ']' || c === '}') {
      depth--;
      current += c;
    } else if (c === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += c;
  }
  return undefined;
}

function skipString(source: string, start: number): number {
  const quote = source[start];
  for (let i = start + 1; i < source.length; i++) {
    if (source[i] === '\\') i++;
    else if (source[i] === quote) return i + 1;
  }
  return source.length;
}

/** The parameter names of `fn`, read from its source. */
export function parameterNamesOf(fn: (...args: never[]) => unknown): ParameterList {
  const source = Function.prototype.toString.call(fn);
  const params = /\{\s*\[native code\]\s*\}\s*$/.test(source) ? undefined : topLevelParameters(source);
  if (!params) return { names: [], open: true }; // bound or native: positions only, none refused
  const names: (string | undefined)[] = [];
  let open = false;
  for (const param of params) {
    const rest = param.startsWith('...');
    const text = rest ? param.slice(3).trim() : param;
    const name = /^[A-Za-z_$][\w$]*/.exec(text)?.[0];
    names.push(name);
    if (rest) open = true;
  }
  return { names, open };
}
