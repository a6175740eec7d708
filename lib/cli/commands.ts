import { parseArgs } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { driftOf } from '../util/clock.js';
import { clusterInfo } from '../backend/cluster/cluster-probe.js';
import { lockKeyOfClusterStem } from '../backend/cluster/cluster-keys.js';
import { inspectResource, type LockInspection, type MasterHolding } from '../inspect/inspect.js';
import type { Master } from '../backend/master.js';
import { REDLOCK_DEFAULTS } from '../options/redlock-options.js';
import { redact, redactUrl } from '../util/redact.js';
import { quorumOf } from '../errors/outcomes.js';
import { parseNodeList, type ClusterEntry, type MasterEntry } from './node-list.js';
import { RUN_OPTIONS, runUnderLock } from './run-command.js';
import { RELEASE_OPTIONS, releaseForced } from './release-command.js';
import { UsageError } from './usage-error.js';

const USAGE = `Usage:
  nestjs-quorum-lock inspect --nodes redis://a:6379,redis://b:6379,redis://c:6379 [--prefix lock:] [--fencing-prefix fence:] [--json] [--limit 1000] [pattern]
  nestjs-quorum-lock masters --nodes redis://a:6379,redis://b:6379,redis://c:6379 [--ttl 10000] [--json]
  nestjs-quorum-lock run --nodes redis://a:6379,redis://b:6379,redis://c:6379 --resource R [--ttl 10000] [--wait] [--wait-timeout ms] [--owner text] [--grace 5000] [--prefix lock:] -- <command> [args…]
  nestjs-quorum-lock release <resource> --force --nodes redis://a:6379,redis://b:6379,redis://c:6379 [--reason text] [--prefix lock:]

--nodes  comma-separated nodes, each one vote: a master's redis:// URL, or a whole Redis Cluster as
         cluster:<startup node>+<startup node>+... (each a redis:// URL or host:port), e.g.
         --nodes cluster:redis://x1:7000+redis://x2:7000,cluster:y1:7000,cluster:z1:7000
inspect  lists the locks held under the prefix (SCAN, never KEYS): per-master agreement, the
         conservative time left, fencing counters. pattern is a glob on the resource (default *).
         Read-write locks show one row per reader (STATE read); counting locks one row per
         held permit slot (STATE permit i/limit). A cluster is scanned on every shard primary.
masters  shows each master (a cluster as one row: its youngest shard, every shard a primary): reachable, role, uptime, whether the restart guard would count it for
         locks up to --ttl ms, and its maxmemory-policy (anything but noeviction can drop a lock).
run      acquires the lock R (key <prefix>R), runs the command with inherited stdio while renewing
         the lock every third of --ttl ms, and releases it when the command exits. --wait waits
         for a busy lock (up to --wait-timeout ms, which implies --wait); without it a busy lock
         exits 75. When the lock is lost the command gets SIGTERM, then SIGKILL after --grace ms
         (default 5000), and run exits 1. SIGINT, SIGTERM and SIGHUP are passed on to the command.
         --owner (at most 256 characters, one line) names the holder, shown by inspect and
         in the message of a run refused with 75 (default <hostname>:<pid>).
release  with --force: revokes the lock on <resource> whoever holds it. Its keys are removed on
         every master (every reader or permit holder too); the holder's process sees its lock
         lost (reason revoked, with --reason as detail) and the next waiter gets it.
inspect and masters are read-only: they write nothing. Passwords in URLs are never printed.

Exit codes: 0 ok; 1 fewer than a quorum of masters reachable (inspect) or counting for locks
(masters: reachable, a master, past the restart guard for --ttl, noeviction, not the same server as
an earlier node); 2 bad usage.
run: the command's exit code (128 + signo when a signal killed it); 75 the lock is held elsewhere
(without --wait, or past --wait-timeout); 1 the lock was lost while the command ran, or no quorum
of masters; 2 bad usage; 127 the command was not found.
release --force: 0 a holder was removed; 1 nothing was held (or too few masters answered); 2 bad usage.`;

