/**
 * Passwords never leave the process: every node, URL or error text the library prints goes through
 * these first.
 */

/**
 * Where user info starts in a node string, however its scheme or slashes are mistyped
 * (`redis://`, `redis//`, `redis:/`, `//`, none), and where it ends: at the last `@`, since a
 * mistyped password may itself hold `/`, `@` or quotes. Leading quotes or brackets are kept.
 */
const USER_INFO = /^([("'`[<{]*(?![("'`[<{])(?:[a-z][a-z0-9+.-]*(?::|(?=\/)))?\/*)(.+)@/is;

/**
 * Query parameters that carry a credential. ioredis copies every query parameter of a node URL into
 * its options, so `redis://host:6379?password=pw` is a password like `redis://:pw@host:6379`.
 */
const SECRET_PARAMS = new Set([
  'password',
  'pass',
  'pwd',
  'auth',
  'username',
  'user',
  'sentinelpassword',
  'sentinelusername',
]);

/** `?password=…` / `&auth=…` in a word: the value runs to the next `&`, `#` or the word's end. */
const SECRET_QUERY = /([?&;]([^=&?#;]+)=)([^&#;]*)/g;

/**
 * Any `…user:pw@host…` in `text` → `…***@host…`: every whitespace-separated word with an `@`
 * loses what comes between its scheme (and slashes) and its last `@`, so a malformed URL such as
 * `redis//:pw@host:1` is redacted like a well-formed one. A credential in the query
 * (`?password=pw`, also `pass`, `auth`, `username`, `sentinelPassword`) becomes `?password=***`.
 *
 * @example
 * redactUrl('bad node "redis//:secret@db:1"'); // 'bad node "redis//***@db:1"'
 * redactUrl('redis://db:x?password=secret'); // 'redis://db:x?password=***'
 */
export function redactUrl(text: string): string {
  return text.replace(/\S+/g, (word) => {
    let out = word.includes('@') ? word.replace(USER_INFO, '$1***@') : word;
    if (out.includes('='))
      out = out.replace(SECRET_QUERY, (all, head: string, name: string) => (isSecretParam(name) ? `${head}***` : all));
    return out;
  });
}

function isSecretParam(name: string): boolean {
  return SECRET_PARAMS.has(safeDecode(name).trim().toLowerCase());
}

/**
 * A text that may quote a node or a connection string, with the given secrets and any user info or
 * query credential removed. Longer secrets are replaced first, so a secret that contains another
 * is replaced whole.
 *
 * @example
 * redact(error.message, secretsOf(nodes));
 */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text;
  // Secrets first: a password with a space would otherwise be split across words by redactUrl.
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) if (s.length >= 1) out = out.split(s).join('***');
  return redactUrl(out);
}

/**
 * The passwords (and user names standing for them) found in a list of nodes, to scrub from any
 * text. A malformed string node yields them too.
 *
 * @example
 * secretsOf(['redis//:secret@db:1']); // ['secret']
 */
export function secretsOf(nodes: readonly unknown[]): string[] {
  const found = new Set<string>();
  const add = (s: string): void => {
    found.add(s).add(safeDecode(s));
    // `redis://:a@b@host`: whichever `@` a reader takes as the end, each piece stays secret.
    for (const piece of s.split('@')) found.add(piece).add(safeDecode(piece));
  };
  for (const node of nodes) {
    if (typeof node === 'string') {
      const info = USER_INFO.exec(node.trim())?.[2];
      if (info) {
        const colon = info.indexOf(':');
        if (colon < 0)
          add(info); // redis://password@host
        else if (colon < info.length - 1) add(info.slice(colon + 1));
      }
      for (const value of queryCredentials(node)) add(value);
    } else if (node !== null && typeof node === 'object') {
      const o = ((node as { options?: unknown }).options ?? node) as Record<string, unknown>;
      if (typeof o.password === 'string' && o.password) found.add(o.password);
      const sentinelPassword = o.sentinelPassword;
      if (typeof sentinelPassword === 'string' && sentinelPassword) found.add(sentinelPassword);
    }
  }
  // Very short secrets would scrub ordinary text; they are still never printed by the library itself.
  return [...found].filter((s) => s.length >= 3).sort((a, b) => b.length - a.length);
}

/** The values of the credential parameters in a node string's query, read tolerantly (no URL parse). */
function queryCredentials(node: string): string[] {
  const query = node.slice(node.indexOf('?') + 1);
  if (query.length === node.length) return [];
  const values: string[] = [];
  for (const pair of query.split(/[&;]/)) {
    const eq = pair.indexOf('=');
    if (eq > 0 && isSecretParam(pair.slice(0, eq))) values.push(pair.slice(eq + 1).split('#')[0]);
  }
  // A value that a space cut (`?password=a b`) is scrubbed whole, and by its first word.
  return values.flatMap((v) => [v, ...v.split(/\s+/)]).filter((v) => v.length > 0);
}

/**
 * `decodeURIComponent`, or the text unchanged when it is not valid percent-encoding.
 *
 * @example
 * safeDecode('p%40ss'); // 'p@ss'
 * safeDecode('100%'); // '100%'
 */
export function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * An error's message (or the value as text) with secrets removed, as {@link redact} does.
 * Duck-typed: Node's network errors may come from another realm (test sandboxes), where instanceof fails.
 *
 * @example
 * redactError(new Error('connect ECONNREFUSED redis://:pw@db:1'), ['pw']); // 'connect ECONNREFUSED redis://***@db:1'
 */
export function redactError(error: unknown, secrets: readonly string[]): string {
  const message = error !== null && typeof error === 'object' ? (error as { message?: unknown }).message : undefined;
  const text = typeof message === 'string' ? message : String(error);
  return redact(text, secrets);
}
