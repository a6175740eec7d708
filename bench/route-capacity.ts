/**
 * The route workload as production sees it: the Nest application in its own process on its own core,
 * the load generator and the masters on the other core. `npm run bench -- --workloads route` runs all
 * three in one process on one core, so the masters' and the load generator's CPU are charged to the
 * route; here the application's own CPU per request (its capacity: 1 s ÷ that) is measured apart.
 *   npm run build && rm -rf dist-bench && npx tsc -p bench/tsconfig.json
 *   node dist-bench/bench/route-capacity.js [--rounds 5] [--ms 3000] [--clients 32] [--masters 3] [--loadgen socket|http]
 * Per platform (Express, Fastify) and route (unlocked; unlocked with AsyncLocalStorage's hooks on;
 * `@Locked('item:#id')`; this library's `acquire()` + `release()` by hand; the raw quorum by hand),
 * each arm in its own application process, interleaved in each round: requests per second, the application's CPU per request (user + system,
 * `process.cpuUsage()` in the application's process) and how busy its core was. The ratio that tells
 * the application's capacity is unlocked CPU ÷ locked CPU per request; requests per second only say the
 * same when the application's core is the bottleneck (busy near 100 %).
 */
import 'reflect-metadata';
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as library from 'nestjs-quorum-lock';
import { rawQuorumPipelined } from './adapters/raw-quorum.js';
import { startMasterSets } from './masters.js';
import { openRouteApp, PLATFORMS, runRoute, type Platform, type Route } from './workloads/route.js';

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    als: { type: 'boolean', default: false },
    urls: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    ms: { type: 'string', default: '3000' },
    clients: { type: 'string', default: '32' },
    masters: { type: 'string', default: '3' },
    loadgen: { type: 'string', default: 'socket' },
  },
});

type Cpu = { cpu: number; user: number; system: number; wall: number; reads: number; writes: number };

/** Read and write system calls of this process so far (/proc/self/io; 0 where unavailable). */
function syscalls(): { reads: number; writes: number } {
  try {
    const text = readFileSync('/proc/self/io', 'utf8');
    return { reads: Number(/syscr: (\d+)/.exec(text)![1]), writes: Number(/syscw: (\d+)/.exec(text)![1]) };
  } catch {
    return { reads: 0, writes: 0 };
  }
}

/**
 * The cheap load generator: `clients` keep-alive sockets, each sending one `GET` at a time and reading
 * the response by its Content-Length. It costs a fraction of a `node:http` client's CPU per request,
 * so that one core of load generator (with the masters) can keep the application's core busy.
 */
