/**
 * Workload 5: the cost of `@Locked` on an HTTP route. One Nest application per HTTP platform (Express,
 * Fastify) serves the same small handler twice: `GET /plain/:id` without a lock and
 * `GET /locked/:id` with `@Locked('item:#id')` (default TTL). `clients` keep-alive clients in this
 * process (`node:http` Agent, one socket each) ask for distinct ids, one request at a time each, for a
 * fixed window; the result is requests per second. Arms (the unlocked route, the locked route of this
 * library, the locked route of another build under `--compare`) run in the same rounds. A third route,
 * `GET /raw/:id`, takes the lock by hand with the raw auto-pipelined quorum of
 * bench/adapters/raw-quorum.ts (SET NX PX, compare-and-delete, nothing else): what a lock costs a
 * route at the least, the reference for the locked ÷ unlocked ratio. `GET /acquire/:id` takes this
 * library's lock by hand (`acquire()`, `release()`); the bench's rounds do not use it
 * (bench/route-capacity.ts does).
 */
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Inject, Module, Param, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { rawQuorumPipelined } from '../adapters/raw-quorum.js';
import type { CpuSampler, CpuTimes } from '../cpu.js';
import type { LockAdapter } from '../adapters/types.js';

export const PLATFORMS = ['express', 'fastify'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** The part of the library's exports the route needs (this build, or another commit's under `--compare`). */
export interface RouteLibrary {
  // The decorator's exact type differs between builds; any method decorator of `(id) => object` fits.
  Locked: (key: string) => (target: object, name: string, descriptor: PropertyDescriptor) => unknown;
  RedlockModule: { forRoot(options: { nodes: string[] }): unknown };
  /** For `GET /acquire/:id`: the same lock taken by hand with `acquire()` and `release()`. */
  RedlockService: abstract new (...args: never[]) => LockService;
}

/** What `/acquire/:id` uses of `RedlockService`. */
interface LockService {
  acquire(resource: string): Promise<{ release(): Promise<void> }>;
}

/** One running application: where to send requests for the unlocked and the locked route. */
export interface RouteApp {
  readonly port: number;
  close(): Promise<void>;
}

const RAW_TTL = 10_000;

/**
 * Starts a Nest application on 127.0.0.1 (a free port) whose `/locked/:id` uses `lib`'s `@Locked`, and
 * whose `/raw/:id` holds `raw`'s lock on the same key around the same handler.
 */
export async function openRouteApp(
  lib: RouteLibrary,
  platform: Platform,
  urls: readonly string[],
  raw: LockAdapter,
): Promise<RouteApp> {
  @Controller()
  class ItemController {
    constructor(@Inject(lib.RedlockService) private readonly redlock: LockService) {}

    @Get('plain/:id')
    plain(@Param('id') id: string): { id: string } {
      return { id };
    }

    @Get('locked/:id')
    @(lib.Locked('item:#id') as MethodDecorator)
    locked(@Param('id') id: string): { id: string } {
      return { id };
    }

    // The library's lock without `using()`'s call chain and renewal (and so without AsyncLocalStorage).
    @Get('acquire/:id')
    async acquire(@Param('id') id: string): Promise<{ id: string }> {
      const lock = await this.redlock.acquire(`item:${id}`);
      try {
        return { id };
      } finally {
        await lock.release();
      }
    }

    @Get('raw/:id')
    async raw(@Param('id') id: string): Promise<{ id: string }> {
      const held = await raw.acquire(`item:${id}`, RAW_TTL);
      try {
        return { id };
      } finally {
        await raw.release(held);
      }
    }
  }

  @Module({ imports: [lib.RedlockModule.forRoot({ nodes: [...urls] }) as never], controllers: [ItemController] })
  class RouteModule {}

  const app: INestApplication =
    platform === 'fastify'
      ? await NestFactory.create(RouteModule, new FastifyAdapter() as never, { logger: false })
      : await NestFactory.create(RouteModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  return { port, close: () => app.close() };
}

export interface RouteOptions {
  clients: number;
  /** Requests in this first part are not counted. */
  warmupMs: number;
  windowMs: number;
  /** Distinct ids: `${idPrefix}-${client}-${n}`. */
  idPrefix: string;
}

export interface RouteResult {
  requestsPerSec: number;
  requests: number;
  /** Responses other than 200, and failed requests. */
  errors: number;
  /** CPU time per counted request in µs, this process (server and clients) and the masters. */
  clientCpuUs?: number;
  serverCpuUs?: number;
}

function get(agent: Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
      res.once('error', reject);
    });
    req.once('error', reject);
    req.end();
  });
}