/** A node given on the command line (a master, or a whole cluster: one vote): its printable label and a client. */
interface Node {
  readonly label: string;
  /** The connection; for a cluster the ioredis `Cluster` (same command API), also in `cluster`. */
  readonly client: Redis;
  readonly cluster?: Cluster;
  /** Secrets to scrub from anything printed. */
  readonly secrets: readonly string[];
  /** The last connection error (ioredis reports a refused connection as "Connection is closed"). */
  lastError: Error | undefined;
}

function openNode(entry: MasterEntry, timeout: number): Node {
  const client = new Redis(entry.url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: timeout,
    commandTimeout: timeout,
    retryStrategy: () => null,
  });
  const node = { label: entry.label, client, secrets: entry.secrets, lastError: undefined as Error | undefined };
  client.on('error', (e: Error) => (node.lastError = e));
  return node;
}

/** A whole Redis Cluster, one vote. */
function openCluster(entry: ClusterEntry, timeout: number): Node {
  const cluster = new Cluster([...entry.startup], {
    lazyConnect: true,
    enableOfflineQueue: false,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: timeout,
    redisOptions: {
      connectTimeout: timeout,
      commandTimeout: timeout,
      maxRetriesPerRequest: 0,
      ...(entry.username ? { username: entry.username } : {}),
      ...(entry.password ? { password: entry.password } : {}),
      ...(entry.tls ? { tls: {} } : {}),
    },
  });
  const node: Node = {
    label: entry.label,
    client: cluster as unknown as Redis,
    cluster,
    secrets: entry.secrets,
    lastError: undefined,
  };
  cluster.on('error', (e: Error) => (node.lastError = e));
  return node;
}

function scrub(text: string, nodes: readonly Node[]): string {
  return redact(
    text,
    nodes.flatMap((n) => n.secrets),
  );
}

async function connectAll(nodes: readonly Node[]): Promise<(Error | undefined)[]> {
  return Promise.all(
    nodes.map((n) =>
      n.client.connect().then(
        () => undefined,
        (e: unknown) => n.lastError ?? (e instanceof Error ? e : new Error(String(e))),
      ),
    ),
  );
}

/**
 * Every lock key matching `match` on one master, by SCAN (never KEYS), up to `limit`: strings
 * (exclusive locks, permit slots, limit records) and sorted sets (readers of read-write locks).
 */
async function scanKeys(client: Redis, match: string, limit: number): Promise<string[]> {
  const found: string[] = [];
  for (const type of ['string', 'zset']) {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', match, 'COUNT', 1000, 'TYPE', type);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0' && found.length < limit);
  }
  return found.slice(0, limit);
}

/** The keys a counting or read-write lock keeps beside its own: `:permit:<i>`, `:limit`, `:writer-waiting`. */
const SHARED_SUFFIX = /:(?:permit:\d+|limit|writer-waiting)$/;

/** True when the view shows anything held or waiting on some master. */
const occupied = (v: LockInspection): boolean =>
  v.agreeing > 0 ||
  v.readers.length > 0 ||
  v.writerWaiting ||
  v.permits !== undefined ||
  v.masters.some((m) => m.writerWaiting);

function table(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return (
    rows
      .map((r) =>
        r
          .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c])))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

const short = (value: string | null): string =>
  value === null ? '-' : value.length > 8 ? `${value.slice(0, 8)}…` : value;

/** The OWNER column: the holder's `owner` option, cut to 32 characters (`--json` has it whole); '-' when none. */
const ownerCell = (owner: string | null | undefined): string =>
  owner === null || owner === undefined || owner === '' ? '-' : owner.length > 32 ? `${owner.slice(0, 32)}…` : owner;

