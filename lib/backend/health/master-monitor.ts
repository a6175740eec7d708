import type { Redis } from 'ioredis';
import type { MasterConnection } from '../master-connection.js';
import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { now } from '../../util/clock.js';
import type { RedlockLogger } from '../../util/logger.js';
import type { Master } from '../master.js';
import {
  adoptRefreshedMap,
  compareShards,
  readClusterIdentity,
  routeChange,
  type ClusterIdentity,
} from '../cluster/cluster-identity.js';
import { redact } from '../../util/redact.js';
import type { DistrustReason, GuardReason } from '../../errors/outcomes.js';
import type { IdentityChange, RestartGuard } from './restart-guard.js';

/**
 * One master as this `Redlock` sees it now, for health checks and inspection (read-only; nothing is
 * sent to compute it). Refreshed on every (re)connect, and by `redlock.refreshMasterStates()`.
 *
 * @example
 * const states = redlock.masterStates();
 * const healthy = states.filter((m) => m.trusted).length >= redlock.quorum;
 * @publicApi
 */
export interface MasterState {
  /** `host:port` (or `unix:path`), never with a password. */
  readonly label: string;
  /** The connection is ready. */
  readonly connected: boolean;
  /** Its votes count now: connected (and answering the last `refreshMasterStates()`), and neither distrusted by the restart guard nor excluded. */
  readonly trusted: boolean;
  /**
   * Milliseconds until its votes count again, 0 when trusted; never `Infinity`. While the time is
   * not known yet (`distrust` is `unknown`), an upper bound: the restart guard's duration (largest
   * TTL plus drift). For `unreachable`, `duplicate` and `evicting-policy`, which no wait cures, the
   * time the guard will still ask for once the cause is fixed (0 with the guard off).
   */
  readonly distrustedFor: number;
  /** Why its votes do not count (undefined when trusted). */
  readonly distrust?: DistrustReason;
  /** The last network error of a connection the library owns (redacted), e.g. `connect ECONNREFUSED 127.0.0.1:1`. */
  readonly lastError?: string;
  /** Round-trip time of the last `INFO` it answered, in ms. */
  readonly roundTripMs?: number;
  /** Its `maxmemory-policy`; undefined until read, or when the server does not tell (see `policyUnreadable`). */
  readonly maxmemoryPolicy?: string;
  /** Its `maxmemory` in bytes (0: no limit). */
  readonly maxmemory?: number;
  /** Why `maxmemoryPolicy` could not be read (for example `CONFIG` disabled and `INFO` lacking it). */
  readonly policyUnreadable?: string;
  /** True when `maxmemoryPolicy` can evict lock keys (anything but `noeviction`). */
  readonly evicting?: boolean;
  /** The server's `run_id`: its identity since it last started. */
  readonly runId?: string;
  /** The server's uptime when last read, in ms. */
  readonly uptimeMs?: number;
  /** `master` or `slave` (a replica cannot take locks). */
  readonly role?: string;
  /**
   * For a cluster node distrusted because one of its shards changed identity: that shard, e.g.
   * `slots 0-8191 at 127.0.0.1:7003 (was 127.0.0.1:7000)`.
   */
  readonly shard?: string;
  /** The label of the `nodes` entry this one duplicates (`distrust` is then `duplicate`). */
  readonly sameServerAs?: string;
  /** How often its `run_id` changed (restarts) and its identity changed with a long uptime or a promotion (failovers). */
  readonly restarts: number;
  readonly failovers: number;
}

/** A vote that does not count, as `voteRound` records it. */
export interface Distrust {
  readonly status: 'restarted' | 'excluded';
  readonly distrust: DistrustReason;
  readonly distrustedFor: number;
  /** For a cluster node: the shard whose change is why. */
  readonly shard?: string;
}

/** How often a cluster node's shards are read again while nothing else triggers it. */
const CLUSTER_VET_INTERVAL_MS = 1_000;
/** How soon a cluster node's shards are read again after a reading was interrupted by a change. */
const CLUSTER_VET_RETRY_MS = 100;

/**
 * One `ready` listener per client, whatever the number of `Redlock` instances sharing it: a user's
 * ioredis client given to twelve instances must not collect twelve listeners.
 */
