/**
 * What one entry of the plain mutex path costs a master: its CPU (the main thread's time on CPU, from
 * /proc/PID/schedstat) per acquire and per release, for each way of sending them. One local
 * `redis-server`; each phase sends `--batches` × `--entries` entries (pipelined, 64 commands in flight)
 * on distinct free keys (acquire) and then releases them (release), and the variants run
 * interleaved, `--rounds` times.
 *
 *   npm run bench:lua                                  # this checkout's scripts
 *   npm run bench:lua -- --ref main                    # and those of another commit, same run (with per-round ratios)
 *   npm run bench:lua -- --entries 16 --batches 400 --rounds 9 --pin
 *   npm run bench:lua -- --batch-lua try=my-batch.lua  # a batch script of your own (its text as Redis runs it)
 *
 * Variants: `raw` (`SET NX PX` and the bare compare-and-delete script, one command per entry, as
 * raw auto-pipelined ioredis sends them), `alone` (the library's own command per entry: `SET NX PX`
 * and plain-release.lua), `batch` (plain-batch.lua with `--entries` entries per call), and `floor` (a
 * script taking the batch's arguments and returning one reply per entry without touching a key: what
 * any script call of that shape costs). `--pin` puts the server and this process on the last core.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { SCRIPTS } from '../lib/lua/scripts.generated.js';
import { startRedisMasters } from '../tools/redis-masters.js';

const { values } = parseArgs({
  options: {
    entries: { type: 'string', default: '32' },
    batches: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '7' },
    ref: { type: 'string' },
    'batch-lua': { type: 'string', multiple: true, default: [] },
    pin: { type: 'boolean', default: false },
  },
});
const ENTRIES = Number(values.entries);
const BATCHES = Number(values.batches);
const ROUNDS = Number(values.rounds);
const IN_FLIGHT = 64;
const TTL = '10000';
const RESERVE = '10000';

const COMPARE_AND_DELETE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;
const FLOOR = `local r = {} for i = 1, #KEYS do r[i] = 1 end return r`;

/** The script `name` of the generated table at git `ref` (its Lua text). */
function scriptAt(ref: string, name: string): string {
  const table = execFileSync('git', ['show', `${ref}:lib/lua/scripts.generated.ts`], { encoding: 'utf8' });
  const m = new RegExp(`\\b${name}: \\{ command: '[^']*', lua: ("(?:[^"\\\\]|\\\\.)*")`).exec(table);
  if (!m) throw new Error(`--ref ${ref}: no script ${name} in its lib/lua/scripts.generated.ts`);
  return JSON.parse(m[1]) as string;
}

/** How a variant sends `n` entries: one array of commands (each `[name, ...args]`) per phase. */
interface Variant {
  name: string;
  acquire(keys: string[], value: (i: number) => string): string[][];
  release(keys: string[], value: (i: number) => string): string[][];
}

const sha = (client: Redis, lua: string) => client.script('LOAD', lua) as Promise<string>;

/** One command per entry: `SET NX PX` and a one-key release script. */
function perEntry(name: string, releaseSha: string): Variant {
  return {
    name,
    acquire: (keys, value) => keys.map((k, i) => ['set', k, value(i), 'PX', TTL, 'NX']),
    release: (keys, value) => keys.map((k, i) => ['evalsha', releaseSha, '1', k, value(i), RESERVE]),
  };
}

/** `ENTRIES` entries per call of a batch script (KEYS: the keys; ARGV: op, value, ms per entry). */
function batched(name: string, batchSha: string): Variant {
  const calls = (op: string, ms: string) => (keys: string[], value: (i: number) => string) => {
    const out: string[][] = [];
    for (let start = 0; start < keys.length; start += ENTRIES) {
      const group = keys.slice(start, start + ENTRIES);
      const args = group.flatMap((_, j) => [op, value(start + j), ms]);
      out.push(['evalsha', batchSha, String(group.length), ...group, ...args]);
    }
    return out;
  };
  return { name, acquire: calls('a', TTL), release: calls('r', RESERVE) };
}

/** CPU time of the process's main thread so far, µs. */
const cpuOf = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;

/** Sends `commands`, at most IN_FLIGHT unanswered, and fails on any error reply. */
async function send(client: Redis, commands: string[][]): Promise<void> {
  for (let start = 0; start < commands.length; start += IN_FLIGHT) {
    const pipeline = client.pipeline(commands.slice(start, start + IN_FLIGHT));
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
  }
}

const redis = await startRedisMasters(1);
const client = new Redis(redis.urls[0]);
try {
  const pid = redis.masters[0].pid!;
  if (values.pin) {
    const core = String(availableParallelism() - 1);
    for (const p of [pid, process.pid])
      execFileSync('taskset', ['-a', '-p', '-c', core, String(p)], { stdio: 'ignore' });
  }
  const variants: Variant[] = [
    perEntry('raw', await sha(client, COMPARE_AND_DELETE)),
    perEntry('alone', await sha(client, SCRIPTS.plainRelease.lua)),
    batched('batch', await sha(client, SCRIPTS.plainBatch.lua)),
    batched('floor', await sha(client, FLOOR)),
  ];
  if (values.ref) {
    variants.push(perEntry(`alone@${values.ref}`, await sha(client, scriptAt(values.ref, 'plainRelease'))));
    variants.push(batched(`batch@${values.ref}`, await sha(client, scriptAt(values.ref, 'plainBatch'))));
  }
  for (const spec of values['batch-lua']) {
    const [name, file] = spec.split('=');
    variants.push(batched(name, await sha(client, readFileSync(file, 'utf8'))));
  }
  const n = BATCHES * ENTRIES;
  const value = (i: number) => `v${String(i).padStart(21, '0')}`;
  const results = new Map(variants.map((v) => [v.name, { acquire: [] as number[], release: [] as number[] }]));
  for (let round = -1; round < ROUNDS; round++) {
    for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
      const keys = Array.from({ length: n }, (_, i) => `cost:${v.name}:${round}:${i}`);
      const t0 = cpuOf(pid);
      await send(client, v.acquire(keys, value));
      const t1 = cpuOf(pid);
      await send(client, v.release(keys, value));
      const t2 = cpuOf(pid);
      if (round < 0) continue; // warm-up
      results.get(v.name)!.acquire.push((t1 - t0) / n);
      results.get(v.name)!.release.push((t2 - t1) / n);
    }
    if ((await client.dbsize()) !== 0) throw new Error('a release left keys behind');
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const fmt = (xs: number[]) =>
    `${median(xs).toFixed(2).padStart(6)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  console.log(
    `master CPU per entry, µs: median (min–max) of ${ROUNDS} rounds; ${BATCHES} calls × ${ENTRIES} entries per batch phase`,
  );
  console.log(`${'variant'.padEnd(16)} ${'acquire'.padEnd(22)} ${'release'.padEnd(22)} cycle`);
  for (const [name, r] of results) {
    const cycle = r.acquire.map((a, i) => a + r.release[i]);
    console.log(`${name.padEnd(16)} ${fmt(r.acquire).padEnd(22)} ${fmt(r.release).padEnd(22)} ${fmt(cycle)}`);
  }
  const cycles = (name: string) => results.get(name)!.acquire.map((a, i) => a + results.get(name)!.release[i]);
  for (const name of values.ref ? ['alone', 'batch'] : []) {
    const mine = cycles(name);
    const theirs = cycles(`${name}@${values.ref}`);
    console.log(`${name} ÷ ${name}@${values.ref}, per round: ${fmt(mine.map((c, i) => c / theirs[i]))}`);
  }
} finally {
  client.disconnect();
  await redis.stop();
}
