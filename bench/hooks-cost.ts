/**
 * What the operations hooks cost when nobody listens (issue 13: "nothing of this costs anything when
 * unused"). One process, one build, the same 3 masters; four arms, interleaved round by round in a
 * rotating order so that drift of the shared machine falls on every arm alike:
 *
 * - off:        this library as shipped, no diagnostics subscriber (what every user without tracing runs);
 * - bypassed:   the same compiled library copied aside with `tracing()` patched to a constant `false`,
 *               so no hook is even checked (what the library would cost without the hooks);
 * - subscribed: as shipped, with a no-op subscriber on every channel (the cost when tracing is on);
 * - raw:        the hand-written ioredis quorum of bench/adapters/raw-quorum.ts, for reference.
 *
 * Each round runs `--concurrency` loops of acquire+release on distinct keys for `--seconds`. The
 * report gives each arm's median throughput and the per-round paired ratio off/bypassed (median and
 * min–max): within noise when the spread straddles 1. Not a test: nothing asserts on speed.
 *
 *   npm run bench:hooks [-- --rounds 7 --seconds 1 --concurrency 16]
 *
 * Writes docs/evidence/hooks-cost.md and docs/evidence/hooks-cost.json.
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import diagnostics from 'node:diagnostics_channel';
import { parseArgs } from 'node:util';
import { startRedisMasters } from '../tools/redis-masters.js';
import { rawQuorum } from './adapters/raw-quorum.js';
import type { LockAdapter } from './adapters/types.js';
import { pairedRatio, spread } from './stats.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    seconds: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '16' },
  },
});
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const TTL = 10_000;

type Arm = 'off' | 'bypassed' | 'subscribed' | 'raw';
const ARMS: Arm[] = ['off', 'bypassed', 'subscribed', 'raw'];

interface RedlockLike {
  connect(): Promise<void>;
  close(): Promise<void>;
  acquire(key: string, ttl: number): Promise<{ release(): Promise<void> }>;
}
type RedlockClass = new (options: { nodes: string[]; restartGuard: boolean }) => RedlockLike;

/** The built library (dist/, by `npm run build`), and a copy of it whose `tracing()` is always false. */
async function loadBuilds(): Promise<{ shipped: RedlockClass; bypassed: RedlockClass }> {
  const out = join(dirname(fileURLToPath(import.meta.url)), '..');
  const lib = join(out, '..', 'dist');
  const copy = join(out, 'lib-hooks-bypassed');
  rmSync(copy, { recursive: true, force: true });
  cpSync(lib, copy, { recursive: true });
  const file = join(copy, 'ops', 'diagnostics.js');
  const source = readFileSync(file, 'utf8');
  const patched = source.replace(/export const tracing = \(\) =>[\s\S]*?;\n/, 'export const tracing = () => false;\n');
  if (patched === source) throw new Error(`could not find tracing() in ${file}: update bench/hooks-cost.ts`);
  writeFileSync(file, patched);
  const load = async (dir: string) =>
    ((await import(pathToFileURL(join(dir, 'core', 'redlock.js')).href)) as { Redlock: RedlockClass }).Redlock;
  return { shipped: await load(lib), bypassed: await load(copy) };
}

async function adapterOf(Redlock: RedlockClass, urls: string[], name: string): Promise<LockAdapter> {
  // Fresh servers: the restart guard would distrust them for a TTL; they have forgotten nothing.
  const redlock = new Redlock({ nodes: urls, restartGuard: false });
  await redlock.connect();
  return {
    name,
    acquire: (key, ttl) => redlock.acquire(key, ttl),
    release: (lock) => (lock as { release(): Promise<void> }).release(),
    close: () => redlock.close(),
  };
}

/** acquire+release per second, `CONCURRENCY` loops on distinct keys, for `SECONDS`. */
async function round(adapter: LockAdapter, tag: string): Promise<number> {
  const deadline = performance.now() + SECONDS * 1_000;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, i) => {
      const key = `hooks:${tag}:${i}`;
      while (performance.now() < deadline) {
        await adapter.release(await adapter.acquire(key, TTL));
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1_000);
}