const hubs = new WeakMap<MasterConnection, Set<() => void>>();
const hubListeners = new WeakMap<MasterConnection, () => void>();

function watchReady(client: MasterConnection, onReady: () => void): () => void {
  let subscribers = hubs.get(client);
  if (!subscribers) {
    const set = new Set<() => void>();
    subscribers = set;
    const listener = (): void => {
      for (const s of [...set]) s();
    };
    hubs.set(client, set);
    hubListeners.set(client, listener);
    client.on('ready', listener);
  }
  subscribers.add(onReady);
  return () => {
    const set = hubs.get(client);
    if (!set) return;
    set.delete(onReady);
    if (set.size === 0) {
      client.off('ready', hubListeners.get(client)!);
      hubs.delete(client);
      hubListeners.delete(client);
    }
  };
}

interface Probe {
  runId?: string;
  replId?: string;
  uptimeMs?: number;
  role?: string;
  roundTripMs?: number;
  maxmemoryPolicy?: string;
  maxmemory?: number;
  policyUnreadable?: string;
  /** A plain master whose server runs in cluster mode (it answers MOVED for most keys). */
  clusterMode?: boolean;
}

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:([^\\r\\n]*)`, 'm').exec(info)?.[1];
}

function bytes(n: number): string {
  if (n === 0) return '0 (no limit)';
  const mb = n / 1_048_576;
  return mb >= 1 ? `${Number(mb.toFixed(1))}mb` : `${n} bytes`;
}

export interface MasterMonitorOptions {
  readonly allowEvictingMasters: boolean;
  /** Bound on each probe. */
  readonly probeTimeout: number;
  readonly logger: Required<RedlockLogger>;
  /** Passwords found in `nodes`, scrubbed from every logged error text. */
  readonly secrets: readonly string[];
}

/**
 * Watches each master's connection and reads its `INFO` on every (re)connect: identity (`run_id`,
 * `master_replid`) for the restart guard and for "one server, one vote", `maxmemory-policy`, and the
 * round trip. It decides which votes count, and reports at start-up what an operator must know.
 */
export class MasterMonitor {
  readonly #probes: Probe[];
  readonly #generation: number[];
  readonly #inflight: (Promise<void> | undefined)[];
  readonly #inflightDone: boolean[];
  /** Set when a `refresh()` probe got no answer in time (a hung master keeps its connection); cleared by the next answer. */
  readonly #unanswered: (string | undefined)[];
  readonly #unwatch: (() => void)[];
  readonly #warnedPolicy: (string | undefined)[];
  readonly #reportedDuplicate: (string | undefined)[];
  readonly #trustTimers: (NodeJS.Timeout | undefined)[];
  /** Each cluster node's shards as last vetted, and the routes they were read over. */
  readonly #identities: (ClusterIdentity | undefined)[];
  /** The shard whose change is why a cluster node is distrusted. */
  readonly #shardNote: (string | undefined)[];
  #started = false;
  #closed = false;

  constructor(
    private readonly masters: readonly Master[],
    private readonly guard: RestartGuard | undefined,
    private readonly options: MasterMonitorOptions,
  ) {
    const n = masters.length;
    this.#probes = masters.map(() => ({}));
    this.#generation = new Array<number>(n).fill(0);
    this.#inflight = new Array<Promise<void> | undefined>(n).fill(undefined);
    this.#inflightDone = new Array<boolean>(n).fill(true);
    this.#unanswered = new Array<string | undefined>(n).fill(undefined);
    this.#warnedPolicy = new Array<string | undefined>(n).fill(undefined);
    this.#reportedDuplicate = new Array<string | undefined>(n).fill(undefined);
    this.#trustTimers = new Array<NodeJS.Timeout | undefined>(n).fill(undefined);
    this.#identities = new Array<ClusterIdentity | undefined>(n).fill(undefined);
    this.#shardNote = new Array<string | undefined>(n).fill(undefined);
    this.#unwatch = masters.map((master, i) => {
      const unwatch = watchReady(master.client, () => this.onReady(i));
      const unwatchCluster = master.cluster ? this.watchCluster(i) : undefined;
      if (master.client.status === 'ready') this.onReady(i);
      return () => {
        unwatch();
        unwatchCluster?.();
      };
    });
  }

  /** Stops watching the clients (a user's client outlives this instance) and cancels timers. */
  dispose(): void {
    this.#closed = true;
    for (const u of this.#unwatch) u();
    for (const t of this.#trustTimers) clearTimeout(t);
  }

  /**
   * A cluster stays `ready` through a shard failover, a restarted shard primary or a moved slot, so
   * its shards are vetted on their own: every reply is checked against the routes the shards were
   * read over before its vote counts (`distrust()`), the slot map is compared on every refresh, and
   * the shards are read again every second (a primary demoted and promoted again keeps its routes).
   * Any change distrusts the node until its shards are read again.
   */
  private watchCluster(i: number): () => void {
    const cluster = this.masters[i].cluster!;
    const onRefresh = (): void => {
      if (this.#closed || cluster.status !== 'ready') return;
      const identity = this.#identities[i];
      if (identity && this.guard?.why(i) !== 'unknown') {
        // The refresh has just replaced the slot map (synchronously before this event): compare it now.
        const changed = adoptRefreshedMap(cluster, identity)
          ? routeChange(cluster, identity)
          : 'the slot map now routes some slots elsewhere';
        if (changed !== undefined) this.shardChanged(i, changed);
      } else if (this.guard?.why(i) === 'unknown' && this.#inflightDone[i]) void this.probe(i); // a probe that failed: try again
    };
    const onNodeReady = (): void => {
      if (!this.#closed && cluster.status === 'ready') this.onReady(i);
    };
    const watched = new Set<Redis>();
    const onNode = (node: Redis): void => {
      if (watched.has(node)) return;
      watched.add(node);
      // Not on the first connect of a node (the cluster's own 'ready' covers start-up): on its reconnects.
      let seenReady = node.status === 'ready';
      node.on('ready', () => {
        if (seenReady) onNodeReady();
        seenReady = true;
      });
    };
    // Without the guard nothing is vetted: no periodic reading.
    const vet = this.guard
      ? setInterval(() => {
          if (!this.#closed && cluster.status === 'ready' && this.#inflightDone[i]) void this.probe(i);
        }, CLUSTER_VET_INTERVAL_MS)
      : undefined;
    vet?.unref();
    cluster.on('refresh', onRefresh);
    cluster.on('+node', onNode);
    for (const node of cluster.nodes('all')) onNode(node);
    return () => {
      clearInterval(vet);
      cluster.off('refresh', onRefresh);
      cluster.off('+node', onNode);
    };
  }

  /** Cluster node `i` routes a shard elsewhere or reconnected to it: distrusted until its shards are read again. */
  private shardChanged(i: number, what: string): void {
    this.#shardNote[i] = what;
    this.onReady(i);
  }

  private onReady(i: number): void {
    if (this.#closed) return;
    this.guard?.connecting(i);
    void this.probe(i);
  }

  /** Reads master `i`'s `INFO` (and `CONFIG GET` when `INFO` lacks the memory policy). */
  private probe(i: number): Promise<boolean> {
    const generation = ++this.#generation[i];
    const client = this.masters[i].client;
    const asked = now();
    const run = async (): Promise<void> => {
      const cluster = this.masters[i].cluster;
      const identity = cluster ? await readClusterIdentity(cluster) : undefined;
      const info = identity ? identity.info : await client.info();
      // The uptime was measured when the server answered, so the guard counts it back from the reply's
      // arrival: counted from the request, a reply held up (a paused server) would date the start early.
      const answered = now();
      const roundTripMs = Math.round((answered - asked) * 100) / 100;
      const probe: Probe = {
        runId: field(info, 'run_id'),
        replId: field(info, 'master_replid'),
        role: field(info, 'role'),
        ...(!cluster && field(info, 'cluster_enabled') === '1' ? { clusterMode: true } : {}),
        roundTripMs,
        // Redis reports uptime as the difference of two wall-clock times each truncated to the
        // second, so it can overstate the real uptime by almost a second: count one second less.
        uptimeMs: Math.max(0, Number(field(info, 'uptime_in_seconds') ?? 0) - 1) * 1_000,
        maxmemoryPolicy: field(info, 'maxmemory_policy'),
        maxmemory: field(info, 'maxmemory') === undefined ? undefined : Number(field(info, 'maxmemory')),
      };
      if (probe.maxmemoryPolicy === undefined) {
        try {
          const reply = (await client.call('CONFIG', 'GET', 'maxmemory*')) as string[];
          for (let k = 0; k + 1 < reply.length; k += 2) {
            if (reply[k] === 'maxmemory-policy') probe.maxmemoryPolicy = reply[k + 1];
            if (reply[k] === 'maxmemory') probe.maxmemory = Number(reply[k + 1]);
          }
          if (probe.maxmemoryPolicy === undefined) probe.policyUnreadable = 'neither INFO nor CONFIG GET reports it';
        } catch (error) {
          probe.policyUnreadable = `INFO does not report it and CONFIG GET failed (${this.clean(error)}): CONFIG may be disabled or renamed`;
        }
      }
      if (generation !== this.#generation[i] || this.#closed) return;
      this.record(i, probe, answered, identity);
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) =>
      (timer = setTimeout(resolve, this.options.probeTimeout, false)).unref(),
    );
    const done = Promise.race([run().then(() => true), timeout])
      .catch(() => false) // No answer: the guard keeps the master distrusted ('unknown') until the next probe.
      .finally(() => clearTimeout(timer));
    if (this.masters[i].cluster) {
      // A cluster's shards read while its routing changed: read them again soon, not at the next tick.
      void done.then((answered) => {
        if (!answered && !this.#closed && generation === this.#generation[i] && this.guard?.why(i) === 'unknown')
          setTimeout(() => {
            if (!this.#closed && this.#inflightDone[i] && this.guard?.why(i) === 'unknown') void this.probe(i);
          }, CLUSTER_VET_RETRY_MS).unref();
      });
    }
    this.#inflight[i] = done.then(() => undefined);
    this.#inflightDone[i] = false;
    void done.then(() => {
      if (generation === this.#generation[i]) this.#inflightDone[i] = true;
    });
    return done;
  }

  private record(i: number, probe: Probe, answered: number, identity?: ClusterIdentity): void {
    const before = this.#probes[i];
    let change: IdentityChange = 'first';
    let uptimeMs = probe.uptimeMs ?? 0;
    const vetted = this.#identities[i];
    if (identity) {
      // A cluster node: compared shard by shard, slot by slot (docs/cluster.md).
      this.#identities[i] = identity;
      if (vetted) {
        const shard = compareShards(vetted.shards, identity.shards);
        change = shard.change;
        uptimeMs = shard.uptimeMs;
        if (shard.shard !== undefined) this.#shardNote[i] = shard.shard;
      }
    } else if (before.runId !== undefined) {
      if (probe.runId !== before.runId) change = 'restarted';
      else if (
        probe.replId !== undefined &&
        before.replId !== undefined &&
        probe.replId !== before.replId &&
        probe.role === 'master'
      )
        change = 'failover';
      else change = 'same';
    }
    this.#probes[i] = probe;
    this.#unanswered[i] = undefined;
    this.markExcluded();
    const wasTrusted = this.guard?.trusts(i) ?? true;
    this.guard?.observed(i, change, uptimeMs, answered);
    if (!this.#started) return;
    const { label } = this.masters[i];
    // After start-up, say what changed as it happens (start-up itself is reported by `connected()`).
    const why = this.guard?.why(i);
    if (why && why !== 'unknown') {
      const left = this.guard!.distrustedFor(i);
      this.options.logger.log(
        `Master ${label} is distrusted for ${left} ms: ${this.describeGuard(i, why)} (\`restartGuard\`).`,
      );
      this.scheduleTrustedLog(i);
    } else if (!wasTrusted && change !== 'first') {
      this.options.logger.log(`Master ${label} is trusted again.`);
    }
    this.reportDuplicate(i, undefined);
    this.reportPolicy(i, undefined);
  }

  private scheduleTrustedLog(i: number): void {
    clearTimeout(this.#trustTimers[i]);
    const left = this.guard?.distrustedFor(i) ?? 0;
    if (left <= 0) return;
    this.#trustTimers[i] = setTimeout(() => {
      this.#trustTimers[i] = undefined;
      if (this.#closed) return;
      if (this.guard?.trusts(i))
        this.options.logger.log(`Master ${this.masters[i].label} is trusted again (\`restartGuard\`).`);
      else this.scheduleTrustedLog(i);
    }, left + 5);
    this.#trustTimers[i].unref();
  }

  /** Flags the masters whose votes can never count, so rounds skip them before sending. */
  private markExcluded(): void {
    this.masters.forEach((m, k) => {
      m.excluded =
        this.duplicateOf(k) !== undefined ? 'duplicate' : this.evictionRefused(k) ? 'evicting-policy' : undefined;
    });
  }

  /** The earlier `nodes` entry that is the same server as master `i`, if any. */
  private duplicateOf(i: number): number | undefined {
    const runId = this.#probes[i].runId;
    if (runId === undefined) return undefined;
    for (let j = 0; j < i; j++) if (this.#probes[j].runId === runId) return j;
    return undefined;
  }

  private evictionRefused(i: number): boolean {
    const p = this.#probes[i];
    return !this.options.allowEvictingMasters && p.maxmemoryPolicy !== undefined && p.maxmemoryPolicy !== 'noeviction';
  }

  /** The `run_id` of the server that answered master `i`'s last `INFO`: the one the restart guard vetted. */
  runIdOf(i: number): string | undefined {
    return this.#probes[i].runId;
  }

  /** Why master `i`'s votes must not count now, or undefined when they count. */
  distrust(i: number): Distrust | undefined {
    if (this.duplicateOf(i) !== undefined)
      return { status: 'excluded', distrust: 'duplicate', distrustedFor: this.guardBound() };
    if (this.evictionRefused(i))
      return { status: 'excluded', distrust: 'evicting-policy', distrustedFor: this.guardBound() };
    if (!this.guard) return undefined;
    this.vetRoutes(i);
    if (!this.guard.trusts(i)) {
      const shard = this.#shardNote[i];
      return {
        status: 'restarted',
        distrust: this.guard.why(i) ?? 'unknown',
        distrustedFor: this.guard.distrustedFor(i),
        ...(shard !== undefined ? { shard } : {}),
      };
    }
    this.#shardNote[i] = undefined;
    return undefined;
  }

  /**
   * A cluster node's reply counts only if it came over the routes its shards were vetted on: a
   * `MOVED` (failover, moved slot) rewrites the client's slot map before the command is resent, and
   * a restarted primary is reached over a new connection, so either shows here, synchronously,
   * before the vote is counted. The node is then distrusted until its shards are read again.
   */
  private vetRoutes(i: number): void {
    const cluster = this.masters[i].cluster;
    const identity = this.#identities[i];
    if (!cluster || !identity || this.#closed || this.guard?.why(i) === 'unknown') return;
    const changed = routeChange(cluster, identity);
    if (changed !== undefined) this.shardChanged(i, changed);
  }

  private guardBound(): number {
    return this.guard ? Math.ceil(this.guard.guardMs()) : 0;
  }

  /** Every master's state now. */
  states(): MasterState[] {
    return this.masters.map((master, i) => {
      const p = this.#probes[i];
      const connected = master.client.status === 'ready';
      const d = this.distrust(i);
      const dup = this.duplicateOf(i);
      const unanswered = connected ? this.#unanswered[i] : undefined;
      const distrust: DistrustReason | undefined = !connected || unanswered ? 'unreachable' : d?.distrust;
      return {
        label: master.label,
        connected,
        trusted: connected && !unanswered && d === undefined,
        distrustedFor: d ? d.distrustedFor : connected ? 0 : this.guardBound(),
        ...(distrust ? { distrust } : {}),
        ...(d?.shard !== undefined ? { shard: d.shard } : {}),
        ...(master.lastError && !connected ? { lastError: this.clean(master.lastError) } : {}),
        ...(unanswered ? { lastError: unanswered } : {}),
        ...(p.roundTripMs !== undefined ? { roundTripMs: p.roundTripMs } : {}),
        ...(p.maxmemoryPolicy !== undefined
          ? { maxmemoryPolicy: p.maxmemoryPolicy, evicting: p.maxmemoryPolicy !== 'noeviction' }
          : {}),
        ...(p.maxmemory !== undefined ? { maxmemory: p.maxmemory } : {}),
        ...(p.policyUnreadable ? { policyUnreadable: p.policyUnreadable } : {}),
        ...(p.runId ? { runId: p.runId } : {}),
        ...(p.uptimeMs !== undefined ? { uptimeMs: p.uptimeMs } : {}),
        ...(p.role ? { role: p.role } : {}),
        ...(dup !== undefined ? { sameServerAs: this.masters[dup].label } : {}),
        restarts: this.guard?.restarts[i] ?? 0,
        failovers: this.guard?.failovers[i] ?? 0,
      };
    });
  }

  /** Probes every connected master again (health checks): fresh round trips, and failovers seen without a reconnect. */
  async refresh(): Promise<void> {
    const asked = this.options.probeTimeout;
    await Promise.all(
      this.masters.map(async (m, i) => {
        if (m.client.status !== 'ready') return;
        const answered = await this.probe(i);
        // A paused or hung server keeps its TCP connection 'ready': only the missing answer shows it.
        if (!answered && !this.#closed) this.#unanswered[i] ??= `no answer to INFO within ${asked} ms`;
      }),
    );
  }

  /** Waits (up to `timeoutMs`) for the probes of the connected masters. */
  async settled(timeoutMs: number): Promise<void> {
    const pending = this.#inflight.filter((p): p is Promise<void> => p !== undefined);
    if (pending.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)).unref())]);
    clearTimeout(timer);
  }

  /**
   * The start-up report, once `connect()` has waited for the masters: warns about unreachable
   * masters and an even count, logs who is distrusted for how long and why, and refuses (throws)
   * a master listed twice or an evicting policy unless `allowEvictingMasters`.
   */
  connected(quorum: number): void {
    const { logger } = this.options;
    const n = this.masters.length;
    this.#started = true;
    const refusals: RedlockConfigError[] = [];
    if (n % 2 === 0) {
      logger.warn(
        `\`nodes\` lists ${n} masters, an even number: a quorum needs ${quorum} of them, so it tolerates ${n - quorum} failed master${n - quorum === 1 ? '' : 's'}, as ${n - 1} masters would with fewer servers. Use an odd number (3 or 5).`,
      );
    }
    this.masters.forEach((master, i) => {
      if (master.client.status !== 'ready') {
        const why = master.lastError ? this.clean(master.lastError) : `connection ${master.client.status}`;
        logger.warn(
          `Master ${master.label} is unreachable (${why}); it does not count until it connects (retried in the background).`,
        );
        return;
      }
      if (this.#probes[i].clusterMode) {
        refusals.push(
          new RedlockConfigError(
            `nodes[${i}]`,
            `\`nodes[${i}]\` (${master.label}) is a Redis Cluster node (cluster_enabled:1) given as a plain master: most keys would be answered with MOVED. Give the whole cluster as one entry, \`{ cluster: [{ host, port }] }\` or an ioredis \`Cluster\` instance (one cluster, one vote).`,
          ),
        );
        return;
      }
      const duplicate = this.reportDuplicate(i, refusals);
      const refused = this.reportPolicy(i, refusals);
      if (duplicate || refused) return;
      const why = this.guard?.why(i);
      if (why) {
        logger.log(
          `Master ${master.label} is distrusted for ${this.guard!.distrustedFor(i)} ms: ${this.describeGuard(i, why)} (\`restartGuard\`; \`restartGuard: false\` turns it off, for tests only).`,
        );
        this.scheduleTrustedLog(i);
      }
    });
    const trusted = this.states().filter((s) => s.trusted).length;
    if (trusted < quorum && refusals.length === 0) {
      const waits = this.states()
        .filter((s) => s.connected && !s.trusted)
        .map((s) => s.distrustedFor)
        .sort((a, b) => a - b);
      const wait = waits.length >= quorum - trusted ? waits[quorum - trusted - 1] : undefined;
      logger.warn(
        `Only ${trusted} of ${n} masters count now; ${quorum} are needed to take a lock${wait !== undefined ? `: locks can be taken in about ${wait} ms` : ''}.`,
      );
    }
    if (refusals.length > 0) throw refusals[0];
  }

  private describeGuard(i: number, why: GuardReason): string {
    const p = this.#probes[i];
    const up = p.uptimeMs === undefined ? '' : `, up ${Math.round(p.uptimeMs / 1000)} s`;
    const guard = this.guard ? ` (the largest TTL plus drift, ${Math.ceil(this.guard.guardMs())} ms)` : '';
    switch (why) {
      case 'fresh':
        return `a server first seen now that started recently${up}: a brand-new server cannot be told from one that restarted empty, so it counts once it has been up longer than the guard${guard}`;
      case 'restarted':
        if (this.masters[i].cluster)
          return `a shard's primary restarted (its run_id changed: ${this.#shardNote[i] ?? 'a shard'})${up} and may have forgotten locks; the cluster counts once it has been up longer than the guard${guard}`;
        return `the server restarted (its run_id changed)${up} and may have forgotten locks; it counts once it has been up longer than the guard${guard}`;
      case 'failover':
        return this.masters[i].cluster
          ? `a shard's primary changed (a failover or promotion: ${this.#shardNote[i] ?? 'another node'}); it may lack locks the old primary granted, so the cluster counts after the guard${guard}`
          : `another server now answers at this address (its run_id or master_replid changed: a failover or promotion)${up}; it may lack locks the old master granted, so it counts after the guard${guard}`;
      case 'slot-moved':
        return `slots moved to another shard (${this.#shardNote[i] ?? 'resharding'}), which may lack the locks they held; the cluster counts after the guard${guard}`;
      default:
        return `its INFO has not been read yet since it connected`;
    }
  }

  private reportDuplicate(i: number, refusals: RedlockConfigError[] | undefined): boolean {
    const j = this.duplicateOf(i);
    if (j === undefined) {
      this.#reportedDuplicate[i] = undefined;
      return false;
    }
    const a = this.masters[j];
    const b = this.masters[i];
    const message = `\`nodes[${i}]\` (${b.label}) is the same Redis server as \`nodes[${j}]\` (${a.label}) (run_id ${this.#probes[i].runId}); one server has one vote, so \`nodes[${i}]\`'s vote is not counted. List each independent master once.`;
    if (refusals) refusals.push(new RedlockConfigError(`nodes[${i}]`, message));
    else if (this.#reportedDuplicate[i] !== a.label) this.options.logger.error(message);
    this.#reportedDuplicate[i] = a.label;
    return true;
  }

  private reportPolicy(i: number, refusals: RedlockConfigError[] | undefined): boolean {
    const p = this.#probes[i];
    const { label } = this.masters[i];
    if (p.policyUnreadable) {
      if (this.#warnedPolicy[i] !== 'unreadable') {
        this.options.logger.warn(
          `Cannot read \`maxmemory-policy\` of master ${label}: ${p.policyUnreadable}. Make sure it is \`noeviction\`, or lock keys can be evicted.`,
        );
      }
      this.#warnedPolicy[i] = 'unreadable';
      return false;
    }
    const policy = p.maxmemoryPolicy;
    if (policy === undefined || policy === 'noeviction') {
      this.#warnedPolicy[i] = undefined;
      return false;
    }
    const what = `Master ${label} has \`maxmemory-policy ${policy}\` (maxmemory ${bytes(p.maxmemory ?? 0)}): under memory pressure Redis can evict ${policy.startsWith('volatile') ? 'lock keys (they are the keys with a TTL)' : 'lock keys and fencing counters'}, and a held lock then vanishes and a second client wins it. Set \`maxmemory-policy noeviction\` on that server (\`CONFIG SET maxmemory-policy noeviction\` and in redis.conf)`;
    if (this.options.allowEvictingMasters) {
      if (this.#warnedPolicy[i] !== policy)
        this.options.logger.warn(`${what}; its vote counts because \`allowEvictingMasters\` is on.`);
      this.#warnedPolicy[i] = policy;
      return false;
    }
    const message = `${what}, or pass \`allowEvictingMasters: true\` to accept the risk. Its vote is not counted.`;
    if (refusals) refusals.push(new RedlockConfigError(`nodes[${i}]`, message));
    else if (this.#warnedPolicy[i] !== policy) this.options.logger.error(message);
    this.#warnedPolicy[i] = policy;
    return true;
  }

  private clean(error: unknown): string {
    // Duck-typed: Node's network errors may come from another realm (test sandboxes), where instanceof fails.
    const message = error !== null && typeof error === 'object' ? (error as { message?: unknown }).message : undefined;
    const text = typeof message === 'string' ? message : String(error);
    return redact(text, this.options.secrets);
  }
}
