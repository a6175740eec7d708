/**
 * Counting and read locks against the mutex and against redis-semaphore's `RedlockSemaphore`, in
 * the same run, on the same 5 masters: acquire then release at once (zero hold), `workers`
 * concurrent loops on ONE resource, for `seconds` each. A throughput and latency figure, not a
 * test: nothing asserts on speed.
 *
 *   npm run build && npx tsc -p bench/tsconfig.json && node dist-bench/bench/shared-locks.js [--seconds 5] [--workers 8]
 *
 * Subjects (all 5 masters, quorum 3):
 *   mutex       nestjs-quorum-lock, no `mode` (today's lock)
 *   read        nestjs-quorum-lock, `mode: 'read'` (readers share: no contention among them)
 *   sem n=4     nestjs-quorum-lock, `limit: 4`
 *   rs sem n=4  redis-semaphore `RedlockSemaphore(clients, key, 4)` with its defaults
 */
import { Redis } from 'ioredis';
import { RedlockSemaphore } from 'redis-semaphore';
import { Redlock } from 'nestjs-quorum-lock';
import { startRedisMasters } from '../tools/redis-masters.js';

const arg = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1]) || fallback;
const SECONDS = arg('--seconds', 5);
const WORKERS = arg('--workers', 8);
const TTL = 10_000;
/** `--fast`: retryDelay 10 ± 5 ms, the main bench's "fast" profile (default: the library's defaults). */
const FAST = process.argv.includes('--fast');

interface Subject {
  name: string;
  cycle(key: string): Promise<void>;
}

async function measure(
  subject: Subject,
  key: string,
): Promise<{ ops: number; p50: number; p99: number; errors: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + SECONDS * 1_000;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        try {
          await subject.cycle(key);
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { ops: latencies.length / SECONDS, p50: at(0.5), p99: at(0.99), errors };
}

async function main(): Promise<void> {
  const masters = await startRedisMasters(5);
  const redlock = new Redlock({
    nodes: masters.urls,
    restartGuard: false,
    retryCount: Infinity,
    acquireTimeout: 30_000,
    ...(FAST ? { retryDelay: 10, retryJitter: 5 } : {}),
  });
  await redlock.connect();
  const clients = masters.urls.map((url) => new Redis(url));
  const subjects: Subject[] = [
    { name: 'mutex (nestjs-quorum-lock)', cycle: async (key) => (await redlock.acquire(key, TTL)).release() },
    {
      name: "read (nestjs-quorum-lock, mode 'read')",
      cycle: async (key) => (await redlock.acquire(key, TTL, { mode: 'read' })).release(),
    },
    {
      name: 'semaphore n=4 (nestjs-quorum-lock, limit 4)',
      cycle: async (key) => (await redlock.acquire(key, TTL, { limit: 4 })).release(),
    },
    {
      name: 'semaphore n=4 (redis-semaphore RedlockSemaphore)',
      cycle: async (key) => {
        const sem = new RedlockSemaphore(clients, key, 4, { lockTimeout: TTL });
        await sem.acquire();
        await sem.release();
      },
    },
  ];
  console.log(
    `bench shared locks: 5 masters, ${WORKERS} concurrent loops on one resource, ${SECONDS} s each, zero hold, ${FAST ? 'retryDelay 10 ± 5 ms' : 'default retry settings'} (node ${process.version})`,
  );
  console.log('| subject | cycles/s | p50 ms | p99 ms | errors |\n| --- | ---: | ---: | ---: | ---: |');
  try {
    for (const [i, s] of subjects.entries()) {
      const r = await measure(s, `bench:shared:${i}`);
      console.log(`| ${s.name} | ${r.ops.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors} |`);
    }
  } finally {
    await redlock.close();
    for (const c of clients) c.disconnect();
    await masters.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
