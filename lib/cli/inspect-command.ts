// `nestjs-quorum-lock inspect`: who holds a resource (or every lock under a prefix), master by master.
import { lockKeyOfClusterStem } from '../backend/cluster/cluster-keys.js';
import { inspectResource, type LockInspection, type MasterHolding } from '../inspect/inspect.js';
import type { Master } from '../backend/master.js';
import { REDLOCK_DEFAULTS } from '../options/redlock-options.js';
import { quorumOf } from '../errors/outcomes.js';
import { scrub, scanKeys, type CliNode } from './cli-nodes.js';
import { table, short, ownerCell, formatMs, type Output } from './table.js';

/** The keys a counting or read-write lock keeps beside its own: `:permit:<i>`, `:limit`, `:writer-waiting`. */
const SHARED_SUFFIX = /:(?:permit:\d+|limit|writer-waiting)$/;

/** True when the view shows anything held or waiting on some master. */
const occupied = (v: LockInspection): boolean =>
  v.agreeing > 0 ||
  v.readers.length > 0 ||
  v.writerWaiting ||
  v.permits !== undefined ||
  v.masters.some((m) => m.writerWaiting);

/** What the masters' SCAN found: every key, those found on a cluster, and each master's error. */
interface ScannedKeys {
  readonly keys: Set<string>;
  /** Keys found on a cluster: their companions are named after a stem in the lock key's slot. */
  readonly clusterKeys: Set<string>;
  readonly scanErrors: (string | undefined)[];
}

/** SCANs every master for the keys that `match` (at most `limit` per server). */
async function scanLockKeys(
  nodes: readonly CliNode[],
  errors: readonly (Error | undefined)[],
  match: string,
  limit: number,
): Promise<ScannedKeys> {
  const keys = new Set<string>();
  const clusterKeys = new Set<string>();
  const scanErrors: (string | undefined)[] = await Promise.all(
    nodes.map(async (n, i) => {
      if (errors[i]) return scrub(errors[i].message, nodes);
      try {
        // SCAN runs on one server: on a cluster, on every shard primary.
        const servers = n.cluster ? n.cluster.nodes('master') : [n.client];
        for (const server of servers)
          for (const key of await scanKeys(server, match, limit)) {
            keys.add(key);
            if (n.cluster) clusterKeys.add(key);
          }
        return undefined;
      } catch (e) {
        return scrub((e as Error).message, nodes);
      }
    }),
  );
  return { keys, clusterKeys, scanErrors };
}

/**
 * The keys found, by the resource they belong to (without `prefix`). A permit slot, limit record or
 * writer intent is shown under its lock's resource; should that resource show nothing, the key is
 * a lock of its own whose name merely ends that way. On a cluster the companion is named after the
 * lock key's stem (`lock:orders{lock:orders}:limit`).
 */
function keysByResource({ keys, clusterKeys }: ScannedKeys, prefix: string): Map<string, string[]> {
  const byResource = new Map<string, string[]>();
  for (const k of keys) {
    const stem = k.replace(SHARED_SUFFIX, '');
    const lockKey = stem !== k && clusterKeys.has(k) ? (lockKeyOfClusterStem(stem) ?? stem) : stem;
    const resource = (lockKey.startsWith(prefix) ? lockKey : stem).slice(prefix.length);
    byResource.set(resource, [...(byResource.get(resource) ?? []), k.slice(prefix.length)]);
  }
  return byResource;
}

const fence = (v: LockInspection): string => (v.fencingCounter === undefined ? '-' : String(v.fencingCounter));

/** One master's cell: its holder (when not the row's `expected` one) and the time left, `-` or `error`. */
const cell = (m: MasterHolding, holder: string | null, pttl: number | null | undefined, expected: string): string =>
  m.error ? 'error' : holder === null ? '-' : `${holder === expected ? '' : `${short(holder)} `}${formatMs(pttl ?? 0)}`;

/** One row per reader and per held permit slot, beside the exclusive holder's row. */
function sharedRows(v: LockInspection, count: number): string[][] {
  return [
    ...v.readers.map((r) => [
      v.resource,
      `${r.held ? 'read' : 'read minority'}${v.writerWaiting ? ' (writer waiting)' : ''}`,
      `${r.agreeing}/${count}`,
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
      `${s.agreeing}/${count}`,
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
}

/** The exclusive lock's state across the masters. */
function stateOf(v: LockInspection): string {
  return v.held
    ? 'held'
    : v.agreeing > 0 && v.masters.some((m) => m.holder !== null && m.holder !== v.holder)
      ? 'split'
      : v.agreeing > 0
        ? 'minority'
        : v.writerWaiting
          ? 'writer waiting'
          : 'free';
}

/** The table's rows: a header, then each lock's row and its readers' and permits' rows. */
function lockRows(views: readonly LockInspection[], nodes: readonly CliNode[]): string[][] {
  const rows = [['RESOURCE', 'STATE', 'AGREE', 'VALID FOR', 'FENCE', 'HOLDER', 'OWNER', ...nodes.map((n) => n.label)]];
  for (const v of views) {
    const shared = sharedRows(v, nodes.length);
    if (v.agreeing === 0 && shared.length > 0) {
      rows.push(...shared);
      continue;
    }
    rows.push(
      [
        v.resource,
        stateOf(v),
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
  return rows;
}

/**
 * `inspect`: prints who holds each lock key matching `prefix + pattern` (at most `limit` keys, found
 * by SCAN) on every master, as a table or as `json`, read the way `Redlock.inspect()` reads it.
 */
export async function inspect(
  nodes: readonly CliNode[],
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
  const scanned = await scanLockKeys(nodes, errors, prefix + pattern, limit);
  const { scanErrors } = scanned;
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
  const views: LockInspection[] = [];
  const byResource = keysByResource(scanned, prefix);
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
  out.write(header + table(lockRows(views, nodes)));
}