const CHANNELS = ['acquire', 'extend', 'release'].map((n) => diagnostics.tracingChannel(`nestjs-quorum-lock:${n}`));
const noop = { start() {}, end() {}, asyncStart() {}, asyncEnd() {}, error() {} };
const lostNoop = (): void => {};

async function main(): Promise<void> {
  const masters = await startRedisMasters(3);
  const { shipped, bypassed } = await loadBuilds();
  const adapters: Record<Arm, LockAdapter> = {
    off: await adapterOf(shipped, masters.urls, 'off'),
    bypassed: await adapterOf(bypassed, masters.urls, 'bypassed'),
    subscribed: await adapterOf(shipped, masters.urls, 'subscribed'),
    raw: await rawQuorum.create(masters.urls, 'default'),
  };
  const results: Record<Arm, number[]> = { off: [], bypassed: [], subscribed: [], raw: [] };
  try {
    for (const arm of ARMS) await round(adapters[arm], `warm-${arm}`); // JIT and connections warm
    for (let r = 0; r < ROUNDS; r++) {
      const order = ARMS.map((_, i) => ARMS[(i + r) % ARMS.length]);
      for (const arm of order) {
        if (arm === 'subscribed') {
          for (const c of CHANNELS) c.subscribe(noop);
          diagnostics.subscribe('nestjs-quorum-lock:lost', lostNoop);
        }
        try {
          results[arm].push(await round(adapters[arm], `${arm}-${r}`));
        } finally {
          if (arm === 'subscribed') {
            for (const c of CHANNELS) c.unsubscribe(noop);
            diagnostics.unsubscribe('nestjs-quorum-lock:lost', lostNoop);
          }
        }
      }
    }
  } finally {
    for (const a of Object.values(adapters)) await a.close();
    await masters.stop();
  }

  const ratios = (a: Arm, b: Arm) => spread(results[a].map((v, i) => v / results[b][i]));
  const rows = ARMS.map((arm) => ({ arm, ...spread(results[arm]) }));
  const offVsBypassed = ratios('off', 'bypassed');
  const subscribedVsOff = ratios('subscribed', 'off');
  const offVsRaw = ratios('off', 'raw');
  const when = new Date().toISOString();
  const command = `npm run bench:hooks -- --rounds ${ROUNDS} --seconds ${SECONDS} --concurrency ${CONCURRENCY}`;
  const fmt = (n: number) => n.toFixed(3);
  const md = [
    '# Hooks cost: acquire+release with nobody listening (bench/hooks-cost.ts)',
    '',
    `${when}; \`${command}\`; Node ${process.version}, ${availableParallelism()} cores (shared with other work), 3 local masters,`,
    `${CONCURRENCY} concurrent loops, ${ROUNDS} interleaved rounds of ${SECONDS} s per arm (rotating order).`,
    '',
    '| arm | median ops/s | min | max |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.arm} | ${Math.round(r.median)} | ${Math.round(r.min)} | ${Math.round(r.max)} |`),
    '',
    '| paired ratio (per round) | median | min | max |',
    '|---|---|---|---|',
    `| off / bypassed (the unused hooks' cost) | ${fmt(offVsBypassed.median)} | ${fmt(offVsBypassed.min)} | ${fmt(offVsBypassed.max)} |`,
    `| subscribed / off (cost when tracing is on) | ${fmt(subscribedVsOff.median)} | ${fmt(subscribedVsOff.min)} | ${fmt(subscribedVsOff.max)} |`,
    `| off / raw quorum (reference: a hand-written quorum client) | ${fmt(offVsRaw.median)} | ${fmt(offVsRaw.min)} | ${fmt(offVsRaw.max)} |`,
    '',
    `Median paired ratio off/bypassed: ${fmt(pairedRatio(results.off, results.bypassed))}.`,
    '',
  ].join('\n');
  const dir = dirname(fileURLToPath(import.meta.url)).replace(/\/dist-bench\/bench$/, '/docs/evidence');
  writeFileSync(join(dir, 'hooks-cost.md'), md);
  writeFileSync(
    join(dir, 'hooks-cost.json'),
    `${JSON.stringify({ when, command, rounds: ROUNDS, seconds: SECONDS, concurrency: CONCURRENCY, results, ratios: { offVsBypassed, subscribedVsOff, offVsRaw } }, null, 2)}\n`,
  );
  process.stdout.write(md);
}

await main();
