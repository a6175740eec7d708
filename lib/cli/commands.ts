import { parseArgs } from 'node:util';
import { REDLOCK_DEFAULTS } from '../options/redlock-options.js';
import { redactUrl } from '../util/redact.js';
import { quorumOf } from '../errors/outcomes.js';
import { parseNodeList, requireNodes } from './node-list.js';
import { RUN_OPTIONS, runUnderLock } from './run-command.js';
import { RELEASE_OPTIONS, releaseForced } from './release-command.js';
import { UsageError } from './usage-error.js';
import { scrub, connectAll, openNode, openCluster, type CliNode } from './cli-nodes.js';
import { type Output } from './table.js';
import { inspect } from './inspect-command.js';
import { masters } from './masters-command.js';

const USAGE = `Usage:
  nestjs-quorum-lock inspect --nodes redis://a:6379,redis://b:6379,redis://c:6379 [--prefix lock:] [--fencing-prefix fence:] [--json] [--limit 1000] [pattern]
  nestjs-quorum-lock masters --nodes redis://a:6379,redis://b:6379,redis://c:6379 [--ttl 10000] [--json]
  nestjs-quorum-lock run --nodes redis://a:6379,redis://b:6379,redis://c:6379 --resource R [--ttl 10000] [--wait] [--wait-timeout ms] [--owner text] [--grace 5000] [--prefix lock:] -- <command> [args…]
  nestjs-quorum-lock release <resource> --force --nodes redis://a:6379,redis://b:6379,redis://c:6379 [--reason text] [--prefix lock:]

--nodes  comma-separated nodes, each one vote: a master's redis:// URL, or a whole Redis Cluster as
         cluster:<startup node>+<startup node>+... (each a redis:// URL or host:port), e.g.
         --nodes cluster:redis://x1:7000+redis://x2:7000,cluster:y1:7000,cluster:z1:7000
inspect  lists the locks held under the prefix (SCAN, never KEYS): per-master agreement, the
         conservative time left, fencing counters. pattern is a glob on the resource (default *).
         Read-write locks show one row per reader (STATE read); counting locks one row per
         held permit slot (STATE permit i/limit). A cluster is scanned on every shard primary.
masters  shows each master (a cluster as one row: its youngest shard, every shard a primary): reachable, role, uptime, whether the restart guard would count it for
         locks up to --ttl ms, and its maxmemory-policy (anything but noeviction can drop a lock).
run      acquires the lock R (key <prefix>R), runs the command with inherited stdio while renewing
         the lock every third of --ttl ms, and releases it when the command exits. --wait waits
         for a busy lock (up to --wait-timeout ms, which implies --wait); without it a busy lock
         exits 75. When the lock is lost the command gets SIGTERM, then SIGKILL after --grace ms
         (default 5000), and run exits 1. SIGINT, SIGTERM and SIGHUP are passed on to the command.
         --owner (at most 256 characters, one line) names the holder, shown by inspect and
         in the message of a run refused with 75 (default <hostname>:<pid>).
release  with --force: revokes the lock on <resource> whoever holds it. Its keys are removed on
         every master (every reader or permit holder too); the holder's process sees its lock
         lost (reason revoked, with --reason as detail) and the next waiter gets it.
inspect and masters are read-only: they write nothing. Passwords in URLs are never printed.

Exit codes: 0 ok; 1 fewer than a quorum of masters reachable (inspect) or counting for locks
(masters: reachable, a master, past the restart guard for --ttl, noeviction, not the same server as
an earlier node); 2 bad usage.
run: the command's exit code (128 + signo when a signal killed it); 75 the lock is held elsewhere
(without --wait, or past --wait-timeout); 1 the lock was lost while the command ran, or no quorum
of masters; 2 bad usage; 127 the command was not found.
release --force: 0 a holder was removed; 1 nothing was held (or too few masters answered); 2 bad usage.`;

