/**
 * The sample shop: two instances of the same Nest app share one stock in Redis. A crowd of buyers
 * rushes the same item, first through the unlocked route, then through the `@Locked` one.
 *
 *   npm run sample                                   # starts 3 local redis-server masters itself
 *   REDLOCK_NODES=redis://a:6379,redis://b:6379,redis://c:6379 npm run sample
 *
 * Then both instances run the same every-second cron job (`@Cron` + `@Locked(…, { onBusy: 'skip',
 * minHold })`) for a few fires, and the sample shows that each fire ran on exactly one instance.
 *
 * Exits 1 if the locked route oversold, or if a fire of the scheduled job ran more than once.
 */
import 'reflect-metadata';
import { Logger, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import { setTimeout as delay } from 'node:timers/promises';
import { RedlockService } from 'nestjs-quorum-lock';
import { startRedisMasters, type RedisMasters } from '../tools/redis-masters.js';
import { AppModule } from './app.module.js';
import { InventoryService } from './inventory.service.js';
import { SALES_REPORT_JOB } from './sales-report.job.js';

const ITEM = 'front-row';
const STOCK = 5;
const BUYERS = 50;
const INSTANCES = 2;
/** How many fires of the every-second report job the sample watches. */
const REPORT_FIRES = 6;
let interrupted = false;

interface Outcome {
  route: string;
  sold: number;
  soldOut: number;
  lockBusy: number;
  other: string[];
  left: number;
  oversold: number;
  ms: number;
}

/** Fires BUYERS concurrent purchases at ITEM, spread over the instances, and reads the result. */
async function rush(urls: string[], route: string): Promise<Outcome> {
  const started = performance.now();
  const replies = await Promise.all(
    Array.from({ length: BUYERS }, async (_, i) => {
      const res = await fetch(`${urls[i % urls.length]}/seats/${ITEM}/${route}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ buyer: `buyer-${i + 1}` }),
      });
      const body = (await res.json().catch(() => ({}))) as { reason?: string };
      return { status: res.status, reason: body.reason };
    }),
  );
  const ms = performance.now() - started;
  const seat = (await (await fetch(`${urls[0]}/seats/${ITEM}`)).json()) as { stock: number; sold: number };
  const count = (ok: (r: (typeof replies)[number]) => boolean) => replies.filter(ok).length;
  const other = replies
    .filter((r) => r.status !== 201 && r.status !== 409)
    .map((r) => `${r.status} ${r.reason ?? ''}`.trim());
  const sold = count((r) => r.status === 201);
  return {
    route: `POST /seats/:id/${route}`,
    sold,
    soldOut: count((r) => r.status === 409 && r.reason === 'sold-out'),
    lockBusy: count((r) => r.status === 409 && r.reason === 'lock-busy'),
    other,
    left: seat.stock,
    oversold: Math.max(0, Math.max(sold, seat.sold) - STOCK), // tickets confirmed or recorded beyond the stock
    ms,
  };
}

function printTable(rows: Outcome[]): void {
  const head = [
    'route',
    'in stock',
    'buyers',
    'sold (201)',
    'sold out (409)',
    'lock busy (409)',
    'other',
    'stock left',
    'OVERSOLD',
    'time',
  ];
  const body = rows.map((r) => [
    r.route,
    String(STOCK),
    String(BUYERS),
    String(r.sold),
    String(r.soldOut),
    String(r.lockBusy),
    String(r.other.length),
    String(r.left),
    String(r.oversold),
    `${Math.round(r.ms)} ms`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    '| ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ') + ' |';
  const rule = '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|';
  console.log(['', line(head), rule, ...body.map(line), ''].join('\n'));
  for (const r of rows) if (r.other.length) console.log(`${r.route}: other answers: ${r.other.join(', ')}`);
}

/** `GET /health` (Terminus + `RedlockHealthIndicator`), printed in short. */
async function printHealth(url: string): Promise<void> {
  const res = await fetch(`${url}/health`);
  const body = (await res.json()) as {
    status: string;
    details: {
      locks: {
        status: string;
        trusted: number;
        total: number;
        masters: {
          master: string;
          connected: boolean;
          trusted: boolean;
          roundTripMs?: number;
          maxmemoryPolicy?: string;
        }[];
      };
    };
  };
  const locks = body.details.locks;
  console.log(
    `GET /health -> ${res.status} ${body.status}; locks: ${locks.status}, ${locks.trusted} of ${locks.total} masters count`,
  );
  for (const m of locks.masters) {
    console.log(
      `  ${m.master}  ${m.connected ? 'connected' : 'DOWN'}  ${m.trusted ? 'trusted' : 'distrusted'}  rtt ${m.roundTripMs ?? '?'} ms  maxmemory-policy ${m.maxmemoryPolicy ?? '?'}`,
    );
  }
}

/**
 * The inspector's view of a lock while the locked run holds it: `redlock.inspect()` (read-only,
 * the same view as `npx nestjs-quorum-lock inspect`) polled until it sees a quorum holder.
 */
async function watchLock(redlock: RedlockService, resource: string): Promise<void> {
  const until = performance.now() + 5_000;
  while (performance.now() < until) {
    const view = await redlock.inspect(resource);
    if (view.held) {
      console.log(
        `\nInspector, during the locked run: "${resource}" held by ${view.agreeing} of ${view.masters.length} masters (quorum ${view.quorum}), valid for at least ${view.validity} ms`,
      );
      for (const m of view.masters) {
        console.log(
          `  ${m.master}  ${m.error ? `error: ${m.error.message}` : m.holder === null ? 'free' : `${m.holder === view.holder ? 'holder' : 'other holder'} (value ${m.holder.slice(0, 6)}…), pttl ${m.pttl} ms`}`,
        );
      }
      return;
    }
    await delay(2);
  }
  console.log(`\nInspector: did not catch "${resource}" held (the run was quicker than the poll).`);
}

/**
 * Masters that started a moment ago do not vote until they have been up longer than the largest TTL
 * (the restart guard: a master that restarted empty may have forgotten locks). Fresh masters are
 * what the sample starts, so it waits for them, visibly, before the locked run.
 */
async function waitForRestartGuard(apps: INestApplication[]): Promise<void> {
  const services = apps.map((app) => app.get(RedlockService));
  const pending = () => Math.max(...services.flatMap((s) => s.distrustedFor));
  await delay(50); // let each instance read INFO from its masters
  const wait = pending();
  if (wait <= 0) return;
  console.log(
    `Restart guard: the masters have been up for less than the largest TTL; waiting ${Math.ceil(wait)} ms before locking.`,
  );
  // Resolves once a quorum counts; rejects (naming each master and why) if that takes too long.
  await Promise.all(services.map((s) => s.whenTrusted()));
}

/**
 * Starts the every-second report job on both instances, watches REPORT_FIRES fires, and prints which
 * instance ran each. Returns why the run failed (a fire ran twice), or undefined.
 */
async function runReportJob(apps: INestApplication[]): Promise<string | undefined> {
  const inventory = apps[0].get(InventoryService);
  await inventory.clearReports();
  const jobs = apps.map((app) => app.get(SchedulerRegistry).getCronJob(SALES_REPORT_JOB));
  for (const job of jobs) job.start();
  const first = Math.round(Date.now() / 1_000) + 1; // the first fire both instances are scheduled for
  console.log(
    `\nScheduled job: both instances fire '@Cron(every second) @Locked('report:sales', { onBusy: 'skip', minHold: 800 })' for ${REPORT_FIRES} s.`,
  );
  await delay((REPORT_FIRES + 1) * 1_000 + 300);
  for (const job of jobs) void job.stop();
  await delay(200); // the last fire's report is written
  const reports = (await inventory.reports()).filter((r) => r.fire >= first && r.fire < first + REPORT_FIRES);
  const byFire = new Map<number, string[]>();
  for (let fire = first; fire < first + REPORT_FIRES; fire++) byFire.set(fire, []);
  for (const r of reports) byFire.get(r.fire)?.push(r.instance);
  for (const [fire, ran] of byFire) {
    console.log(
      `  fire ${new Date(fire * 1_000).toISOString().slice(11, 19)}: ${ran.length === 0 ? 'not run' : `ran on ${ran.join(' and ')}`}`,
    );
  }
  const twice = [...byFire.values()].filter((ran) => ran.length > 1).length;
  const once = [...byFire.values()].filter((ran) => ran.length === 1).length;
  console.log(
    `${twice ? 'Some fires ran twice' : 'Each fire ran once'}: ${once} of ${REPORT_FIRES} fires ran on exactly one instance, ${twice} ran twice${twice ? '' : '; the other instance skipped silently'}.`,
  );
  return twice > 0 ? `${twice} fires of the scheduled job ran on more than one instance.` : undefined;
}

async function main(): Promise<number> {
  let redis: RedisMasters | undefined;
  const apps: INestApplication[] = [];
  let cleaning: Promise<void> | undefined;
  // Close the apps (releasing their locks and connections), then stop the masters we started.
  const cleanup = () =>
    (cleaning ??= (async () => {
      await Promise.allSettled(apps.map((app) => app.close()));
      await redis?.stop();
      if (redis) console.log('Stopped the redis-server masters.');
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      interrupted = true;
      console.log(`\n${signal}: shutting down; requests still in flight are abandoned.`);
      Logger.overrideLogger(false); // do not print one stack trace per abandoned request
      void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }

  try {
    if (process.env.REDLOCK_NODES) {
      console.log(`Using REDLOCK_NODES=${process.env.REDLOCK_NODES}`);
    } else {
      redis = await startRedisMasters(3);
      process.env.REDLOCK_NODES = redis.urls.join(','); // read by ConfigService in AppModule
      console.log(`Started 3 redis-server masters: ${redis.masters.map((m) => `${m.url} (pid ${m.pid})`).join(', ')}`);
    }

    for (let i = 0; i < INSTANCES; i++) {
      // forceCloseConnections: on Ctrl-C, close() does not wait for the buyers' keep-alive sockets.
      const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'], forceCloseConnections: true });
      apps.push(app);
      await app.listen(0, '127.0.0.1');
    }
    const urls = await Promise.all(apps.map((app) => app.getUrl()));
    console.log(`Shop instances: ${urls.join(', ')}`);
    console.log(
      `Each run: "${ITEM}" restocked with ${STOCK} tickets, ${BUYERS} concurrent buyers spread over both instances.`,
    );

    await waitForRestartGuard(apps);

    // the health check asks the masters afresh: let every instance's view settle first
    const redlock = apps[0].get(RedlockService);
    for (let waited = 0; waited < 3_000 && (await redlock.refreshMasterStates()).some((m) => !m.trusted); waited += 100)
      await delay(100);
    await printHealth(urls[0]);

    const inventory = apps[0].get(InventoryService);
    const rows: Outcome[] = [];
    for (const route of ['buy-unsafe', 'buy']) {
      await inventory.restock(ITEM, STOCK);
      const watching = route === 'buy' ? watchLock(apps[0].get(RedlockService), `seat:${ITEM}`) : undefined;
      rows.push(await rush(urls, route));
      await watching;
    }
    printTable(rows);

    const [unsafe, locked] = rows;
    console.log(
      unsafe.oversold > 0
        ? `Without the lock: ${unsafe.sold} tickets for ${STOCK} seats (${unsafe.oversold} oversold) - buyers read the same stock and overwrote each other.`
        : 'Without the lock: no oversell this time (the race is real but timing-dependent).',
    );
    if (locked.oversold > 0) {
      console.log(`FAIL: with @Locked, ${locked.oversold} tickets were oversold.`);
      return 1;
    }
    console.log(
      `With @Locked('seat:#id'): ${locked.sold} of ${STOCK} sold, never more; everyone else was told "sold out" or "lock busy".`,
    );
    const reportFailure = await runReportJob(apps);
    if (reportFailure) {
      console.log(`FAIL: ${reportFailure}`);
      return 1;
    }
    return 0;
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    if (!interrupted) console.error(error);
    process.exitCode = 1;
  },
);
