/**
 * One arm of the route workload alone, for a profile or a count of what reaches the masters:
 *   npm run build && rm -rf dist-bench && npx tsc -p bench/tsconfig.json
 *   node dist-bench/bench/route-probe.js --platform express --route locked [--count] [--pin] [--profile out.cpuprofile]
 * `--promises` counts the promises created per request; `--als` turns AsyncLocalStorage's hooks on
 * first (what the first `using()` of the process does), to price them on the unlocked route.
 * `--profile` writes a V8 CPU profile of the measured window only (read it with bench/profile-summary.mjs).
 * `--count` counts, per request and per master, the socket writes to the masters, the commands in them
 * (script calls and others) and the reads of their replies, so that batch sizes in the route can be
 * set against the throughput workload's (bench/write-count.mjs). `--parse` also reads every write for
 * its commands and lock calls (slow: it changes the batching it measures). `--pin` puts this process and the
 * masters on the last core, as the bench does.
 */
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Socket } from 'node:net';
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { parseArgs } from 'node:util';
import * as library from 'nestjs-quorum-lock';
import { rawQuorumPipelined } from './adapters/raw-quorum.js';
import { cpuSampler } from './cpu.js';
import { pin, startMasterSets } from './masters.js';
import { openRouteApp, runRoute, type Platform, type Route } from './workloads/route.js';

const { values } = parseArgs({
  options: {
    platform: { type: 'string', default: 'express' },
    route: { type: 'string', default: 'locked' },
    ms: { type: 'string', default: '3000' },
    clients: { type: 'string', default: '32' },
    masters: { type: 'string', default: '3' },
    pin: { type: 'boolean', default: false },
    count: { type: 'boolean', default: false },
    parse: { type: 'boolean', default: false },
    profile: { type: 'string' },
    promises: { type: 'boolean', default: false },
    als: { type: 'boolean', default: false },
  },
});

const masterCount = Number(values.masters);
const sets = await startMasterSets([masterCount]);
const urls = sets.sets.get(masterCount)!.urls;
const ports = new Set(urls.map((u) => Number(new URL(u).port)));
if (values.pin) console.log(pin('same', sets.serverPids()));
await sets.olderThan(11_000); // the restart guard counts masters up for longer than the largest TTL

const counts = { writes: 0, commands: 0, scripts: 0, entries: 0, reads: 0 };
let counting = false;
if (values.count) {
  const toMaster = (socket: Socket) => counting && ports.has(socket.remotePort ?? -1);
  const tally = (text: string) => {
    counts.commands += text.match(/^\*\d+\r\n/gm)?.length ?? 0;
    // A lock call is an entry: a `SET`, or one key of a script call (a batch names one key per call).
    for (const m of text.matchAll(/\r\nevalsha\r\n\$40\r\n[0-9a-f]{40}\r\n\$\d+\r\n(\d+)\r\n/gi)) {
      counts.scripts++;
      counts.entries += Number(m[1]);
    }
    counts.entries += text.match(/\r\nset\r\n/gi)?.length ?? 0;
  };
  const proto = Socket.prototype as unknown as {
    _writev(chunks: { chunk: Buffer | string }[], cb: () => void): void;
    _write(chunk: Buffer | string, encoding: string, cb: () => void): void;
    push(chunk: unknown): boolean;
  };
  const { _writev: writev, _write: write, push } = proto;
  proto._writev = function (this: Socket, chunks, cb) {
    if (toMaster(this)) {
      counts.writes++;
      if (values.parse) tally(chunks.map((c) => String(c.chunk)).join(''));
    }
    return writev.call(this, chunks, cb);
  };
  proto._write = function (this: Socket, chunk, encoding, cb) {
    if (toMaster(this)) {
      counts.writes++;
      if (values.parse) tally(String(chunk));
    }
    return write.call(this, chunk, encoding, cb);
  };
  proto.push = function (this: Socket, chunk) {
    if (chunk !== null && toMaster(this)) counts.reads++;
    return push.call(this, chunk);
  };
}

let promises = 0;
// Counts the promises created in the window (each one pays AsyncLocalStorage's init hook once a store ran).
if (values.promises)
  createHook({
    init: (_id, type) => {
      if (counting && type === 'PROMISE') promises++;
    },
  }).enable();
// Turns AsyncLocalStorage's promise hooks on for the whole process, as the first `using()` does.
if (values.als) new AsyncLocalStorage<number>().enterWith(1);
const raw = await rawQuorumPipelined.create(urls, 'default');
const app = await openRouteApp(library, values.platform as Platform, urls, raw);
const route = values.route as Route;
const clients = Number(values.clients);
await runRoute(app.port, route, { clients: 8, warmupMs: 0, windowMs: 500, idPrefix: 'warm' });
counting = true;
const session = values.profile ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 250 });
  await session.post('Profiler.start');
}
const cpu0 = process.cpuUsage();
const result = await runRoute(
  app.port,
  route,
  { clients, warmupMs: 0, windowMs: Number(values.ms), idPrefix: 'probe' },
  cpuSampler(sets.serverPids()),
);
counting = false;
const cpu = process.cpuUsage(cpu0);
if (session) {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(values.profile!, JSON.stringify(profile));
  session.disconnect();
}
const per = (n: number) => (n / result.requests / masterCount).toFixed(2);
console.log(
  `${values.platform} ${route}, ${clients} clients, ${masterCount} masters: ${Math.round(result.requestsPerSec)} req/s, ` +
    `client CPU ${result.clientCpuUs?.toFixed(0)} µs/request, masters ${result.serverCpuUs?.toFixed(0)} µs/request, errors ${result.errors}; ` +
    `this process ${(cpu.user / result.requests).toFixed(0)} µs user + ${(cpu.system / result.requests).toFixed(0)} µs system per request`,
);
if (values.promises) console.log(`promises per request: ${(promises / result.requests).toFixed(1)}`);
if (values.count)
  console.log(
    `per request and master: ${per(counts.writes)} writes, ${per(counts.reads)} reads` +
      (values.parse
        ? `, ${per(counts.commands)} commands (${per(counts.scripts)} script calls), ${per(counts.entries)} lock calls; ` +
          `lock calls per write ${(counts.entries / counts.writes).toFixed(2)}`
        : ''),
  );
await app.close();
await raw.close();
await sets.stop();
process.exit(0);