/** The command line's options: every command's (each command checks that only its own are set). */
const OPTIONS = {
  nodes: { type: 'string' },
  prefix: { type: 'string', default: REDLOCK_DEFAULTS.keyPrefix },
  'fencing-prefix': { type: 'string', default: REDLOCK_DEFAULTS.fencingPrefix },
  ttl: { type: 'string', default: String(REDLOCK_DEFAULTS.ttl) },
  limit: { type: 'string', default: '1000' },
  timeout: { type: 'string', default: '2000' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
  ...RUN_OPTIONS,
  ...RELEASE_OPTIONS,
} as const;

type Parsed = ReturnType<typeof parseCommandLine>;

function parseCommandLine(argv: readonly string[]) {
  return parseArgs({ args: [...argv], allowPositionals: true, options: OPTIONS, tokens: true });
}

/** Bad usage: the message (passwords scrubbed) and the usage text on stderr, exit code 2. */
function badUsage(err: Output, message: string): number {
  err.write(`nestjs-quorum-lock: ${message}\n\n${USAGE}\n`);
  return 2;
}

/** The first option of `options` given on the command line, if any. */
function givenOf(options: object, values: object): string | undefined {
  return Object.keys(options).find((name) => name in values);
}

/** `run`, or a `run` option given to another command. */
async function run({ values, positionals, tokens }: Parsed, argv: readonly string[], err: Output): Promise<number> {
  const stray = givenOf(RUN_OPTIONS, values);
  if (positionals[0] !== 'run') throw new UsageError(`--${stray} is an option of run only`);
  const terminator = tokens.find((t) => t.kind === 'option-terminator');
  const child = terminator ? argv.slice(terminator.index + 1) : [];
  return runUnderLock(
    {
      ...values,
      waitTimeout: values['wait-timeout'],
      stray: positionals.slice(1, positionals.length - child.length),
      command: child,
    },
    err,
  );
}

/** `release --force`, or a `release` option given to another command. */
async function release({ values, positionals }: Parsed, out: Output, err: Output): Promise<number> {
  const stray = givenOf(RELEASE_OPTIONS, values);
  if (positionals[0] !== 'release') throw new UsageError(`--${stray} is an option of release only`);
  return releaseForced({ ...values, positionals: positionals.slice(1) }, out, err);
}

/** `inspect` and `masters`: read-only, over connections of their own to every node. */
async function readOnly({ values, positionals }: Parsed, out: Output, err: Output): Promise<number> {
  const [command, pattern = '*', ...extra] = positionals;
  const number = (name: 'ttl' | 'limit' | 'timeout'): number => {
    const n = Number(values[name]);
    if (!Number.isSafeInteger(n) || n <= 0)
      throw new UsageError(`--${name} must be a whole number > 0; got ${values[name]}`);
    return n;
  };
  let nodes: CliNode[] = [];
  try {
    if (command !== 'inspect' && command !== 'masters')
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    if (extra.length > 0 || (command === 'masters' && positionals.length > 1))
      throw new UsageError(`unexpected argument ${JSON.stringify(positionals.at(-1))}`);
    const nodeList = requireNodes(values.nodes);
    const timeout = number('timeout');
    nodes = parseNodeList(nodeList).map((entry) =>
      entry.kind === 'cluster' ? openCluster(entry, timeout) : openNode(entry, timeout),
    );
    const errors = await connectAll(nodes);
    const quorum = quorumOf(nodes.length);
    if (command === 'masters') return (await masters(nodes, errors, number('ttl'), values.json, out)) >= quorum ? 0 : 1;
    const { prefix, json } = values;
    await inspect(nodes, errors, prefix, values['fencing-prefix'], pattern, number('limit'), timeout, json, out);
    return errors.filter((e) => e === undefined).length >= quorum ? 0 : 1;
  } catch (e) {
    if (e instanceof UsageError) return badUsage(err, scrub(e.message, nodes));
    throw new Error(scrub(e instanceof Error ? e.message : String(e), nodes));
  } finally {
    for (const n of nodes) n.client.disconnect();
  }
}

/**
 * Runs the CLI; resolves to the exit code: 0 ok; 1 below a quorum of reachable masters (`inspect`)
 * or of masters whose votes would count for a lock now (`masters`); 2 bad usage.
 *
 * @example
 * process.exitCode = await runCli(process.argv.slice(2), process.stdout);
 */
export async function runCli(argv: readonly string[], out: Output, err: Output = process.stderr): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (e) {
    err.write(`${redactUrl((e as Error).message)}\n\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const command = positionals[0];
  if (values.help || command === undefined || command === 'help') {
    (values.help || command === 'help' ? out : err).write(`${USAGE}\n`);
    return values.help || command === 'help' ? 0 : 2;
  }
  try {
    if (command === 'run' || givenOf(RUN_OPTIONS, values)) return await run(parsed, argv, err);
    if (command === 'release' || givenOf(RELEASE_OPTIONS, values)) return await release(parsed, out, err);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    return badUsage(err, redactUrl(e.message));
  }
  return readOnly(parsed, out, err);
}