/** `clients` keep-alive clients, each requesting `route(id)` for fresh ids, one at a time, for the window. */
export type Route = 'plain' | 'locked' | 'raw' | 'acquire';

export async function runRoute(
  port: number,
  route: Route,
  { clients, warmupMs, windowMs, idPrefix }: RouteOptions,
  cpu?: CpuSampler,
): Promise<RouteResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  let cpuFrom: CpuTimes | undefined;
  let cpuTo: CpuTimes | undefined;
  const marks = cpu
    ? [setTimeout(() => (cpuFrom = cpu()), warmupMs), setTimeout(() => (cpuTo = cpu()), warmupMs + windowMs)]
    : [];
  const countFrom = performance.now() + warmupMs;
  const end = countFrom + windowMs;
  let requests = 0;
  let errors = 0;
  const client = async (c: number) => {
    for (let n = 0; performance.now() < end; n++) {
      let status = 0;
      try {
        status = await get(agent, port, `/${route}/${idPrefix}-${c}-${n}`);
      } catch {
        // counted below
      }
      const done = performance.now();
      if (done < countFrom || done >= end) continue;
      if (status === 200) requests++;
      else errors++;
    }
  };
  try {
    await Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
  } finally {
    marks.forEach(clearTimeout);
    agent.destroy();
  }
  const result: RouteResult = { requestsPerSec: requests / (windowMs / 1000), requests, errors };
  if (cpuFrom && cpuTo && requests > 0) {
    result.clientCpuUs = (cpuTo.client - cpuFrom.client) / requests;
    result.serverCpuUs = (cpuTo.servers - cpuFrom.servers) / requests;
  }
  return result;
}

/** One measured arm of the route workload: a platform, a running app and which of its routes. */
export interface RouteArm {
  /** `unlocked`, `raw` (the raw quorum by hand), `locked` (this build) or `locked-ref` (the `--compare` build). */
  readonly id: string;
  readonly platform: Platform;
  readonly port: number;
  readonly route: Route;
}

export interface RouteSubjects {
  readonly arms: readonly RouteArm[];
  close(): Promise<void>;
}

/**
 * One application per platform and library; the unlocked and raw arms use the first library's
 * application (neither touches the library's lock), and each library adds its locked arm.
 */
export async function openRouteSubjects(
  libs: readonly { id: string; lib: RouteLibrary }[],
  urls: readonly string[],
): Promise<RouteSubjects> {
  const apps: RouteApp[] = [];
  const arms: RouteArm[] = [];
  const raw = await rawQuorumPipelined.create(urls, 'default');
  try {
    for (const platform of PLATFORMS) {
      for (const [i, { id, lib }] of libs.entries()) {
        const app = await openRouteApp(lib, platform, urls, raw);
        apps.push(app);
        if (i === 0) {
          arms.push({ id: 'unlocked', platform, port: app.port, route: 'plain' });
          arms.push({ id: 'raw', platform, port: app.port, route: 'raw' });
        }
        arms.push({ id, platform, port: app.port, route: 'locked' });
      }
    }
  } catch (error) {
    for (const app of apps) await app.close().catch(() => {});
    await raw.close();
    throw error;
  }
  // First requests compile the handlers, the router and the lock path: keep them out of round 1.
  for (const arm of arms)
    await runRoute(arm.port, arm.route, { clients: 8, warmupMs: 0, windowMs: 300, idPrefix: `warm-${arm.id}` });
  return {
    arms,
    close: async () => {
      for (const app of apps) await app.close().catch(() => {});
      await raw.close();
    },
  };
}