async function socketLoad(port: number, route: Route, clients: number, windowMs: number, idPrefix: string) {
  const end = performance.now() + windowMs;
  let requests = 0;
  let errors = 0;
  const client = (c: number) =>
    new Promise<void>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, noDelay: true });
      let n = 0;
      let buffered = '';
      const send = () => socket.write(`GET /${route}/${idPrefix}-${c}-${n++} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      socket.setEncoding('latin1');
      socket.once('connect', send);
      socket.on('error', reject);
      socket.on('data', (chunk: string) => {
        buffered += chunk;
        const head = buffered.indexOf('\r\n\r\n');
        if (head < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, head))?.[1] ?? 0);
        if (buffered.length < head + 4 + length) return;
        if (buffered.startsWith('HTTP/1.1 200')) requests++;
        else errors++;
        buffered = buffered.slice(head + 4 + length);
        if (performance.now() < end) send();
        else {
          socket.end();
          resolve();
        }
      });
    });
  await Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
  return { requests, errors, requestsPerSec: requests / (windowMs / 1000) };
}

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

if (values.serve) {
  // The application's process: serve, answer CPU readings, close on request.
  const urls = values.urls!.split(',');
  const raw = await rawQuorumPipelined.create(urls, 'default');
  const app = await openRouteApp(library, values.serve as Platform, urls, raw);
  // What the first `using()` of a process does: AsyncLocalStorage's hooks on, for every later promise.
  if (values.als) new AsyncLocalStorage<number>().enterWith(1);
  process.on('message', (message: string) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send!({ cpu: user + system, user, system, wall: performance.now() * 1000, ...syscalls() } satisfies Cpu);
    } else if (message === 'close') {
      void app
        .close()
        .then(() => raw.close())
        .finally(() => process.exit(0));
    }
  });
  process.once('disconnect', () => process.exit(0)); // the measuring process ended
  process.send!({ port: app.port });
} else {
  // Interrupted: exit through 'exit', whose hook stops the masters (the applications follow on disconnect).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(1));
  await measure();
}

function taskset(core: number, pid: number): void {
  execFileSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' });
}

function ask<T>(child: ChildProcess, message: string, pick: (m: unknown) => T | undefined): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: unknown) => {
      const value = pick(m);
      if (value === undefined) return;
      child.off('message', on);
      resolve(value);
    };
    child.on('message', on);
    if (message) child.send(message);
  });
}

async function measure(): Promise<void> {
  if (availableParallelism() < 2) throw new Error('route-capacity needs two cores');
  const masterCount = Number(values.masters);
  const sets = await startMasterSets([masterCount]);
  const urls = sets.sets.get(masterCount)!.urls;
  const appCore = 0;
  const restCore = 1;
  for (const pid of [process.pid, ...sets.serverPids()]) taskset(restCore, pid);
  // One application process per arm: the first `using()` of a process turns AsyncLocalStorage's
  // promise hooks on for good, so an arm that shared a process with the `@Locked` arm would pay them.
  // `plain-als` is the unlocked route with the hooks on, as in an application that ever took a lock.
  const routes = ['plain', 'plain-als', 'locked', 'acquire', 'raw'] as const;
  const apps = new Map<string, { child: ChildProcess; port: number }>();
  for (const platform of PLATFORMS) {
    for (const name of routes) {
      const child = fork(
        fileURLToPath(import.meta.url),
        ['--serve', platform, '--urls', urls.join(','), ...(name === 'plain-als' ? ['--als'] : [])],
        { stdio: 'inherit' },
      );
      const port = await ask(child, '', (m) => (m as { port?: number }).port);
      taskset(appCore, child.pid!);
      apps.set(`${platform} ${name}`, { child, port });
    }
  }
  console.log(
    `route capacity: the applications on core ${appCore} (one process per platform and route), load generator and ${masterCount} masters on core ${restCore}`,
  );
  await sets.olderThan(11_000); // the restart guard counts masters up for longer than the largest TTL
  const arms = PLATFORMS.flatMap((platform) =>
    routes.map((name) => ({
      platform,
      name,
      route: name === 'plain-als' ? 'plain' : name,
      app: apps.get(`${platform} ${name}`)!,
    })),
  );
  for (const { route, app } of arms)
    await runRoute(app.port, route, { clients: 8, warmupMs: 0, windowMs: 500, idPrefix: 'warm' });
  const samples = new Map<string, { rps: number; cpuUs: number; busy: number }[]>();
  const rounds = Number(values.rounds);
  for (let round = 0; round < rounds; round++) {
    // Rotate the order per round so that no arm always runs first.
    const order = arms.map((_, i) => arms[(i + round) % arms.length]);
    for (const { platform, name, route, app } of order) {
      const { child, port } = app;
      const reading = () => ask(child, 'cpu', (m) => ((m as Cpu).cpu === undefined ? undefined : (m as Cpu)));
      const from = await reading();
      const clients = Number(values.clients);
      const windowMs = Number(values.ms);
      const idPrefix = `r${round}-${route}`;
      const result =
        values.loadgen === 'http'
          ? await runRoute(port, route, { clients, warmupMs: 0, windowMs, idPrefix })
          : await socketLoad(port, route, clients, windowMs, idPrefix);
      const to = await reading();
      const cpuUs = (to.cpu - from.cpu) / result.requests;
      const busy = (to.cpu - from.cpu) / (to.wall - from.wall);
      const per = (n: number) => (n / result.requests).toFixed(2);
      const detail = `user ${per(to.user - from.user)} + system ${per(to.system - from.system)} µs, syscalls per request ${per(to.reads - from.reads)} read + ${per(to.writes - from.writes)} write`;
      const key = `${platform} ${name}`;
      samples.set(key, [...(samples.get(key) ?? []), { rps: result.requestsPerSec, cpuUs, busy }]);
      console.log(
        `[round ${round + 1}/${rounds}] ${key.padEnd(16)} ${Math.round(result.requestsPerSec)} req/s, application ${cpuUs.toFixed(0)} µs CPU/request, its core ${(busy * 100).toFixed(0)} % busy (${detail}), errors ${result.errors}`,
      );
    }
  }
  console.log(
    '\n| route | req/s | ÷ unlocked | application CPU µs/request | capacity ÷ unlocked (CPU) | app core busy |',
  );
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const platform of PLATFORMS) {
    const base = samples.get(`${platform} plain`)!;
    for (const route of routes) {
      const s = samples.get(`${platform} ${route}`)!;
      const rps = median(s.map((x) => x.rps));
      const cpu = median(s.map((x) => x.cpuUs));
      const rpsRatios = s.map((x, i) => x.rps / base[i].rps);
      const capRatios = s.map((x, i) => base[i].cpuUs / x.cpuUs);
      const range = (xs: number[]) =>
        `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
      const label = {
        plain: 'unlocked',
        'plain-als': 'unlocked, AsyncLocalStorage hooks on',
        locked: "`@Locked('item:#id')`",
        acquire: '`acquire()` + `release()` by hand',
        raw: 'raw quorum by hand',
      }[route];
      console.log(
        `| ${platform} ${label} | ${Math.round(rps).toLocaleString('en')} | ${route === 'plain' ? '' : range(rpsRatios)} | ${cpu.toFixed(0)} | ${route === 'plain' ? '' : range(capRatios)} | ${(median(s.map((x) => x.busy)) * 100).toFixed(0)} % |`,
      );
    }
  }
  for (const { child } of apps.values()) {
    child.send('close');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  await sets.stop();
  process.exit(0);
}
