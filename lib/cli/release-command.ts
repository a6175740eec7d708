import { redact } from '../util/redact.js';
import { Redlock } from '../engine/redlock.js';
import { checkRevokeOptions } from '../engine/revoke.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { parseNodeList, requireNodes } from './node-list.js';
import { redlockNodeOf } from './run-command.js';
import { UsageError } from './usage-error.js';

/**
 * The options only `release` takes, for the CLI's argument parser.
 *
 * @example
 * parseArgs({ args, options: { ...COMMON_OPTIONS, ...RELEASE_OPTIONS }, allowPositionals: true });
 */
export const RELEASE_OPTIONS = {
  force: { type: 'boolean' },
  reason: { type: 'string' },
} as const;

/** `release --force`'s exit code when it removed a holder. */
export const EXIT_REVOKED = 0;
/** `release --force`'s exit code when nothing was held (or no holder could be removed from enough masters). */
export const EXIT_NOT_HELD = 1;

/** What `release` was given on the command line, before checking. */
export interface ReleaseArguments {
  readonly nodes?: string;
  /** The positionals after `release`: the resource, and nothing else. */
  readonly positionals: readonly string[];
  readonly force?: boolean;
  readonly reason?: string;
  readonly prefix: string;
  readonly timeout: string;
}

interface Output {
  write(text: string): unknown;
}

/**
 * `nestjs-quorum-lock release <resource> --force [--reason text]`: revokes the lock on `resource`
 * whoever holds it (`Redlock.revoke`): removes its keys on every master, so that the holder's
 * instance aborts its work (`LockLostError`, reason `'revoked'`) and the next waiter gets it.
 * Resolves to 0 when it removed a holder, 1 when nothing was held or too few masters answered to
 * tell (said on `err`, never as "Nothing held"). Bad arguments throw
 * `UsageError` before anything is connected.
 *
 * @example
 * process.exitCode = await releaseForced({ nodes, positionals: ['nightly'], force: true, prefix: 'lock:', timeout: '2000' }, process.stdout, process.stderr);
 */
export async function releaseForced(args: ReleaseArguments, out: Output, err: Output): Promise<number> {
  const [resource, ...stray] = args.positionals;
  if (resource === undefined || resource === '')
    throw new UsageError(
      `release needs the resource: release <resource> --force (its key is ${args.prefix}<resource>)`,
    );
  if (stray.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(stray[0])}`);
  if (args.force !== true)
    throw new UsageError(
      'release takes the lock away from whoever holds it, so it needs --force: release <resource> --force [--reason text]',
    );
  const entries = parseNodeList(requireNodes(args.nodes));
  const options = args.reason === undefined ? undefined : { reason: args.reason };
  try {
    checkRevokeOptions(options); // before anything is connected
  } catch (e) {
    if (e instanceof RedlockConfigError) throw new UsageError(`--${e.option}: ${e.message}`);
    throw e;
  }
  const connectTimeout = Number(args.timeout);
  if (!Number.isSafeInteger(connectTimeout) || connectTimeout <= 0)
    throw new UsageError(`--timeout must be a whole number > 0; got ${args.timeout}`);
  const secrets = entries.flatMap((e) => e.secrets).sort((a, b) => b.length - a.length);
  const say = (text: string): void => void err.write(`nestjs-quorum-lock: ${redact(text, secrets)}\n`);
  let redlock: Redlock;
  try {
    redlock = new Redlock({
      nodes: entries.map(redlockNodeOf),
      keyPrefix: args.prefix,
      connectTimeout,
      restartGuard: false, // it takes nothing: a vote of a fresh master does not matter here
      logger: { log: () => undefined, warn: say, error: say },
    });
  } catch (e) {
    if (e instanceof RedlockConfigError) throw new UsageError(e.message);
    throw e;
  }
  try {
    let result;
    try {
      await redlock.connect();
      result = await redlock.revoke(resource, options);
    } catch (e) {
      if (e instanceof RedlockConfigError) throw new UsageError(`--${e.option}: ${e.message}`);
      throw e;
    }
    const who = result.owner === null ? 'a holder without owner' : JSON.stringify(result.owner);
    if (result.revoked) {
      out.write(`Revoked ${JSON.stringify(resource)} from ${who}.\n`);
      return EXIT_REVOKED;
    }
    if (result.holder !== null) {
      say(`${JSON.stringify(resource)} is held by ${who}, but too few masters answered to remove it.`);
      return EXIT_NOT_HELD;
    }
    // Masters that did not answer may hold it: "nothing held" only when a quorum said so.
    const view = await redlock.inspect(resource);
    const answered = view.masters.filter((m) => m.error === undefined).length;
    if (answered < view.quorum) {
      say(
        `only ${answered} of ${view.masters.length} masters answered (a lock needs ${view.quorum}): cannot tell whether ${JSON.stringify(resource)} is held; nothing was removed.`,
      );
      return EXIT_NOT_HELD;
    }
    out.write(`Nothing held on ${JSON.stringify(resource)}.\n`);
    return EXIT_NOT_HELD;
  } finally {
    await redlock.close();
  }
}
