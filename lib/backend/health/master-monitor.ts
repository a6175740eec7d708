import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { redactError } from '../../util/redact.js';
import type { RedlockLogger } from '../../util/logger.js';
import type { Master } from '../master.js';
import { adoptRefreshedMap, routeChange, type ClusterIdentity } from '../cluster/cluster-identity.js';
import type { GuardReason } from '../../errors/outcomes.js';
import type { RestartGuard } from './restart-guard.js';
import { readInfo, type InfoProbe, type InfoReading } from './info-probe.js';
import { identityChange } from './identity-change.js';
import { masterStateOf, type Distrust, type MasterState } from './master-state.js';
import { describeGuard, MasterReports } from './master-reports.js';
import { watchReady } from './ready-hub.js';
import { CLUSTER_VET_RETRY_MS, watchClusterShards } from './cluster-watch.js';

/** What a `MasterMonitor` needs of the library's options. */
export interface MasterMonitorOptions {
  /** Let a master whose `maxmemory-policy` can evict keys vote anyway (the option of that name). */
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
  readonly #probes: InfoProbe[];
  readonly #generation: number[];
  readonly #inflight: (Promise<void> | undefined)[];
  readonly #inflightDone: boolean[];
  /** Set when a `refresh()` probe got no answer in time (a hung master keeps its connection); cleared by the next answer. */
  readonly #unanswered: (string | undefined)[];
  readonly #unwatch: (() => void)[];
  /** Each cluster node's shards as last vetted, and the routes they were read over. */
  readonly #identities: (ClusterIdentity | undefined)[];
  /** The shard whose change is why a cluster node is distrusted. */
  readonly #shardNote: (string | undefined)[];
  readonly #reports: MasterReports;
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
    this.#identities = new Array<ClusterIdentity | undefined>(n).fill(undefined);
    this.#shardNote = new Array<string | undefined>(n).fill(undefined);
    this.#reports = new MasterReports(masters, guard, options);
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
    this.#reports.dispose();
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
    return watchClusterShards(cluster, {
      refreshed: () => {
        if (this.#closed || cluster.status !== 'ready') return;
        const identity = this.#identities[i];
        if (identity && this.guard?.why(i) !== 'unknown') {
          // The refresh has just replaced the slot map (synchronously before this event): compare it now.
          const changed = adoptRefreshedMap(cluster, identity)
            ? routeChange(cluster, identity)
            : 'the slot map now routes some slots elsewhere';
          if (changed !== undefined) this.shardChanged(i, changed);
        } else if (this.guard?.why(i) === 'unknown' && this.#inflightDone[i]) void this.probe(i); // a probe that failed: try again
      },
      nodeReconnected: () => {
        if (!this.#closed && cluster.status === 'ready') this.onReady(i);
      },
      // Without the guard nothing is vetted: no periodic reading.
      ...(this.guard
        ? {
            tick: () => {
              if (!this.#closed && cluster.status === 'ready' && this.#inflightDone[i]) void this.probe(i);
            },
          }
        : {}),
    });
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

  /**
   * Reads master `i`'s `INFO` within `probeTimeout`; resolves to whether it answered. Only the latest
   * probe of a master is recorded: an older one answering late is dropped.
   */
  private probe(i: number): Promise<boolean> {
    const generation = ++this.#generation[i];
    const run = async (): Promise<void> => {
      const reading = await readInfo(this.masters[i], this.options.secrets);
      if (generation !== this.#generation[i] || this.#closed) return;
      this.record(i, reading);
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

  /** Master `i` answered: what changed goes to the restart guard, and after start-up to the log. */
  private record(i: number, { probe, answered, identity }: InfoReading): void {
    const observed = identityChange(this.#probes[i], probe, this.#identities[i], identity);
    if (identity) this.#identities[i] = identity;
    if (observed.shard !== undefined) this.#shardNote[i] = observed.shard;
    this.#probes[i] = probe;
    this.#unanswered[i] = undefined;
    this.markExcluded();
    const wasTrusted = this.guard?.trusts(i) ?? true;
    this.guard?.observed(i, observed.change, observed.uptimeMs, answered);
    if (!this.#started) return;
    // After start-up, say what changed as it happens (start-up itself is reported by `connected()`).
    const why = this.guard?.why(i);
    if (why && why !== 'unknown') this.#reports.distrusted(i, this.describeGuard(i, why), false);
    else if (!wasTrusted && observed.change !== 'first') this.#reports.trustedAgain(i);
    this.#reports.duplicate(i, this.duplicateOf(i), probe.runId);
    this.#reports.policy(i, probe);
  }

  /**
   * Flags the masters whose votes can never count, so rounds skip them before sending and `distrust`
   * refuses their votes. Run on every `INFO` answer: one master's new `run_id` can make another a duplicate.
   */
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

  /**
   * Why master `i`'s votes must not count now, or undefined when they count. Asked for every vote:
   * "one server, one vote" and the eviction policy are read from `Master.excluded`, which
   * `markExcluded` sets again from every `INFO` answer (the only time a `run_id` or a policy changes).
   */
  distrust(i: number): Distrust | undefined {
    const excluded = this.masters[i].excluded;
    if (excluded !== undefined) return { status: 'excluded', distrust: excluded, distrustedFor: this.guardBound() };
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
      const dup = this.duplicateOf(i);
      return masterStateOf(master, this.#probes[i], {
        distrust: this.distrust(i),
        unanswered: this.#unanswered[i],
        sameServerAs: dup !== undefined ? this.masters[dup] : undefined,
        guardBound: this.guardBound(),
        restarts: this.guard?.restarts[i] ?? 0,
        failovers: this.guard?.failovers[i] ?? 0,
        lastError: master.lastError ? redactError(master.lastError, this.options.secrets) : undefined,
      });
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
    for (let i = 0; i < n; i++) this.reportAtStartup(i, refusals);
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

  /** Master `i` at start-up: unreachable, a cluster node given as a plain master, refused, or distrusted. */
  private reportAtStartup(i: number, refusals: RedlockConfigError[]): void {
    const master = this.masters[i];
    if (master.client.status !== 'ready') {
      const why = master.lastError
        ? redactError(master.lastError, this.options.secrets)
        : `connection ${master.client.status}`;
      this.options.logger.warn(
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
    const duplicate = this.#reports.duplicate(i, this.duplicateOf(i), this.#probes[i].runId, refusals);
    const refused = this.#reports.policy(i, this.#probes[i], refusals);
    if (duplicate || refused) return;
    const why = this.guard?.why(i);
    if (why) this.#reports.distrusted(i, this.describeGuard(i, why), true);
  }

  private describeGuard(i: number, why: GuardReason): string {
    return describeGuard(why, {
      uptimeMs: this.#probes[i].uptimeMs,
      cluster: this.masters[i].cluster !== undefined,
      shard: this.#shardNote[i],
      guardMs: this.guard?.guardMs(),
    });
  }
}
