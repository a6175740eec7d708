/**
 * Passwords never leave the process: every node, URL or error text the library prints goes through
 * these first.
 */

/** `scheme://user:pw@host…` → `scheme://***@host…`; also bare `user:pw@host` forms. */
export function redactUrl(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1***@')
    .replace(/(^|[\s"'(])[^\s/@"'(:]*:[^\s/@"']*@(?=[^\s@]+)/g, '$1***@');
}

/** A text that may quote a node or a connection string, with any user info removed. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = redactUrl(text);
  for (const s of secrets) if (s.length >= 1) out = out.split(s).join('***');
  return out;
}

/** The passwords (and user names with them) found in a list of nodes, to scrub from any text. */
export function secretsOf(nodes: readonly unknown[]): string[] {
  const found = new Set<string>();
  for (const node of nodes) {
    if (typeof node === 'string') {
      const m = /^[a-z][a-z0-9+.-]*:\/\/([^/@]*)@/i.exec(node.trim());
      if (m) {
        const [user, pw] = m[1].split(':', 2);
        if (pw) found.add(pw).add(safeDecode(pw));
        else if (user && !m[1].includes(':')) found.add(user).add(safeDecode(user)); // redis://password@host
      }
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

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
