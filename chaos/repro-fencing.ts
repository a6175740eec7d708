/**
 * A deterministic reproduction: fencing tokens go backwards when ONE master (a minority) restarts
 * empty, restart guard on. The chaos run finds this at random ("bare quorum" rounds). Here it
 * happens every time.
 *
 *   npm run build && npx tsc -p chaos/tsconfig.json && node dist-chaos/chaos/repro-fencing.js
 *
 * 1. B locks `res` over all 5 masters: token 1 is on m1..m5.
 * 2. A is cut off from m4 and m5 (a partition; no master fails). It locks `res` three times, and its
 *    fence writes reach only m1..m3: tokens 2, 3 and 4. A commits with 2 and 3. It keeps the lock
 *    with token 4 and then stalls (a GC pause) before it writes.
 * 3. m3 is killed and restarted without persistence. That is one master, a minority. The restart
 *    guard waits until m3 has been up longer than the TTL. By then A's lock has expired.
 * 4. m1 and m2 are slow (SIGSTOP, a minority) while B locks `res` again. B's quorum is m3 m4 m5,
 *    whose counters are 0, 1 and 1, so B gets token 2.
 * 5. B's write with token 2 is refused (the register has seen 3). A wakes up and writes with
 *    token 4, which is accepted: a stale write, from a holder whose lock had expired.
 *
 * Exits 1 when the bug shows (B's token is not above A's), 0 otherwise.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from 'nestjs-quorum-lock';
import { startRedisMasters } from '../tools/redis-masters.js';
import { Inspector } from './nemesis.js';
import { ProxyFarm } from './proxy.js';
import { FencedRegister } from './register.js';

const TTL = 1_000;

async function main(): Promise<number> {
  const [masters, registerServer] = await Promise.all([startRedisMasters(5), startRedisMasters(1)]);
  const farm = ProxyFarm.create(masters.masters.map((m) => m.port));
  const inspector = new Inspector(masters.urls);
  const register = new FencedRegister(registerServer.urls[0]);
  let a: Redlock | undefined;
  let b: Redlock | undefined;
  try {
    await Promise.all([inspector.connect(), register.connect()]);
    const options = { ttl: TTL, fencing: true, commandTimeout: 100, retryCount: 20, retryDelay: 50, retryJitter: 10 };
    a = new Redlock({ ...options, nodes: await farm.nodesFor('A') });
    b = new Redlock({ ...options, nodes: await farm.nodesFor('B') });
    await Promise.all([a.connect(), b.connect()]);
    const waitTrusted = async (r: Redlock) => {
      while (r.distrustedFor.some((ms) => ms > 0)) await sleep(50);
    };
    await Promise.all([waitTrusted(a), waitTrusted(b)]);

    const first = await b.acquire('res');
    console.log(`1. B holds res with token ${first.fencingToken} (written to m1..m5)`);
    await register.write('res', first.fencingToken, 'B1');
    await first.release();

    farm.set(['A'], [3, 4], { kind: 'cut' });
    await sleep(50);
    for (const n of [1, 2]) {
      const lock = await a.acquire('res');
      console.log(
        `2. A (cut off from m4 m5) holds res with token ${lock.fencingToken}: ${await register.write('res', lock.fencingToken, `A${n}`)}`,
      );
      await lock.release();
    }
    const stale = await a.acquire('res'); // never renewed: A stalls from here on
    console.log(`   A holds res with token ${stale.fencingToken}, then stalls before its write`);

    await masters.masters[2].kill();
    await masters.masters[2].restart();
    console.log('3. m3 killed -9 and restarted empty (one master of five)');
    for (let waited = 0; b.distrustedFor[2] === 0 && waited < 5_000; waited += 20) await sleep(20); // B reconnects and sees the restart
    console.log(`   B's restart guard distrusts m3 for ${Math.round(b.distrustedFor[2])} ms`);
    await waitTrusted(b);
    console.log(`   the restart guard trusts m3 again; A's lock is no longer valid (isHeld: ${stale.isHeld})`);

    masters.masters[0].pause();
    masters.masters[1].pause();
    let next;
    try {
      next = await b.acquire('res');
    } finally {
      masters.masters[0].resume();
      masters.masters[1].resume();
    }
    console.log(`4. with m1 m2 slow, B holds res with token ${next.fencingToken} (its quorum: m3 m4 m5)`);
    console.log(`5. B writes with token ${next.fencingToken}: ${await register.write('res', next.fencingToken, 'B2')}`);
    await next.release();
    console.log(
      `   A wakes up and writes with token ${stale.fencingToken}: ${await register.write('res', stale.fencingToken, 'A-stale')}`,
    );
    await stale.release();
    const broken = !(next.fencingToken! > stale.fencingToken!);
    console.log(
      broken
        ? `BUG: B was granted the lock after A, yet its token ${next.fencingToken} is not above A's ${stale.fencingToken}; the register now holds A's stale write.`
        : `OK: B's token ${next.fencingToken} is above A's ${stale.fencingToken}.`,
    );
    return broken ? 1 : 0;
  } finally {
    for (const m of masters.masters) {
      try {
        m.resume();
      } catch {
        // not running
      }
    }
    await Promise.all([a?.close(), b?.close()]);
    register.close();
    inspector.close();
    await farm.close();
    await Promise.all([masters.stop(), registerServer.stop()]);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
