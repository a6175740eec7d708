import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { MAX_TTL, type RedlockNode } from '../options/redlock-options.js';
import { redact } from '../util/redact.js';
import { Redlock } from '../engine/redlock.js';
import type { Lock } from '../lock/lock.js';
import { LockAcquisitionError } from '../errors/lock-acquisition.error.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { parseNodeList, requireNodes, type NodeEntry } from './node-list.js';
import { checkOwnerArgument, describeHolder, ownerLockOptions } from './run-owner.js';
import { UsageError } from './usage-error.js';

/**
 * The options only `run` takes, for the CLI's argument parser.
 *
 * @example
 * parseArgs({ args, options: { ...COMMON_OPTIONS, ...RUN_OPTIONS }, allowPositionals: true });
 */
export const RUN_OPTIONS = {
  resource: { type: 'string' },
  wait: { type: 'boolean' },
  'wait-timeout': { type: 'string' },
  owner: { type: 'string' },
  grace: { type: 'string' },
} as const;

/** `run`'s exit code when the lock is busy and `--wait` was not given: sysexits' EX_TEMPFAIL. */
export const EXIT_BUSY = 75;
/** `run`'s exit code when the lock was lost while the command ran, or Redis failed. */
export const EXIT_FAILED = 1;
/** The wait between SIGTERM and SIGKILL when the lock is lost, unless `--grace` says otherwise. */
export const DEFAULT_GRACE = 5_000;

/** What `run` was given on the command line, before checking. */
export interface RunArguments {
  readonly nodes?: string;
  readonly resource?: string;
  readonly ttl: string;
  readonly wait?: boolean;
  readonly waitTimeout?: string;
  readonly owner?: string;
  readonly grace?: string;
  readonly prefix: string;
  readonly timeout: string;
  /** Positionals between `run` and `--` (none are allowed). */
  readonly stray: readonly string[];
  /** The command and its arguments: everything after `--`. */
  readonly command: readonly string[];
}

interface Output {
  write(text: string): unknown;
}

/** The signals passed on to the child; the CLI exits 128 + signo for one that came before the child ran. */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** A whole number of ms in [min, MAX_TTL], or a `UsageError` naming `name`. */
function ms(name: string, text: string, min: number): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < min || n > MAX_TTL)
    throw new UsageError(`${name} must be a whole number of milliseconds from ${min} to ${MAX_TTL}; got ${text}`);
  return n;
}

/**
 * A `--nodes` entry as a `nodes` entry of the library, which opens (and reconnects) it.
 *
 * @example
 * new Redlock({ nodes: parseNodeList(text).map(redlockNodeOf) });
 */
export function redlockNodeOf(entry: NodeEntry): RedlockNode {
  if (entry.kind === 'master') return entry.url;
  return {
    cluster: [...entry.startup],
    options: {
      redisOptions: {
        ...(entry.username ? { username: entry.username } : {}),
        ...(entry.password ? { password: entry.password } : {}),
        ...(entry.tls ? { tls: {} } : {}),
      },
    },
  };
}

/** The checked arguments of `run`. */
interface RunPlan {
  readonly entries: NodeEntry[];
  readonly resource: string;
  readonly ttl: number;
  readonly wait: boolean;
  readonly waitTimeout: number | undefined;
  readonly owner: string | undefined;
  readonly grace: number;
  readonly connectTimeout: number;
  readonly command: readonly string[];
}

/** Checks every argument before anything is connected: a `UsageError` names the first bad one. */
function planOf(args: RunArguments): RunPlan {
  if (args.stray.length > 0)
    throw new UsageError(
      `unexpected argument ${JSON.stringify(args.stray[0])}: put the command after --, as in run … -- ${args.stray.join(' ')}`,
    );
  const entries = parseNodeList(requireNodes(args.nodes));
  if (args.resource === undefined || args.resource === '')
    throw new UsageError(`--resource is required: the lock's name (its key is ${args.prefix}<resource>)`);
  if (args.command.length === 0 || args.command[0] === '')
    throw new UsageError('a command after -- is required, as in run --resource nightly -- ./nightly.sh');
  const waitTimeout = args.waitTimeout === undefined ? undefined : ms('--wait-timeout', args.waitTimeout, 1);
  return {
    entries,
    resource: args.resource,
    ttl: ms('--ttl', args.ttl, 1),
    wait: args.wait === true || waitTimeout !== undefined,
    waitTimeout,
    owner: args.owner === undefined ? undefined : checkOwnerArgument(args.owner),
    grace: args.grace === undefined ? DEFAULT_GRACE : ms('--grace', args.grace, 0),
    connectTimeout: ms('--timeout', args.timeout, 1),
    command: args.command,
  };
}

/**
 * `nestjs-quorum-lock run`: acquires `--resource` on the masters (waiting for it with `--wait`),
 * runs the command with inherited stdio while the lock is renewed, releases it when the command
 * exits, and resolves to the command's exit code (128 + signo for a command killed by a signal).
 * A busy lock without `--wait` resolves to 75 (EX_TEMPFAIL). A lost lock sends the command SIGTERM,
 * then SIGKILL after `--grace` ms, and resolves to 1. SIGINT, SIGTERM and SIGHUP are passed on to
 * the command. Bad arguments throw `UsageError` before anything is connected or written.
 *
 * @example
 * process.exitCode = await runUnderLock({ nodes, resource: 'nightly', ttl: '30000', prefix: 'lock:', timeout: '2000', stray: [], command: ['./nightly.sh'] }, process.stderr);
 */
