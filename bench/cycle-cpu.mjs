// Where a sequential lock cycle's time goes when the client and the masters share one core (as in
// `npm run bench`): each process's on-CPU time per acquire+release cycle, from /proc/PID/schedstat,
// for this library, the raw quorum, and the raw quorum sending this library's own commands (its
// `SET NX PX` value and its plain release script). On one core a lone caller's cycle takes about
// the sum of these, so the p50 follows them.
//   npm run build && npx tsc -p bench/tsconfig.json
//   node bench/cycle-cpu.mjs [--cycles 4000] [--rounds 3]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedisMasters } from '../dist-bench/tools/redis-masters.js';
import { rawQuorum } from '../dist-bench/bench/adapters/raw-quorum.js';

const { values } = parseArgs({
  options: { cycles: { type: 'string', default: '4000' }, rounds: { type: 'string', default: '3' } },
});
const N = Number(values.cycles);
const { Redlock } = await import(new URL('../dist/index.js', import.meta.url).href);
const { SCRIPTS } = await import(new URL('../dist/lua/scripts.generated.js', import.meta.url).href);
const masters = await startRedisMasters(5);
const core = String(availableParallelism() - 1);
for (const pid of [...masters.masters.map((m) => m.pid), process.pid])
  execFileSync('taskset', ['-a', '-p', '-c', core, String(pid)], { stdio: 'ignore' });

const redlock = new Redlock({ nodes: masters.urls });
await redlock.connect();
await redlock.whenTrusted({ timeout: 60_000 });
const raw = await rawQuorum.create(masters.urls, 'default');
const clients = masters.urls.map((url) => new Redis(url));
const sha = String(await clients[0].script('LOAD', SCRIPTS.plainRelease.lua));
await Promise.all(clients.slice(1).map((c) => c.script('LOAD', SCRIPTS.plainRelease.lua)));
const quorumOf = (calls) =>
  new Promise((resolve) => {
    let n = 0;
    for (const call of calls) void call.then(() => ++n === 3 && resolve());
  });

/** on-CPU ns and timeslices of a process's threads, summed. */
function onCpu(pid) {
  let run = 0;
  for (const tid of execFileSync('ls', [`/proc/${pid}/task`])
    .toString()
    .trim()
    .split('\n')) {
    const [ns] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
    run += Number(ns);
  }
  return run;
}
const snapshot = () => ({ client: onCpu(process.pid), masters: masters.masters.map((m) => onCpu(m.pid)) });

const subjects = {
  'this library': async (key) => (await redlock.acquire(key, 10_000)).release(),
  'raw quorum': async (key) => raw.release(await raw.acquire(key, 10_000)),
  "raw quorum, this library's commands": async (key) => {
    // The library's key prefix and value shape, and its release script with its reservation argument.
    key = `lock:${key}`;
    const value = `${'x'.repeat(22)}~${'y'.repeat(11)}`;
    await quorumOf(clients.map((c) => c.set(key, value, 'PX', 10_000, 'NX')));
    await quorumOf(clients.map((c) => c.evalsha(sha, 1, key, value, '500')));
  },
};
const rows = Object.fromEntries(Object.keys(subjects).map((s) => [s, { p50: [], client: [], masters: [] }]));
let serial = 0;
for (let round = 0; round < Number(values.rounds) + 1; round++)
  for (const [name, cycle] of Object.entries(subjects)) {
    const times = [];
    const before = snapshot();
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      await cycle(`cycle-cpu:${serial++}`);
      times.push((performance.now() - t0) * 1000);
    }
    const after = snapshot();
    if (round === 0) continue; // warm-up
    times.sort((a, b) => a - b);
    rows[name].p50.push(times[times.length >> 1]);
    rows[name].client.push((after.client - before.client) / N / 1000);
    rows[name].masters.push(after.masters.reduce((sum, ns, i) => sum + ns - before.masters[i], 0) / N / 1000);
  }
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `5 masters, one sequential caller, all on core ${core}; medians of ${values.rounds} rounds of ${N} cycles, µs per cycle`,
);
console.log('| subject | p50 | client on-CPU | masters on-CPU (sum) | client + masters |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const [name, r] of Object.entries(rows)) {
  const c = median(r.client);
  const m = median(r.masters);
  console.log(`| ${name} | ${median(r.p50).toFixed(0)} | ${c.toFixed(0)} | ${m.toFixed(0)} | ${(c + m).toFixed(0)} |`);
}
await redlock.close();
await raw.close();
for (const c of clients) c.disconnect();
await masters[Symbol.asyncDispose]();
