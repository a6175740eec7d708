import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import type { GuardReason } from '../../errors/outcomes.js';
import type { RedlockLogger } from '../../util/logger.js';
import type { Master } from '../master.js';
import type { InfoProbe } from './info-probe.js';
import type { RestartGuard } from './restart-guard.js';

/** What {@link describeGuard} says about one distrusted master. */
export interface GuardFacts {
  /** Its uptime when last read. */
  readonly uptimeMs: number | undefined;
  /** True for a Redis Cluster (the change is a shard's). */
  readonly cluster: boolean;
  /** For a cluster node: the shard whose change is why. */
  readonly shard: string | undefined;
  /** The guard's whole duration, the largest TTL plus drift (undefined with the guard off). */
  readonly guardMs: number | undefined;
}

/** Why the restart guard distrusts a master, in an operator's words. */
export function describeGuard(why: GuardReason, facts: GuardFacts): string {
  const up = facts.uptimeMs === undefined ? '' : `, up ${Math.round(facts.uptimeMs / 1000)} s`;
  const guard = facts.guardMs !== undefined ? ` (the largest TTL plus drift, ${Math.ceil(facts.guardMs)} ms)` : '';
  switch (why) {
    case 'fresh':
      return `a server first seen now that started recently${up}: a brand-new server cannot be told from one that restarted empty, so it counts once it has been up longer than the guard${guard}`;
    case 'restarted':
      if (facts.cluster)
        return `a shard's primary restarted (its run_id changed: ${facts.shard ?? 'a shard'})${up} and may have forgotten locks; the cluster counts once it has been up longer than the guard${guard}`;
      return `the server restarted (its run_id changed)${up} and may have forgotten locks; it counts once it has been up longer than the guard${guard}`;
    case 'failover':
      return facts.cluster
        ? `a shard's primary changed (a failover or promotion: ${facts.shard ?? 'another node'}); it may lack locks the old primary granted, so the cluster counts after the guard${guard}`
        : `another server now answers at this address (its run_id or master_replid changed: a failover or promotion)${up}; it may lack locks the old master granted, so it counts after the guard${guard}`;
    case 'slot-moved':
      return `slots moved to another shard (${facts.shard ?? 'resharding'}), which may lack the locks they held; the cluster counts after the guard${guard}`;
    default:
      return `its INFO has not been read yet since it connected`;
  }
}

function bytes(n: number): string {
  if (n === 0) return '0 (no limit)';
  const mb = n / 1_048_576;
  return mb >= 1 ? `${Number(mb.toFixed(1))}mb` : `${n} bytes`;
}

/**
 * What the master monitor tells an operator, each thing once: a master listed twice, an evicting or
 * unreadable `maxmemory-policy`, a master distrusted by the restart guard and when it is trusted
 * again. At start-up a refusal is collected (`refusals`) to be thrown; later it is logged as an error.
 */
export class MasterReports {
  readonly #warnedPolicy: (string | undefined)[];
  readonly #reportedDuplicate: (string | undefined)[];
  readonly #trustTimers: (NodeJS.Timeout | undefined)[];
  #closed = false;

  constructor(
    private readonly masters: readonly Master[],
    private readonly guard: RestartGuard | undefined,
    private readonly options: { readonly allowEvictingMasters: boolean; readonly logger: Required<RedlockLogger> },
  ) {
    const n = masters.length;
    this.#warnedPolicy = new Array<string | undefined>(n).fill(undefined);
    this.#reportedDuplicate = new Array<string | undefined>(n).fill(undefined);
    this.#trustTimers = new Array<NodeJS.Timeout | undefined>(n).fill(undefined);
  }

  /** Cancels the pending "trusted again" logs. */
  dispose(): void {
    this.#closed = true;
    for (const t of this.#trustTimers) clearTimeout(t);
  }

  /** Master `i` is distrusted by the restart guard: says for how long and why, then when it counts again. */
  distrusted(i: number, why: string, startup: boolean): void {
    const off = startup ? '; `restartGuard: false` turns it off, for tests only' : '';
    this.options.logger.log(
      `Master ${this.masters[i].label} is distrusted for ${this.guard!.distrustedFor(i)} ms: ${why} (\`restartGuard\`${off}).`,
    );
    this.scheduleTrustedLog(i);
  }

  /** Master `i`, distrusted before its last reading, counts again. */
  trustedAgain(i: number): void {
    this.options.logger.log(`Master ${this.masters[i].label} is trusted again.`);
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

  /** Master `i` is the same server as the earlier entry `j` (undefined: it is not a duplicate). True when it is. */
  duplicate(i: number, j: number | undefined, runId: string | undefined, refusals?: RedlockConfigError[]): boolean {
    if (j === undefined) {
      this.#reportedDuplicate[i] = undefined;
      return false;
    }
    const a = this.masters[j];
    const b = this.masters[i];
    const message = `\`nodes[${i}]\` (${b.label}) is the same Redis server as \`nodes[${j}]\` (${a.label}) (run_id ${runId}); one server has one vote, so \`nodes[${i}]\`'s vote is not counted. List each independent master once.`;
    if (refusals) refusals.push(new RedlockConfigError(`nodes[${i}]`, message));
    else if (this.#reportedDuplicate[i] !== a.label) this.options.logger.error(message);
    this.#reportedDuplicate[i] = a.label;
    return true;
  }

  /** Master `i`'s `maxmemory-policy`, when it can evict lock keys or cannot be read. True when its vote is refused. */
  policy(i: number, p: InfoProbe, refusals?: RedlockConfigError[]): boolean {
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
}
