import { driftOf, now } from '../util/clock.js';
import type { Master } from '../backend/master.js';
import {
  ownerField,
  replyAt,
  type KeySeen,
  type LockInspection,
  type MasterHolding,
  type MasterReads,
  type OwnerSeen,
  type SharedHolderInspection,
  type Tally,
} from '../kinds/inspection.js';
import { KINDS } from '../kinds/lock-mode.js';

export type {
  LockInspection,
  MasterHolding,
  MasterPermit,
  MasterReader,
  PermitSlotInspection,
  PermitsInspection,
  SharedHolderInspection,
} from '../kinds/inspection.js';

// `inspect()`: the lock key read on every master at one instant, then each kind's reader
// (lib/kinds/*/…: the mutex's holder, the readers and a waiting writer, the permit slots) adds its
// part, master by master and then across the masters.

/** Reads a key, its PTTL and its fencing counter on every master, and asks each kind's reader; writes nothing. */
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
  const validityOf = (pttls: readonly number[]): number => {
    if (pttls.length < quorum) return 0;
    // The quorum holds until the quorum-th longest-lived of its keys expires.
    const kth = [...pttls].sort((a, b) => b - a)[quorum - 1];
    return Math.max(0, Math.floor(kth - elapsed - driftOf(kth, driftFactor)));
  };
  const summarize = (entries: Iterable<[string, number[]]>): SharedHolderInspection[] =>
    [...entries]
      .map(([value, pttls]) => ({
        value,
        ...ownerField(value),
        agreeing: pttls.length,
        held: pttls.length >= quorum,
        validity: validityOf(pttls),
      }))
      .sort((a, b) => b.agreeing - a.agreeing || b.validity - a.validity);
  const tally: Tally = { quorum, validityOf, summarize };
  const parts = KINDS.map((kind) => kind.reader.summarize(holdings, tally));
  const counters = holdings.map((h) => h.fencingCounter).filter((c): c is number => typeof c === 'number');
  return {
    resource,
    key,
    masters: holdings,
    quorum,
    held: false,
    holder: null,
    agreeing: 0,
    validity: 0,
    readers: [],
    writerWaiting: false,
    ...Object.assign({}, ...parts.map((p) => p.fields)),
    // The first kind that names an owner (the exclusive holder, else the most agreeing reader or permit).
    owner: parts.find((p) => p.owner)?.owner?.owner ?? null,
    ...(fencing || counters.length > 0 ? { fencingCounter: counters.length ? Math.max(...counters) : 0 } : {}),
  } as LockInspection;
}

/** Settles `work` within `timeoutMs`, else rejects naming the bound. */
async function within<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const settle = (p: Promise<unknown>): Promise<[Error | null, unknown]> =>
  p.then(
    (v): [Error | null, unknown] => [null, v],
    (e: unknown): [Error | null, unknown] => [e instanceof Error ? e : new Error(String(e)), null],
  );

/**
 * The lock key at one instant (one MULTI/EXEC, nothing but reads: no script): its type and holder (a
 * string for the writer, a sorted set of readers scored by their server-time expiry), its PTTL,
 * the server's clock; and the fencing counter, in the same batch on a plain master and on its own
 * on a cluster node (another slot).
 */
async function readKey(
  master: Master,
  key: string,
  counterKey: string,
  timeoutMs: number,
): Promise<[Error | null, unknown][]> {
  const reads = (client: Pick<Master['client'], 'multi'>): ReturnType<Master['client']['multi']> =>
    client.multi().type(key).get(key).zrange(key, '0', '-1', 'WITHSCORES').pttl(key).time();
  if (!master.cluster) return (await within(reads(master.client).get(counterKey).exec(), timeoutMs)) ?? [];
  const cluster = master.cluster as unknown as Pick<Master['client'], 'multi' | 'get'>;
  const [own, counter] = await within(Promise.all([reads(cluster).exec(), settle(cluster.get(counterKey))]), timeoutMs);
  return [...(own ?? []), counter];
}

/** One master's holding: the lock key, then every kind's reader (in parallel); a master that fails is an `error`. */
async function readHolding(master: Master, key: string, counterKey: string, timeoutMs: number): Promise<MasterHolding> {
  try {
    const first = await readKey(master, key, counterKey, timeoutMs);
    const [seconds, micros] = (replyAt(first, 4) as [string, string]).map(Number);
    const seen: KeySeen = {
      type: replyAt(first, 0) as string,
      value: replyAt(first, 1, true) as string | null,
      zset: (replyAt(first, 2, true) as string[] | null) ?? [],
      pttl: replyAt(first, 3) as number,
      serverNow: seconds * 1000 + Math.floor(micros / 1000),
    };
    const rawCounter = replyAt(first, 5, true) as string | null;
    const reads: MasterReads = { master, exec: async (batch) => (await within(batch.exec(), timeoutMs)) ?? [] };
    const parts = await Promise.all(KINDS.map((kind) => kind.reader.readMaster(reads, key, seen)));
    // Who holds it here: the exclusive holder, else the shared holder with the longest time left.
    let owner: OwnerSeen | undefined;
    for (const part of parts) if (part.owner && (!owner || part.owner.pttl > owner.pttl)) owner = part.owner;
    return {
      master: master.label,
      holder: null,
      ...Object.assign({}, ...parts.map((p) => p.fields)),
      owner: owner?.owner ?? null,
      pttl: seen.pttl > 0 ? seen.pttl : null,
      fencingCounter: rawCounter === null ? null : Number(rawCounter),
    } as MasterHolding;
  } catch (error) {
    return {
      master: master.label,
      holder: null,
      owner: null,
      pttl: null,
      error: error instanceof Error ? error : new Error(String(error)),
    };
  }
}
