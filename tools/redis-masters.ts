/**
 * Starts and controls real, independent `redis-server` processes on 127.0.0.1 for tests, the
 * sample app, benchmarks and fault injection. Framework-free: Node built-ins only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 5_000;
const STOP_GRACE_MS = 2_000;
const PORT_ATTEMPTS = 5;
const NOT_FOUND =
  'redis-server was not found on PATH. Install it (Debian/Ubuntu: `apt-get install -y redis-server`) ' +
  'or set REDIS_SERVER to its path.';

/**
 * One `redis-server` process on 127.0.0.1, controlled by signals. Nothing is persisted.
 * @example
 * master.pause();          // SIGSTOP: the kernel still accepts connections, nothing answers
 * master.resume();         // SIGCONT
 * await master.kill();     // SIGKILL: all data is lost
 * await master.restart();  // same port, new pid, empty dataset
 */
export interface RedisMaster {
  readonly port: number;
  /** `redis://127.0.0.1:${port}` */
  readonly url: string;
  /** Pid of the running server, `undefined` if none; changes after `restart()`. */
  readonly pid: number | undefined;
  /** SIGSTOP the process. */
  pause(): void;
  /** SIGCONT the process. */
  resume(): void;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
  /** Start again on the same port and wait until it answers PING. Throws if still running. */
  restart(): Promise<void>;
  /** SIGCONT, SIGTERM (SIGKILL after 2 s), wait for exit, remove the temp dir. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The masters started by {@link startRedisMasters}.
 * @example
 * const redis = await startRedisMasters(3);
 * try { await runAgainst(redis.urls); } finally { await redis.stop(); }
 */
export interface RedisMasters extends AsyncDisposable {
  readonly masters: readonly RedisMaster[];
  readonly urls: string[];
  /** Stop all masters. Idempotent. */
  stop(): Promise<void>;
}

/** A spawned server: `done` once it has exited (or failed to spawn); `output` keeps its last 4 KiB. */
interface Proc {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  readonly state: { done: boolean; error?: NodeJS.ErrnoException; output: string };
}

// Whatever is still around when this process exits: SIGKILLed and removed synchronously.
// Under Jest this hook never fires (the sandbox's `process` is a copy that does not emit 'exit'): stop() in afterAll.
const running = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let exitHookInstalled = false;

function onExit(): void {
  for (const { pid } of running) {
    try {
      process.kill(pid!, 'SIGKILL');
    } catch {} // already gone
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

/** Extra `redis-server` arguments, or a function of the port that returns them (e.g. a cluster bus port). */
export type ServerArgs = readonly string[] | ((port: number) => readonly string[]);

/** How a server process is started: extra arguments and extra environment (e.g. a fake clock's). */
interface LaunchOptions {
  readonly args?: ServerArgs;
  readonly env?: Readonly<Record<string, string>>;
}

function launch(bin: string, port: number, dir: string, { args: extra = [], env }: LaunchOptions = {}): Proc {
  const args = [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
    '--dir',
    dir,
    ...(typeof extra === 'function' ? extra(port) : extra),
  ];
  const child = spawn(bin, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  const state: Proc['state'] = { done: false, output: '' };
  const capture = (chunk: Buffer) => (state.output = (state.output + chunk.toString()).slice(-4096));
  child.stdout.on('data', capture);
  child.stderr.on('data', capture);
  if (!exitHookInstalled) process.on('exit', onExit);
  exitHookInstalled = true;
  running.add(child);
  const exited = new Promise<void>((resolve) => {
    const finish = (error?: Error) => {
      running.delete(child);
      state.done = true;
      state.error ??= error;
      resolve();
    };
    child.on('error', finish); // a failed spawn (ENOENT) emits 'error' and no 'exit'
    child.once('exit', () => finish());
  });
  return { child, exited, state };
}

/** True once the server on `port` answers PING and reports `pid`, so a foreign server does not count. */
function answers(port: number, pid: number | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: HOST, port });
    let reply = '';
    const done = (ok: boolean) => (socket.destroy(), resolve(ok));
    socket.setTimeout(250, () => done(false));
    socket.on('error', () => done(false));
    socket.on('close', () => done(false)); // e.g. a foreign server hung up without a reply
    socket.on('connect', () => socket.write('PING\r\nINFO server\r\n'));
    socket.on('data', (data) => {
      const match = /process_id:(\d+)\r\n/.exec((reply += data.toString()));
      if (match) done(reply.startsWith('+PONG') && Number(match[1]) === pid);
    });
  });
}

