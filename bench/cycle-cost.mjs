// Client CPU per acquire+release cycle, this library against the raw quorum, in the same process and
// interleaved rounds (5 masters, this process and the masters pinned to one core, distinct keys):
//   npm run build && npx tsc -p bench/tsconfig.json
//   node bench/cycle-cost.mjs [--callers 1] [--cycles 3000] [--rounds 7] [--lib path/to/dist/index.js] [--base other/dist/index.js]
//   node bench/cycle-cost.mjs --prof out.cpuprofile [--cycles 12000] [--prof-raw]   # one of them alone, profiled after warm-up
// The library runs with its defaults (the restart guard on, waited out first), as `npm run bench` does.
// --prof prints each function's self time in µs per cycle, and where the code lives.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { startRedisMasters } from '../dist-bench/tools/redis-masters.js';
import { rawQuorum } from '../dist-bench/bench/adapters/raw-quorum.js';

const { values } = parseArgs({
  options: {
    callers: { type: 'string', default: '1' },
    cycles: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '7' },
    prof: { type: 'string' },
    'prof-raw': { type: 'boolean', default: false },
    top: { type: 'string', default: '40' },
    lib: { type: 'string', default: new URL('../dist/index.js', import.meta.url).href },
    base: { type: 'string' },
  },
});
const callers = Number(values.callers);
const cycles = Number(values.cycles);
const { Redlock } = await import(values.lib);
const masters = await startRedisMasters(5);
const core = String(availableParallelism() - 1);
for (const pid of [...masters.masters.map((m) => m.pid), process.pid])
  execFileSync('taskset', ['-a', '-p', '-c', core, String(pid)], { stdio: 'ignore' });

/** The library of `entry` with its defaults, connected and trusted. */
async function library(RedlockOf) {
  const redlock = new RedlockOf({ nodes: masters.urls });
  await redlock.connect();
  await redlock.whenTrusted({ timeout: 60_000 });
  return {
    acquire: (key) => redlock.acquire(key, 10_000),
    release: (lock) => lock.release(),
    close: () => redlock.close(),
  };
}
const ours = await library(Redlock);
const base = values.base ? await library((await import(values.base)).Redlock) : undefined;
const raw = await rawQuorum.create(masters.urls, 'default');

let serial = 0;
/** `n` cycles over `callers` callers; client CPU µs per cycle and the p50 cycle in µs. */
async function run(lib, n) {
  const times = [];
  let left = n;
  const caller = async (c) => {
    while (left-- > 0) {
      const t0 = performance.now();
      const lock = await lib.acquire(`cycle-cost:${c}:${serial++}`, 10_000);
      await lib.release(lock);
      times.push(performance.now() - t0);
    }
  };
  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: callers }, (_, c) => caller(c)));
  const cpu = process.cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  return { cpu: (cpu.user + cpu.system) / n, user: cpu.user / n, p50: times[times.length >> 1] * 1000 };
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

await run(ours, Math.min(cycles, 2000));
await run(raw, Math.min(cycles, 2000));
if (values.prof) {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 50 });
  await session.post('Profiler.start');
  const got = await run(values['prof-raw'] ? raw : ours, cycles);
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(values.prof, JSON.stringify(profile));
  console.log(`${callers} caller(s), ${cycles} cycles profiled: client CPU ${got.cpu.toFixed(0)} µs per cycle`);
  summarize(profile, cycles, Number(values.top));
} else {
  const rows = {
    ours: [],
    raw: [],
    ratio: [],
    p50: [],
    base: [],
    baseRatio: [],
    user: [],
    baseUser: [],
    userRatio: [],
  };
  for (let r = 0; r < Number(values.rounds); r++) {
    const a = await run(ours, cycles);
    const b = await run(raw, cycles);
    const c = base ? await run(base, cycles) : undefined;
    rows.ours.push(a.cpu);
    rows.raw.push(b.cpu);
    rows.ratio.push(a.cpu / b.cpu);
    rows.p50.push(a.p50 / b.p50);
    rows.user.push(a.user);
    if (c) {
      rows.base.push(c.cpu);
      rows.baseRatio.push(a.cpu / c.cpu);
      rows.baseUser.push(c.user);
      rows.userRatio.push(a.user / c.user);
    }
  }
  const range = (xs) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  console.log(
    `${callers} caller(s), ${values.rounds} rounds of ${cycles} cycles: client CPU per cycle ${median(rows.ours).toFixed(0)} µs ` +
      `against raw quorum ${median(rows.raw).toFixed(0)} µs, ratio ${median(rows.ratio).toFixed(2)} (${range(rows.ratio)}); ` +
      `p50 ratio ${median(rows.p50).toFixed(2)} (${range(rows.p50)})`,
  );
  if (base)
    console.log(
      `against --base ${median(rows.base).toFixed(0)} µs per cycle: ratio ${median(rows.baseRatio).toFixed(3)} (${range(rows.baseRatio)}); ` +
        `user CPU alone ${median(rows.user).toFixed(1)} µs against ${median(rows.baseUser).toFixed(1)}, ratio ${median(rows.userRatio).toFixed(3)} (${range(rows.userRatio)})`,
    );
}
await ours.close();
await base?.close();
await raw.close();
await masters[Symbol.asyncDispose]();

/** Self time per function and per place, in µs per cycle. */
function summarize(profile, n, top) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++)
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const place = ({ functionName, url }) => {
    if (['(garbage collector)', '(program)', '(idle)'].includes(functionName)) return functionName;
    if (['writev', 'writeBuffer', 'writeUtf8String'].includes(functionName)) return 'socket writes';
    if (!url) return 'native/other';
    if (url.includes('node_modules/ioredis') || url.includes('node_modules/redis-parser')) return 'ioredis';
    if (url.includes('/dist/')) return 'library';
    if (url.startsWith('node:')) return 'node core';
    return 'other';
  };
  const byFn = new Map();
  const byPlace = new Map();
  for (const [id, t] of self) {
    const { callFrame } = byId.get(id);
    const key = `${callFrame.functionName || '(anonymous)'} ${(callFrame.url || '').split('/').slice(-2).join('/')}:${callFrame.lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + t);
    const p = place(callFrame);
    byPlace.set(p, (byPlace.get(p) ?? 0) + t);
  }
  const show = (map, k) =>
    [...map]
      .filter(([name]) => name !== '(idle)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .forEach(([name, t]) => console.log(`${(t / n).toFixed(2).padStart(8)} µs/cycle  ${name}`));
  show(byPlace, 20);
  console.log('--- functions (self time) ---');
  show(byFn, top);
}
