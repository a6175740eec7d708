import { driftOf, now } from './clock.js';
import type { Master } from './master.js';

/**
 * What one master holds for a resource, as read by `inspect()`.
 *
 * @example
 * view.masters.filter((m) => m.error).map((m) => m.master); // masters that did not answer
 * @publicApi
 */
export interface MasterHolding {
  /** The master, as `host:port`. */
  readonly master: string;
  /** The holder's value on this master, or null when the key is absent (or the master failed). */
  readonly holder: string | null;
  /** Remaining time-to-live of the key on this master in ms, or null when absent (or failed). */
  readonly pttl: number | null;
  /** This master's fencing counter for the resource (`fencingPrefix + resource`), or null when it has none. */
  readonly fencingCounter?: number | null;
  /** Why the master could not be read (connection down, timeout…). */
  readonly error?: Error;
}

/**
 * A read-only view of one resource across the masters: `RedlockService.inspect(resource)`.
 *
 * @example
 * const view = await redlock.inspect('order:42');
 * if (view.held) console.log(`held for at least ${view.validity} ms more by ${view.agreeing} of ${view.masters.length} masters`);
 * @publicApi
 */
export interface LockInspection {
  /** The resource (without the key prefix). */
  readonly resource: string;
  /** The Redis key (`keyPrefix + resource`). */
  readonly key: string;
  /** Each master's holding, in `nodes` order. */
  readonly masters: readonly MasterHolding[];
  /** How many masters must agree. */
  readonly quorum: number;
  /** True when one holder has the key on a quorum of masters. */
  readonly held: boolean;
  /** The value held by the most masters (the quorum's holder when `held`), or null when no master holds the key. */
  readonly holder: string | null;
  /** How many masters hold `holder`. */
  readonly agreeing: number;
  /**
   * A conservative estimate, in ms, of how long the quorum keeps holding: the quorum-th longest
   * remaining TTL among the holder's masters, less the time the reads took and the drift allowance.
   * 0 when not held.
   */
  readonly validity: number;
  /** The highest fencing counter any master reported, when fencing is in use; tokens issued so far are at most this. */
  readonly fencingCounter?: number;
}

/** Reads a key, its PTTL and its fencing counter on every master, writing nothing. */
export async function inspectResource(
  masters: readonly Master[],
  quorum: number,
  timeoutMs: number,
  driftFactor: number,
  resource: string,
  key: string,
  counterKey: string,
  fencing: boolean,
): Promise<LockInspection> {
  const started = now();
  const holdings = await Promise.all(masters.map((m) => readHolding(m, key, counterKey, timeoutMs)));
  const elapsed = now() - started;
  const tally = new Map<string, number[]>();
  for (const h of holdings) {
    if (h.holder === null || h.pttl === null) continue;
    const list = tally.get(h.holder) ?? [];
    list.push(h.pttl);
    tally.set(h.holder, list);
  }
  let holder: string | null = null;
  let pttls: number[] = [];
  for (const [value, list] of tally) {
    if (list.length > pttls.length) {
      holder = value;
      pttls = list;
    }
  }
  const held = pttls.length >= quorum;
  let validity = 0;
  if (held) {
    // The quorum holds until the quorum-th longest-lived of its keys expires.
    const kth = pttls.sort((a, b) => b - a)[quorum - 1];
    validity = Math.max(0, Math.floor(kth - elapsed - driftOf(kth, driftFactor)));
  }
  const counters = holdings.map((h) => h.fencingCounter).filter((c): c is number => typeof c === 'number');
  return {
    resource,
    key,
    masters: holdings,
    quorum,
    held,
    holder,
    agreeing: pttls.length,
    validity,
    ...(fencing || counters.length > 0 ? { fencingCounter: counters.length ? Math.max(...counters) : 0 } : {}),
  };
}

async function readHolding(master: Master, key: string, counterKey: string, timeoutMs: number): Promise<MasterHolding> {
  let timer: NodeJS.Timeout | undefined;
  try {
    // MULTI/EXEC: the value and its TTL read at one instant; reads only.
    // On a cluster the lock key and its counter may be in different slots: read them apart there.
    const batch = master.cluster
      ? { exec: () => readApart(master, key, counterKey) }
      : master.client.multi().get(key).pttl(key).get(counterKey);
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      timer.unref();
    });
    const replies = (await Promise.race([batch.exec(), timeout])) ?? [];
    const failed = replies.find(([error]) => error);
    if (failed) throw failed[0];
    const value = replies[0]?.[1] as string | null;
    const pttl = replies[1]?.[1] as number;
    const raw = replies[2]?.[1];
    const counter = raw === null || raw === undefined ? null : Number(raw);
    const present = value !== null && pttl > 0;
    return {
      master: master.label,
      holder: present ? value : null,
      pttl: present ? pttl : null,
      fencingCounter: counter,
    };
  } catch (error) {
    return {
      master: master.label,
      holder: null,
      pttl: null,
      error: error instanceof Error ? error : new Error(String(error)),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The three reads of `readHolding` as separate commands, in MULTI's reply shape (value and TTL in one slot, one MULTI). */
async function readApart(master: Master, key: string, counterKey: string): Promise<[Error | null, unknown][]> {
  const [pair, counter] = await Promise.all([master.client.multi().get(key).pttl(key).exec(), master.client.get(counterKey)]);
  return [...(pair ?? []), [null, counter]];
}
