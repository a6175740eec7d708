/**
 * A regression check for a bug the chaos run found (fixed in `lib/backend/health/restart-guard.ts`, which now
 * counts one second less uptime than Redis reports). Before the fix, with the restart guard ON, a
 * master that restarted empty could vote again about 10 ms after the client reconnected, instead of
 * after the TTL, and two holders then had the lock at once.
 *
 *   npm run build && npx tsc -p chaos/tsconfig.json && node dist-chaos/chaos/repro-guard-uptime.js
 *
 * Why: Redis computes `uptime_in_seconds` as `server.unixtime - server.stat_starttime`, two
 * wall-clock readings each truncated to the second. A server started at 12:00:00.950 reports an
 * uptime of 1 s at 12:00:01.010, after 60 ms. The guard read 1000 ms and distrusted the master for
 * only `(TTL + drift) - 1000` ms, which is 12 ms for a 1 s TTL. The reported value can
 * overstate the real uptime by almost a second, so it did not "err on the long side".
 *
 * The script:
 * 1. Just before a wall-clock second ends, A locks `res` (TTL 1 s) on five masters, and the script
 *    kills m1, m2 and m3 with -9 and restarts them empty.
 * 2. Just after the second turns, B (a fresh Redlock, TTL 1 s, default guard: every TTL in use is
 *    1 s, so the guard is configured correctly) connects. Its guard reads an uptime of 1 s from
 *    each restarted master.
 * 3. B acquires `res` within milliseconds, while A's lock is still valid for most of its second.
 *
 * The timing depends on the wall clock, so the script tries up to 5 times. It exits 1 when B got
 * the lock while A still held it (the bug), and 0 when every try was refused (fixed).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from 'nestjs-quorum-lock';
import { startRedisMasters } from '../tools/redis-masters.js';
import { Inspector } from './nemesis.js';

async function main(): Promise<number> {
  const masters = await startRedisMasters(5);
  const inspector = new Inspector(masters.urls);
  await inspector.connect();
  try {
    // Let every master be up for longer than the guard window before A connects.
    await sleep(2_200);
    for (let attempt = 1; attempt <= 5; attempt++) {
      const resource = `res-${attempt}`;
      const a = new Redlock({ nodes: masters.urls, ttl: 1_000 });
      await a.connect();
      // Lock, then kill and restart, just before the wall-clock second turns.
      while (Date.now() % 1_000 < 840 || Date.now() % 1_000 > 860) await sleep(1);
      const held = await a.acquire(resource, 1_000); // not renewed: valid for ~1 s
      await Promise.all([0, 1, 2].map((i) => masters.masters[i].kill()));
      await Promise.all([0, 1, 2].map((i) => masters.masters[i].restart()));
      const restartedAt = Date.now();
      while (Date.now() % 1_000 > 900 || Date.now() % 1_000 < 30) await sleep(1); // into the next second
      const uptimes = await Promise.all([0, 1, 2].map((i) => inspector.uptime(i)));
      const b = new Redlock({ nodes: masters.urls, ttl: 1_000, retryCount: 5, retryDelay: 30, retryJitter: 10 });
      await b.connect();
      const upFor = Date.now() - restartedAt;
      let outcome: string;
      let broken = false;
      try {
        const second = await b.acquire(resource, 1_000);
        broken = held.isHeld;
        outcome = `B GOT the lock ${Date.now() - restartedAt} ms after the restart, while A's lock is ${held.isHeld ? `still valid for ${Math.round(held.validity)} ms` : 'no longer valid'}`;
        await second.release();
      } catch (error) {
        outcome = `B was refused (${(error as Error).message.slice(0, 100)}…)`;
      }
      console.log(
        `try ${attempt}: restarted m1 m2 m3 at .${String(restartedAt % 1_000).padStart(3, '0')} s; ${upFor} ms later INFO says uptime_in_seconds = ${uptimes.join(', ')}; ` +
          `B's guard distrusts them for ${b.distrustedFor
            .slice(0, 3)
            .map((ms) => Math.round(ms))
            .join(', ')} ms. ${outcome}`,
      );
      await held.release();
      await Promise.all([a.close(), b.close()]);
      if (broken) {
        console.log('BUG: with the restart guard on, a second holder got the lock while the first was still valid.');
        return 1;
      }
      await sleep(2_200); // the guard window, for the next try
    }
    console.log('not reproduced in 5 tries');
    return 0;
  } finally {
    inspector.close();
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
