/**
 * The trap of counting locks on a quorum, shown on real redis-servers: a "majority of per-master
 * counters" (each master admits up to `limit` holders; a holder counts when a majority admitted it)
 * is NOT a semaphore for limit > 1. With 3 masters and a limit of 2, three holders can each win a
 * majority: {m1,m2}, {m1,m3}, {m2,m3}; every master admitted only two, yet three hold at once.
 * The library's construction (n permit slots, each an ordinary Redlock mutex) is run through the
 * same faults and keeps to the limit. See docs/read-write-and-counting-locks.md.
 *
 *   npm run build && npx tsc -p chaos/tsconfig.json && node dist-chaos/chaos/repro-semaphore-majority.js
 *
 * Part 1 (partitions, deterministic): A cannot reach m3, B cannot reach m2, C cannot reach m1 (TCP
 * proxies; no master fails). Each asks all three masters in turn.
 * Part 2 (no fault at all, races): three clients ask at the same moment, many rounds; the masters
 * see the requests in different orders, and sometimes three win.
 *
 * Exits 0 when the unsafe construction exceeded the limit (the argument is borne out) and the
 * library never did; 1 otherwise.
 */
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from 'nestjs-quorum-lock';
import { startRedisMasters } from '../tools/redis-masters.js';
import { ProxyFarm } from './proxy.js';

const LIMIT = 2;
const CLIENTS = ['A', 'B', 'C'];

/** Per master: admit the holder if fewer than `limit` are admitted (the unsafe construction). */
const ADMIT = `
if redis.call('scard', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('sadd', KEYS[1], ARGV[1])
  return 1
end
return 0`;

/** The unsafe "majority of per-master counters" client. */
class MajorityOfCounters {
  readonly clients: Redis[];
  constructor(urls: readonly string[]) {
    this.clients = urls.map((url) => {
      const c = new Redis(url, {
        commandTimeout: 200,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        retryStrategy: () => 50,
      });
      c.on('error', () => undefined);
      return c;
    });
  }
  async connect(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.ping().catch(() => undefined)));
  }
  /** True when a majority admitted `holder`. */
  async acquire(resource: string, holder: string): Promise<boolean> {
    const votes = await Promise.all(
      this.clients.map((c) =>
        c.eval(ADMIT, 1, resource, holder, LIMIT).then(
          (r) => r === 1,
          () => false,
        ),
      ),
    );
    return votes.filter(Boolean).length > this.clients.length / 2;
  }
  close(): void {
    for (const c of this.clients) c.disconnect();
  }
}

async function main(): Promise<number> {
  const masters = await startRedisMasters(3);
  const farm = ProxyFarm.create(masters.masters.map((m) => m.port));
  const direct = masters.urls.map((url) => new Redis(url));
  const unsafe: MajorityOfCounters[] = [];
  const safe: Redlock[] = [];
  try {
    for (const id of CLIENTS) {
      const nodes = await farm.nodesFor(id);
      unsafe.push(new MajorityOfCounters(nodes));
      safe.push(new Redlock({ nodes, restartGuard: false, commandTimeout: 200, retryCount: 0 }));
    }
    await Promise.all([...unsafe.map((u) => u.connect()), ...safe.map((r) => r.connect())]);

    // Part 1: each client is cut from a different master.
    CLIENTS.forEach((id, i) => farm.set([id], [2 - i], { kind: 'cut' }));
    await sleep(100);
    let unsafeHolders = 0;
    for (const [i, u] of unsafe.entries()) if (await u.acquire('unsafe:res', CLIENTS[i])) unsafeHolders++;
    const admitted = await Promise.all(direct.map((c) => c.smembers('unsafe:res')));
    console.log(`1. majority of per-master counters, limit ${LIMIT}, partitions A|m3 B|m2 C|m1:`);
    admitted.forEach((members, m) =>
      console.log(`   m${m + 1} admitted ${members.sort().join(', ')} (${members.length} of ${LIMIT})`),
    );
    console.log(`   ${unsafeHolders} holders at once${unsafeHolders > LIMIT ? ` > limit ${LIMIT}: UNSAFE` : ''}`);

    const permits = await Promise.all(
      safe.map((r) => r.tryAcquire('safe:res', 10_000, { limit: LIMIT }).catch(() => null)),
    );
    const safeHolders = permits.filter(Boolean).length;
    console.log(`   the library's permits (limit ${LIMIT}) under the same partitions: ${safeHolders} holders`);
    await Promise.all(permits.flatMap((p) => (p ? [p.release()] : [])));
    farm.healAll();
    await sleep(200);

    // Part 2: no faults; concurrent requests, many rounds.
    const rounds = 300;
    let unsafeViolations = 0;
    let safeViolations = 0;
    for (let round = 0; round < rounds; round++) {
      const key = `unsafe:race:${round}`;
      const wins = await Promise.all(unsafe.map((u, i) => u.acquire(key, CLIENTS[i])));
      if (wins.filter(Boolean).length > LIMIT) unsafeViolations++;
      const locks = await Promise.all(
        safe.map((r) => r.tryAcquire(`safe:race:${round}`, 10_000, { limit: LIMIT }).catch(() => null)),
      );
      if (locks.filter(Boolean).length > LIMIT) safeViolations++;
      await Promise.all(locks.flatMap((l) => (l ? [l.release()] : [])));
    }
    console.log(
      `2. no faults, ${rounds} rounds of 3 simultaneous requests: the unsafe construction had more than ${LIMIT} holders in ${unsafeViolations} rounds; the library in ${safeViolations}`,
    );

    const borneOut = unsafeHolders > LIMIT && safeHolders <= LIMIT && safeViolations === 0;
    console.log(
      borneOut
        ? `UNSAFE as argued: a majority of per-master counters let ${unsafeHolders} hold a limit of ${LIMIT}; permit slots never exceeded it.`
        : 'Not reproduced: see the lines above.',
    );
    return borneOut ? 0 : 1;
  } finally {
    await Promise.all(safe.map((r) => r.close()));
    for (const u of unsafe) u.close();
    for (const c of direct) c.disconnect();
    await farm.close();
    await masters.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
