// Socket writes and bytes per lock cycle, per master, for the built library (or another build):
//   npm run build && npx tsc -p bench/tsconfig.json
//   node bench/write-count.mjs [--callers 64] [--ms 2000] [--pin] [--lib path/to/dist/index.js]
// --pin puts this process and the masters on the last core, as the bench does. 5 masters, distinct keys.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedisMasters } from '../dist-bench/tools/redis-masters.js';

const { values } = parseArgs({
  options: {
    callers: { type: 'string', default: '64' },
    ms: { type: 'string', default: '2000' },
    pin: { type: 'boolean', default: false },
    lib: { type: 'string', default: new URL('../dist/index.js', import.meta.url).href },
  },
});
const { Redlock } = await import(values.lib);
const masters = await startRedisMasters(5);
const clients = masters.urls.map((url) => new Redis(url));
await Promise.all(clients.map((c) => c.ping()));
if (values.pin) {
  const core = String(availableParallelism() - 1);
  for (const pid of [...masters.masters.map((m) => m.pid), process.pid])
    execFileSync('taskset', ['-a', '-p', '-c', core, String(pid)], { stdio: 'ignore' });
}
let writes = 0;
let bytes = 0;
const size = (chunk) => (typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length);
for (const { stream } of clients) {
  const writev = stream._writev.bind(stream);
  stream._writev = (chunks, cb) => {
    writes++;
    for (const c of chunks) bytes += size(c.chunk);
    return writev(chunks, cb);
  };
  const write = stream._write.bind(stream);
  stream._write = (chunk, encoding, cb) => {
    writes++;
    bytes += size(chunk);
    return write(chunk, encoding, cb);
  };
}
const redlock = new Redlock({ nodes: clients, restartGuard: false, retryCount: 0 });
await redlock.connect();
let cycles = 0;
let stop = false;
const caller = async (i) => {
  for (let k = 0; !stop; k++) {
    const lock = await redlock.acquire(`write-count:${i}:${k}`, 10_000);
    await lock.release();
    cycles++;
  }
};
setTimeout(() => (stop = true), Number(values.ms));
const start = performance.now();
const cpu0 = process.cpuUsage();
await Promise.all(Array.from({ length: Number(values.callers) }, (_, i) => caller(i)));
const cpu = process.cpuUsage(cpu0);
const elapsed = performance.now() - start;
const perMaster = (n) => (n / cycles / clients.length).toFixed(2);
console.log(
  `${values.callers} callers${values.pin ? ', pinned' : ''}: ${Math.round((cycles / elapsed) * 1000)} cycles/s, ` +
    `per cycle and master ${perMaster(writes)} socket writes and ${perMaster(bytes)} bytes, ` +
    `client CPU ${Math.round((cpu.user + cpu.system) / cycles)} µs per cycle`,
);
await redlock.close();
for (const c of clients) c.disconnect();
await masters[Symbol.asyncDispose]();
