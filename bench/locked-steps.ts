/**
 * What each step from `acquire()` + `release()` to a `@Locked` method costs the caller's CPU, without
 * HTTP: `callers` concurrent callers on distinct keys, interleaved in each round, client CPU
 * (`process.cpuUsage()`) per cycle:
 * - `acquire+release`: the throughput workload's cycle;
 * - `acquire+release (ALS on)`: the same once AsyncLocalStorage's promise hooks are on (the first
 *   `using()` of a process turns them on for good, on Node 20 and 22);
 * - `using()`: reentrancy frame, renewal timer, hold bookkeeping; `using() with options`: the same with
 *   an options object, as `@Locked` passes one;
 * - `@Locked`: the decorator over `using()` (a provider of a Nest application context).
 * The ALS arms run last (the hooks cannot be turned off again in this process).
 *   npm run build && rm -rf dist-bench && npx tsc -p bench/tsconfig.json
 *   node dist-bench/bench/locked-steps.js [--rounds 5] [--ms 1500] [--callers 32] [--masters 3] [--pin] [--arms 'using()']
 */
import 'reflect-metadata';
import { AsyncLocalStorage } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Locked, Redlock, RedlockModule } from 'nestjs-quorum-lock';
import { pin, startMasterSets } from './masters.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    ms: { type: 'string', default: '1500' },
    callers: { type: 'string', default: '32' },
    masters: { type: 'string', default: '3' },
    pin: { type: 'boolean', default: false },
    /** Only these arms (comma-separated names), e.g. for a profile of one. */
    arms: { type: 'string' },
    /** Writes a V8 CPU profile of the measured rounds (warm-up excluded) to this file. */
    profile: { type: 'string' },
  },
});

const TTL = 10_000;
// Typed as a call's options; `ttl` rides along at run time, as it does from the decorator.
const LOCKED_OPTIONS = { ttl: TTL } as { onBusy?: 'wait' };

@Injectable()
class Work {
  @Locked('step:#key', TTL)
  async locked(key: string): Promise<number> {
    return key.length;
  }
}

const masterCount = Number(values.masters);
const sets = await startMasterSets([masterCount]);
const urls = sets.sets.get(masterCount)!.urls;
if (values.pin) console.log(pin('same', sets.serverPids()));

@Module({ imports: [RedlockModule.forRoot({ nodes: [...urls], logger: false })], providers: [Work] })
class StepsModule {}

const redlock = new Redlock({ nodes: [...urls], logger: false });
await redlock.connect();
const app = await NestFactory.createApplicationContext(StepsModule, { logger: false });
const work = app.get(Work);
await sets.olderThan(11_000); // the restart guard counts masters up for longer than the largest TTL

type Cycle = (key: string) => Promise<unknown>;
const cycles: [string, Cycle, boolean][] = [
  [
    'acquire+release',
    async (key) => {
      const lock = await redlock.acquire(key, TTL);
      await lock.release();
    },
    false,
  ],
  [
    'acquire+release (ALS on)',
    async (key) => {
      const lock = await redlock.acquire(key, TTL);
      await lock.release();
    },
    true,
  ],
  ['using()', (key) => redlock.using(key, TTL, async () => key.length), true],
  // What `@Locked('…', TTL)` passes: the same call with an options object (its TTL in it).
  ['using() with options', (key) => redlock.using(key, TTL, async () => key.length, LOCKED_OPTIONS), true],
  ['@Locked', (key) => work.locked(key), true],
];

let total = 0;
async function measure(cycle: Cycle, id: string): Promise<{ cpuUs: number; perSec: number }> {
  const end = performance.now() + Number(values.ms);
  let count = 0;
  const from = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: Number(values.callers) }, async (_, c) => {
      for (let n = 0; performance.now() < end; n++) {
        await cycle(`${id}:${c}:${n}`);
        count++;
      }
    }),
  );
  const used = process.cpuUsage(from);
  total += count;
  return { cpuUs: (used.user + used.system) / count, perSec: (count / (performance.now() - start)) * 1000 };
}

const session = new Session();
const results = new Map<string, number[]>();
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const phase of [false, true]) {
  if (phase) new AsyncLocalStorage<number>().enterWith(1); // what the first `using()` does
  const only = values.arms?.split(',');
  const arms = cycles.filter(([name, , als]) => als === phase && (!only || only.includes(name)));
  for (const [name, cycle] of arms) await measure(cycle, `warm-${name}`);
  if (arms.length > 0) total = 0;
  if (values.profile && arms.length > 0) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 250 });
    await session.post('Profiler.start');
  }
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [name, cycle] of arms.map((_, i) => arms[(i + round) % arms.length])) {
      const { cpuUs, perSec } = await measure(cycle, `r${round}-${name}`);
      results.set(name, [...(results.get(name) ?? []), cpuUs]);
      console.log(
        `[round ${round + 1}] ${name.padEnd(24)} ${cpuUs.toFixed(1)} µs CPU/cycle, ${Math.round(perSec)} cycles/s`,
      );
    }
  }
}
console.log(`\n| step (${values.callers} callers, ${masterCount} masters) | client CPU µs/cycle, median | min–max |`);
console.log('|---|---:|---:|');
for (const [name, xs] of results)
  console.log(`| ${name} | ${median(xs).toFixed(1)} | ${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)} |`);
if (values.profile) {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(values.profile, JSON.stringify(profile));
}
console.log(`cycles measured: ${total}`);
await app.close();
await redlock.close();
await sets.stop();
process.exit(0);