function formatMs(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

interface Output {
  write(text: string): unknown;
}

/**
 * Runs the CLI; resolves to the exit code: 0 ok; 1 below a quorum of reachable masters (`inspect`)
 * or of masters whose votes would count for a lock now (`masters`); 2 bad usage.
 */
export async function runCli(argv: readonly string[], out: Output, err: Output = process.stderr): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        nodes: { type: 'string' },
        prefix: { type: 'string', default: REDLOCK_DEFAULTS.keyPrefix },
        'fencing-prefix': { type: 'string', default: REDLOCK_DEFAULTS.fencingPrefix },
        ttl: { type: 'string', default: String(REDLOCK_DEFAULTS.ttl) },
        limit: { type: 'string', default: '1000' },
        timeout: { type: 'string', default: '2000' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        ...RUN_OPTIONS,
        ...RELEASE_OPTIONS,
      },
      tokens: true,
    });
  } catch (e) {
    err.write(`${redactUrl((e as Error).message)}\n\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals, tokens } = parsed;
  const [command, pattern = '*', ...extra] = positionals;
  if (values.help || command === undefined || command === 'help') {
    (values.help || command === 'help' ? out : err).write(`${USAGE}\n`);
    return values.help || command === 'help' ? 0 : 2;
  }
  if (command === 'run' || Object.keys(RUN_OPTIONS).some((name) => name in values))
    try {
      if (command !== 'run')
        throw new UsageError(`--${Object.keys(RUN_OPTIONS).find((name) => name in values)} is an option of run only`);
      const terminator = tokens.find((t) => t.kind === 'option-terminator');
      const child = terminator ? argv.slice(terminator.index + 1) : [];
      return await runUnderLock(
        {
          ...values,
          waitTimeout: values['wait-timeout'],
          stray: positionals.slice(1, positionals.length - child.length),
          command: child,
        },
        err,
      );
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      err.write(`nestjs-quorum-lock: ${redactUrl(e.message)}\n\n${USAGE}\n`);
      return 2;
    }
  if (command === 'release' || Object.keys(RELEASE_OPTIONS).some((name) => name in values))
    try {
      if (command !== 'release')
        throw new UsageError(
          `--${Object.keys(RELEASE_OPTIONS).find((name) => name in values)} is an option of release only`,
        );
      return await releaseForced({ ...values, positionals: positionals.slice(1) }, out, err);
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      err.write(`nestjs-quorum-lock: ${redactUrl(e.message)}\n\n${USAGE}\n`);
      return 2;
    }
  const number = (name: 'ttl' | 'limit' | 'timeout'): number => {
    const n = Number(values[name]);
    if (!Number.isSafeInteger(n) || n <= 0)
      throw new UsageError(`--${name} must be a whole number > 0; got ${values[name]}`);
    return n;
  };
  let nodes: Node[] = [];
  try {
    if (command !== 'inspect' && command !== 'masters')
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    if (extra.length > 0 || (command === 'masters' && positionals.length > 1))
      throw new UsageError(`unexpected argument ${JSON.stringify(positionals.at(-1))}`);
    if (!values.nodes)
      throw new UsageError(
        '--nodes is required: the masters, comma-separated redis:// URLs (a cluster as cluster:host:port+host:port)',
      );
    const timeout = number('timeout');
    nodes = parseNodeList(values.nodes).map((entry) =>
      entry.kind === 'cluster' ? openCluster(entry, timeout) : openNode(entry, timeout),
    );
    const errors = await connectAll(nodes);
    const quorum = quorumOf(nodes.length);
    const reachable = errors.filter((e) => e === undefined).length;
    if (command === 'masters') {
      const counting = await masters(nodes, errors, number('ttl'), values.json, out);
      return counting >= quorum ? 0 : 1;
    }
    await inspect(
      nodes,
      errors,
      values.prefix,
      values['fencing-prefix'],
      pattern,
      number('limit'),
      timeout,
      values.json,
      out,
    );
    return reachable >= quorum ? 0 : 1;
  } catch (e) {
    if (e instanceof UsageError) {
      err.write(`nestjs-quorum-lock: ${scrub(e.message, nodes)}\n\n${USAGE}\n`);
      return 2;
    }
    throw new Error(scrub(e instanceof Error ? e.message : String(e), nodes));
  } finally {
    for (const n of nodes) n.client.disconnect();
  }
}

async function inspect(
  nodes: readonly Node[],
  errors: readonly (Error | undefined)[],
  prefix: string,
  fencingPrefix: string,
  pattern: string,
  limit: number,
  timeout: number,
  json: boolean,
  out: Output,
): Promise<void> {
  const quorum = quorumOf(nodes.length);
  const keys = new Set<string>();
  /** Keys found on a cluster: their companions are named after a stem in the lock key's slot. */
  const clusterKeys = new Set<string>();
  const scanErrors: (string | undefined)[] = await Promise.all(
    nodes.map(async (n, i) => {
      if (errors[i]) return scrub(errors[i].message, nodes);
      try {
        // SCAN runs on one server: on a cluster, on every shard primary.
        const servers = n.cluster ? n.cluster.nodes('master') : [n.client];
        for (const server of servers)
          for (const key of await scanKeys(server, prefix + pattern, limit)) {
            keys.add(key);
            if (n.cluster) clusterKeys.add(key);
          }
        return undefined;
      } catch (e) {
        return scrub((e as Error).message, nodes);
      }
    }),
  );
  const masters = nodes.map(
    (n) => ({ label: n.label, client: n.client, ...(n.cluster ? { cluster: n.cluster } : {}) }) as unknown as Master,
  );
  const view = (resource: string): Promise<LockInspection> =>
    inspectResource(
      masters,
      quorum,
      timeout,
      REDLOCK_DEFAULTS.driftFactor,
      resource,
      prefix + resource,
      fencingPrefix + resource,
      false,
    );
  // A permit slot, limit record or writer intent is shown under its lock's resource; should that
  // resource show nothing, the key is a lock of its own whose name merely ends that way. On a
  // cluster the companion is named after the lock key's stem (`lock:orders{lock:orders}:limit`).
  const byResource = new Map<string, string[]>();
  for (const k of keys) {
    const stem = k.replace(SHARED_SUFFIX, '');
    const lockKey = stem !== k && clusterKeys.has(k) ? (lockKeyOfClusterStem(stem) ?? stem) : stem;
    const resource = (lockKey.startsWith(prefix) ? lockKey : stem).slice(prefix.length);
    byResource.set(resource, [...(byResource.get(resource) ?? []), k.slice(prefix.length)]);
  }
  const views: LockInspection[] = [];
  for (const [resource, names] of [...byResource].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (views.length >= limit) break;
    const v = await view(resource);
    if (occupied(v)) views.push(v);
    else for (const name of names) if (name !== resource) views.push(await view(name));
  }
  if (json) {
    const report = {
      nodes: nodes.map((n, i) => ({ master: n.label, ...(scanErrors[i] ? { error: scanErrors[i] } : {}) })),
      quorum,
      prefix,
      pattern,
      locks: views.map((v) => ({
        ...v,
        masters: v.masters.map((m) => ({ ...m, ...(m.error ? { error: scrub(m.error.message, nodes) } : {}) })),
      })),
    };
    out.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  const header = `${nodes.length} masters (quorum ${quorum}): ${nodes.map((n, i) => `${n.label}${scanErrors[i] ? ` [${scanErrors[i]}]` : ''}`).join(', ')}\n`;
  if (views.length === 0) {
    out.write(`${header}No locks held under ${JSON.stringify(prefix + pattern)}.\n`);
    return;
  }
  const rows = [['RESOURCE', 'STATE', 'AGREE', 'VALID FOR', 'FENCE', 'HOLDER', 'OWNER', ...nodes.map((n) => n.label)]];
  const fence = (v: LockInspection): string => (v.fencingCounter === undefined ? '-' : String(v.fencingCounter));
  const cell = (m: MasterHolding, holder: string | null, pttl: number | null | undefined, expected: string): string =>
    m.error
      ? 'error'
      : holder === null
        ? '-'
        : `${holder === expected ? '' : `${short(holder)} `}${formatMs(pttl ?? 0)}`;
  /** One row per reader and per held permit slot, beside the exclusive holder's row. */
  const sharedRows = (v: LockInspection): string[][] => [
    ...v.readers.map((r) => [
      v.resource,
      `${r.held ? 'read' : 'read minority'}${v.writerWaiting ? ' (writer waiting)' : ''}`,
      `${r.agreeing}/${nodes.length}`,
      r.held ? formatMs(r.validity) : '-',
      fence(v),
      short(r.value),
      ownerCell(r.owner),
      ...v.masters.map((m) => {
        const mine = m.readers?.find((x) => x.value === r.value);
        return cell(m, mine ? mine.value : null, mine?.pttl, r.value);
      }),
    ]),
    ...(v.permits?.slots ?? []).map((s) => [
      v.resource,
      `${s.held ? 'permit' : 'permit minority'} ${s.slot + 1}/${v.permits!.limit}`,
      `${s.agreeing}/${nodes.length}`,
      s.held ? formatMs(s.validity) : '-',
      fence(v),
      short(s.value),
      ownerCell(s.owner),
      ...v.masters.map((m) => {
        const p = m.permits?.find((x) => x.slot === s.slot);
        return cell(m, p?.holder ?? null, p?.pttl, s.value);
      }),
    ]),
  ];
  for (const v of views) {
    const shared = sharedRows(v);
    if (v.agreeing === 0 && shared.length > 0) {
      rows.push(...shared);
      continue;
    }
    const state = v.held
      ? 'held'
      : v.agreeing > 0 && v.masters.some((m) => m.holder !== null && m.holder !== v.holder)
        ? 'split'
        : v.agreeing > 0
          ? 'minority'
          : v.writerWaiting
            ? 'writer waiting'
            : 'free';
    rows.push(
      [
        v.resource,
        state,
        `${v.agreeing}/${nodes.length}`,
        v.held ? formatMs(v.validity) : '-',
        fence(v),
        short(v.holder),
        ownerCell(v.holder === null ? null : v.owner),
        ...v.masters.map((m) => cell(m, m.holder, m.pttl, v.holder ?? '')),
      ],
      ...shared,
    );
  }
  out.write(header + table(rows));
}

interface MasterReport {
  master: string;
  reachable: boolean;
  error?: string;
  role?: string;
  version?: string;
  runId?: string;
  uptimeSeconds?: number;
  /** For a cluster: how many shards (primaries) it has; one vote for all of them. */
  shards?: number;
  restartGuard?: { trusted: boolean; distrustedForMs: number; forTtl: number };
  maxmemoryPolicy?: string;
  evicting?: boolean;
  /** The earlier node that is the same server (same `run_id`): its vote would not count twice. */
  sameServerAs?: string;
  /** A server in cluster mode given as a plain master: the library refuses it (most keys answer MOVED). */
  clusterMode?: boolean;
  /** Its vote would count for a lock now: reachable, a master, past the guard, noeviction, no duplicate. */
  counts: boolean;
  /** Why it would not count, when it would not. */
  notCounting?: string;
}

/** Why a master's vote would not count for a lock now (as the library decides), or undefined. */
function whyNotCounting(r: Omit<MasterReport, 'counts'>): string | undefined {
  if (!r.reachable) return 'unreachable';
  if (r.role !== undefined && r.role !== 'master') return `role ${r.role}`;
  if (r.sameServerAs !== undefined) return `same server as ${r.sameServerAs}`;
  if (r.clusterMode) return 'a cluster node: give its cluster as cluster:host:port';
  if (r.evicting) return `maxmemory-policy ${r.maxmemoryPolicy}`;
  if (r.restartGuard && !r.restartGuard.trusted) return 'restart guard';
  return undefined;
}

const field = (info: string, name: string): string | undefined =>
  new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();

async function masters(
  nodes: readonly Node[],
  errors: readonly (Error | undefined)[],
  ttl: number,
  json: boolean,
  out: Output,
): Promise<number> {
  const guard = ttl + driftOf(ttl, REDLOCK_DEFAULTS.driftFactor);
  const probed = await Promise.all(
    nodes.map(async (n, i): Promise<Omit<MasterReport, 'counts'>> => {
      if (errors[i]) return { master: n.label, reachable: false, error: scrub(errors[i].message, nodes) };
      try {
        // A cluster is read as the library reads it: every shard primary's INFO, combined
        // (its youngest shard's uptime, `master` only if every shard's is, run_id per shard).
        const [server, replication, memory, clustering] = n.cluster
          ? await clusterInfo(n.cluster).then((info) => [info, info, info, ''])
          : await Promise.all([
              n.client.info('server'),
              n.client.info('replication'),
              n.client.info('memory'),
              n.client.info('cluster'),
            ]);
        const shards = field(server, 'shards');
        const uptimeSeconds = Number(field(server, 'uptime_in_seconds') ?? 0);
        // as the library counts it: Redis's uptime can overstate by almost a second
        const uptimeMs = Math.max(0, uptimeSeconds - 1) * 1_000;
        const maxmemoryPolicy = field(memory, 'maxmemory_policy');
        return {
          master: n.label,
          reachable: true,
          role: field(replication, 'role'),
          version: field(server, 'redis_version'),
          runId: field(server, 'run_id'),
          uptimeSeconds,
          ...(shards === undefined ? {} : { shards: Number(shards) }),
          restartGuard: {
            trusted: uptimeMs >= guard,
            distrustedForMs: Math.max(0, Math.ceil(guard - uptimeMs)),
            forTtl: ttl,
          },
          ...(maxmemoryPolicy === undefined ? {} : { maxmemoryPolicy, evicting: maxmemoryPolicy !== 'noeviction' }),
          ...(field(clustering, 'cluster_enabled') === '1' ? { clusterMode: true } : {}),
        };
      } catch (e) {
        return { master: n.label, reachable: false, error: scrub((e as Error).message, nodes) };
      }
    }),
  );
  // A cluster's run_id is `slot=id,…` (one per shard): the same server if any shard's id is shared.
  const ids = (runId: string | undefined): string[] => (runId ?? '').split(',').map((x) => x.replace(/^\d+=/, ''));
  const sameServer = (a: string | undefined, b: string | undefined): boolean =>
    a !== undefined && b !== undefined && ids(a).some((x) => x !== '?' && x !== '' && ids(b).includes(x));
  const reports: MasterReport[] = probed.map((p, i) => {
    const first = p.runId === undefined ? -1 : probed.findIndex((q) => sameServer(q.runId, p.runId));
    const r = first >= 0 && first < i ? { ...p, sameServerAs: probed[first].master } : p;
    const why = whyNotCounting(r);
    return { ...r, counts: why === undefined, ...(why === undefined ? {} : { notCounting: why }) };
  });
  const counting = reports.filter((r) => r.counts).length;
  const quorum = quorumOf(nodes.length);
  if (json) {
    out.write(`${JSON.stringify({ quorum, counting, masters: reports }, null, 2)}\n`);
    return counting;
  }
  const rows = [['MASTER', 'STATUS', 'ROLE', 'VERSION', 'UPTIME', `RESTART GUARD (ttl ${ttl} ms)`, 'MAXMEMORY-POLICY']];
  for (const r of reports) {
    rows.push([
      r.master,
      r.reachable ? 'up' : `down (${r.error})`,
      r.role ?? '-',
      r.version ?? '-',
      r.uptimeSeconds === undefined ? '-' : formatMs(r.uptimeSeconds * 1_000),
      !r.restartGuard
        ? '-'
        : r.restartGuard.trusted
          ? 'trusted'
          : `distrusted for ${formatMs(r.restartGuard.distrustedForMs)}`,
      r.maxmemoryPolicy === undefined
        ? '-'
        : r.evicting
          ? `${r.maxmemoryPolicy} (can evict locks: set noeviction)`
          : r.maxmemoryPolicy,
    ]);
  }
  const up = reports.filter((r) => r.reachable).length;
  const notCounting = reports.filter((r) => !r.counts).map((r) => `${r.master}: ${r.notCounting}`);
  out.write(
    table(rows) +
      `${up} of ${nodes.length} reachable; a lock needs ${quorum}.\n` +
      `${counting} of ${nodes.length} count for locks up to ${ttl} ms${notCounting.length ? ` (not: ${notCounting.join('; ')})` : ''}` +
      `${counting >= quorum ? '.' : `: below the quorum of ${quorum}, no lock can be taken now.`}\n`,
  );
  return counting;
}