export async function runUnderLock(args: RunArguments, err: Output): Promise<number> {
  const plan = planOf(args);
  const secrets = plan.entries.flatMap((e) => e.secrets).sort((a, b) => b.length - a.length);
  const say = (text: string): void => void err.write(`nestjs-quorum-lock: ${redact(text, secrets)}\n`);
  // Who holds a busy lock: its owner is shown as is (an owner such as `cron@host-7` is no URL to scrub).
  const sayHeld = async (rest: string): Promise<void> =>
    void err.write(
      `nestjs-quorum-lock: ${redact(JSON.stringify(plan.resource), secrets)} ${await holderOf(redlock, plan.resource)}${redact(rest, secrets)}\n`,
    );
  let redlock: Redlock;
  try {
    redlock = new Redlock({
      nodes: plan.entries.map(redlockNodeOf),
      keyPrefix: args.prefix,
      ttl: plan.ttl,
      connectTimeout: plan.connectTimeout,
      retryCount: plan.wait ? Infinity : 0,
      logger: { log: () => undefined, warn: say, error: say },
    });
  } catch (e) {
    if (e instanceof RedlockConfigError) throw new UsageError(e.message);
    throw e;
  }

  // Before the command runs, a signal stops the wait (exit 128 + signo); once it runs, it goes to the command.
  const waiting = new AbortController();
  let received: NodeJS.Signals | undefined;
  let forward: ((signal: NodeJS.Signals) => void) | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (forward) return forward(signal);
    received ??= signal;
    waiting.abort(new Error(`${signal} received while waiting for the lock`));
  };
  for (const s of FORWARDED) process.on(s, onSignal);
  try {
    let lock: Lock | undefined;
    try {
      await redlock.connect();
      await redlock.whenTrusted({
        signal: waiting.signal,
        ...(plan.wait ? { timeout: plan.waitTimeout ?? MAX_TTL } : {}),
      });
      lock = await redlock.acquire(plan.resource, plan.ttl, {
        autoExtend: true,
        signal: waiting.signal,
        ...(plan.wait ? {} : { onBusy: 'skip' as const }),
        ...(plan.waitTimeout === undefined ? {} : { acquireTimeout: plan.waitTimeout }),
        ...ownerLockOptions(plan.owner),
      });
    } catch (e) {
      if (received) return 128 + constants.signals[received];
      if (e instanceof LockAcquisitionError && e.busy) {
        await sayHeld('; gave up after --wait-timeout.');
        return EXIT_BUSY;
      }
      say(`could not lock ${JSON.stringify(plan.resource)}: ${e instanceof Error ? e.message : String(e)}`);
      return EXIT_FAILED;
    }
    if (!lock) {
      await sayHeld('; not run (--wait waits for it).');
      return EXIT_BUSY;
    }
    const code = await supervise(lock, plan, say, (f) => (forward = f));
    try {
      await lock.release();
    } catch (e) {
      if (lock.lostReason === undefined)
        say(`release failed, the lock lapses within its TTL: ${e instanceof Error ? e.message : String(e)}`);
    }
    return code;
  } finally {
    for (const s of FORWARDED) process.off(s, onSignal);
    await redlock.close();
  }
}

/** The busy lock's holder, as far as the masters tell (never fails: this is only for a message). */
async function holderOf(redlock: Redlock, resource: string): Promise<string> {
  return describeHolder(await redlock.inspect(resource).catch(() => undefined));
}

/**
 * Runs the command while `lock` is held; resolves to its exit code (128 + signo when a signal
 * killed it), or to 1 when the lock was lost: the command then gets SIGTERM, and SIGKILL after
 * `grace` ms. `onForward` receives the function that passes the CLI's signals on to it.
 */
function supervise(
  lock: Lock,
  plan: RunPlan,
  say: (text: string) => void,
  onForward: (forward: (signal: NodeJS.Signals) => void) => void,
): Promise<number> {
  return new Promise((resolve) => {
    let settled = false;
    let lost = false;
    let killTimer: NodeJS.Timeout | undefined;
    const child = spawn(plan.command[0], plan.command.slice(1), { stdio: 'inherit' });
    const onLost = (): void => {
      lost = true;
      say(
        `the lock on ${JSON.stringify(plan.resource)} was lost (${lock.lostReason?.reason ?? 'lost'}): sending SIGTERM to the command, SIGKILL in ${plan.grace} ms.`,
      );
      child.kill('SIGTERM');
      killTimer = setTimeout(() => {
        say(`the command did not exit within --grace ${plan.grace} ms: sending SIGKILL.`);
        child.kill('SIGKILL');
      }, plan.grace);
    };
    const finish = (code: number): void => {
      if (settled) return;
      settled = true;
      clearTimeout(killTimer);
      lock.signal.removeEventListener('abort', onLost);
      onForward(() => undefined); // the command is gone; the lock is released next
      resolve(lost ? EXIT_FAILED : code);
    };
    child.on('error', (e: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return; // it runs: a signal that could not be sent
      say(`cannot run ${JSON.stringify(plan.command[0])}: ${e.message}`);
      finish(e.code === 'ENOENT' ? 127 : 126); // as shells do
    });
    child.on('exit', (code, signal) => finish(code ?? 128 + (signal ? constants.signals[signal] : 0)));
    onForward((signal) => child.kill(signal));
    if (lock.signal.aborted) onLost();
    else lock.signal.addEventListener('abort', onLost, { once: true });
  });
}
