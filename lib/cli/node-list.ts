import { describeNode, parseNodeUrl } from '../backend/node-spec.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { redact, safeDecode, secretsOf } from '../util/redact.js';
import { UsageError } from './usage-error.js';

/** The `--nodes` prefix of a whole Redis Cluster: `cluster:<startup node>+<startup node>+…`. */
export const CLUSTER = 'cluster:';

/** One `--nodes` entry naming a single master: its URL and printable label. */
export interface MasterEntry {
  readonly kind: 'master';
  readonly url: string;
  /** `host:port` as typed (the library spells each address one way: `LOCALHOST` is 127.0.0.1). */
  readonly label: string;
  /** Secrets to scrub from anything printed. */
  readonly secrets: readonly string[];
}

/** One `--nodes` entry naming a whole Redis Cluster (one vote): its startup nodes and credentials. */
export interface ClusterEntry {
  readonly kind: 'cluster';
  readonly startup: readonly { host: string; port: number }[];
  readonly username?: string;
  readonly password?: string;
  readonly tls: boolean;
  /** `cluster:<first startup node>`, as the library labels it. */
  readonly label: string;
  /** Secrets to scrub from anything printed. */
  readonly secrets: readonly string[];
}

/**
 * A `--nodes` entry, checked: a master's redis:// URL, or `cluster:` and its startup nodes.
 *
 * @example
 * const entries = parseNodeList('redis://a:6379,cluster:x1:7000+x2:7000');
 */
export type NodeEntry = MasterEntry | ClusterEntry;

/**
 * The `--nodes` text, or a `UsageError` saying it is required (every command needs the masters).
 *
 * @example
 * const text = requireNodes(values.nodes);
 */
export function requireNodes(text: string | undefined): string {
  if (!text)
    throw new UsageError(
      '--nodes is required: the masters, comma-separated redis:// URLs (a cluster as cluster:host:port+host:port)',
    );
  return text;
}

/**
 * Splits and checks `--nodes` (comma-separated); throws `UsageError` naming `--nodes` for a
 * malformed entry (never printing its password) or an empty list.
 *
 * @example
 * parseNodeList('redis://127.0.0.1:6379,redis://127.0.0.1:6380'); // two MasterEntry
 */
export function parseNodeList(text: string): NodeEntry[] {
  const entries = text
    .split(',')
    .filter(Boolean)
    .map((entry) => entry.trim())
    .map((entry) => (entry.startsWith(CLUSTER) ? parseCluster(entry.slice(CLUSTER.length)) : parseMaster(entry)));
  if (entries.length === 0) throw new UsageError(`--nodes lists no master: ${JSON.stringify(text)}`);
  return entries;
}

/** The library's own checks of an entry (`lib/backend/node-spec.ts`), as bad usage of `--nodes`. */
function checked<T>(parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof RedlockConfigError) throw new UsageError(e.message);
    throw e;
  }
}

// Labels are the host as typed (not the library's one spelling per address): `masters` then shows
// `localhost:6379: same server as 127.0.0.1:6379` for a server listed under two spellings.
function parseMaster(text: string): MasterEntry {
  const { url } = checked(() => parseNodeUrl(text, '--nodes'));
  const parsed = new URL(url);
  const label = `${parsed.hostname}:${parsed.port || 6379}`;
  const secrets = [...secretsOf([url]), parsed.password, safeDecode(parsed.password)].filter((s) => s.length > 0);
  return { kind: 'master', url, label, secrets };
}

/**
 * A whole Redis Cluster, one vote: `spec` lists its startup nodes, `+`-separated, each a redis://
 * URL or `host:port` (credentials and TLS are taken from the first URL that has them).
 */
function parseCluster(spec: string): ClusterEntry {
  const entries = spec
    .split('+')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0)
    throw new UsageError(`--nodes: ${CLUSTER} lists no startup node; give ${CLUSTER}host:port+host:port`);
  const urls = entries.map((entry) => {
    const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(entry) ? entry : `redis://${entry}`;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new UsageError(
        `--nodes: a ${CLUSTER} startup node is not a redis:// URL or host:port: ${shownNode(entry)}`,
      );
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
      throw new UsageError(
        `--nodes: a ${CLUSTER} startup node is not a redis:// URL or host:port: ${shownNode(entry)}`,
      );
    return url;
  });
  const startup = urls.map((u) => ({ host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) }));
  const withAuth = urls.find((u) => u.password || u.username);
  const password = withAuth?.password ? decodeURIComponent(withAuth.password) : undefined;
  const username = withAuth?.username ? decodeURIComponent(withAuth.username) : undefined;
  const secrets = [...secretsOf(entries), ...urls.flatMap((u) => [u.password, safeDecode(u.password)])].filter(
    (s) => s.length > 0,
  );
  checked(() => describeNode({ cluster: startup }, '--nodes')); // the library's checks of each startup node
  const label = `${CLUSTER}${startup[0].host}:${startup[0].port}`;
  return {
    kind: 'cluster',
    startup,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    tls: urls.some((u) => u.protocol === 'rediss:'),
    label,
    secrets,
  };
}

/** A node as the user typed it, for an error message: never its password, however malformed. */
function shownNode(text: string): string {
  return redact(text, secretsOf([text]));
}