/** Spawn on `port` and wait until it answers; `undefined` if the port turned out to be taken. */
async function startOn(bin: string, port: number, dir: string, extra?: LaunchOptions): Promise<Proc | undefined> {
  const proc = launch(bin, port, dir, extra);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!proc.state.done && Date.now() < deadline) {
    if (await answers(port, proc.child.pid)) return proc;
    await delay(50);
  }
  const { done, error, output } = proc.state;
  if (error?.code === 'ENOENT') throw new Error(NOT_FOUND, { cause: error });
  if (done && output.includes('Address already in use')) return undefined;
  proc.child.kill('SIGKILL');
  await proc.exited;
  const { exitCode, signalCode } = proc.child;
  const why = done
    ? `exited (${error?.message ?? `code ${exitCode}, signal ${signalCode}`})`
    : `did not answer PING within ${READY_TIMEOUT_MS} ms`;
  throw new Error(`redis-server (${bin}) on ${HOST}:${port} ${why}. Output:\n${output || '(none)'}`);
}

function createMaster(
  port: number,
  bin: string,
  dir: string | undefined,
  proc: Proc | undefined,
  extra?: LaunchOptions,
): RedisMaster {
  // `proc` stays set after an unexpected exit (e.g. killed by someone else) until kill() or stop() reaps it.
  const live = () => (proc?.state.done ? undefined : proc);
  const signal = (name: NodeJS.Signals) => {
    const current = live();
    if (!current) throw new Error(`redis-server on ${HOST}:${port} is not running`);
    current.child.kill(name);
  };
  return {
    port,
    url: `redis://${HOST}:${port}`,
    get pid() {
      return live()?.child.pid;
    },
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    async kill() {
      proc?.child.kill('SIGKILL');
      await proc?.exited;
      proc = undefined;
    },
    async restart() {
      if (live()) throw new Error(`redis-server on ${HOST}:${port} is still running (pid ${live()!.child.pid})`);
      dir ??= await makeTempDir();
      proc = await startOn(bin, port, dir, extra);
      if (!proc) throw new Error(`cannot restart redis-server: ${HOST}:${port} is in use by another process`);
    },
    async stop() {
      const stopping = proc;
      if (stopping) {
        stopping.child.kill('SIGCONT'); // always: a stopped process does not act on SIGTERM
        stopping.child.kill('SIGTERM');
        const timer = setTimeout(() => stopping.child.kill('SIGKILL'), STOP_GRACE_MS);
        await stopping.exited;
        clearTimeout(timer);
        proc = undefined;
      }
      if (dir) await removeTempDir(dir);
      dir = undefined;
    },
  };
}

async function makeTempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'redis-master-'));
  tempDirs.add(dir);
  return dir;
}

async function removeTempDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

async function startMaster(bin: string, extra?: LaunchOptions): Promise<RedisMaster> {
  const dir = await makeTempDir();
  try {
    for (let attempt = 1; attempt <= PORT_ATTEMPTS; attempt++) {
      const port = await freePort();
      const proc = await startOn(bin, port, dir, extra);
      if (proc) return createMaster(port, bin, dir, proc, extra);
    }
    throw new Error(`redis-server found no free port on ${HOST} in ${PORT_ATTEMPTS} attempts`);
  } catch (error) {
    await removeTempDir(dir);
    throw error;
  }
}

/**
 * Start `count` independent masters in parallel on free ports of 127.0.0.1, each answering PING.
 * The binary is `options.redisServer`, else `$REDIS_SERVER`, else `redis-server` from PATH.
 * @example
 * await using redis = await startRedisMasters(3);
 * const clients = redis.urls.map((url) => new Redis(url));
 */
export async function startRedisMasters(
  count: number,
  options: {
    redisServer?: string;
    /** Extra server arguments, e.g. `['--maxmemory', '4mb']`. */ args?: ServerArgs;
    /** Extra environment of the server processes, e.g. a fake clock's (`fakeClock().env`). */
    env?: Readonly<Record<string, string>>;
  } = {},
): Promise<RedisMasters> {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`count must be an integer >= 0, got ${count}`);
  const bin = options.redisServer ?? process.env.REDIS_SERVER ?? 'redis-server';
  const results = await Promise.allSettled(
    Array.from({ length: count }, () => startMaster(bin, { args: options.args, env: options.env })),
  );
  const masters = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const stop = async () => void (await Promise.all(masters.map((m) => m.stop())));
  const failure = results.find((r) => r.status === 'rejected');
  if (failure) {
    await stop();
    throw failure.reason;
  }
  return { masters, urls: masters.map((m) => m.url), stop, [Symbol.asyncDispose]: stop };
}

/**
 * A TCP port that was free on 127.0.0.1 a moment ago (bound to port 0, read, closed).
 * @example
 * const port = await freePort();
 */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, HOST);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  return port;
}
