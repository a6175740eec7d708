/**
 * Where the library reports what an operator should know: masters distrusted or unreachable at
 * start-up, risky server settings, lost locks. Framework-free: Nest's `Logger` fits as it is, and so
 * does `console`. No line ever contains a password or a lock value.
 *
 * @example
 * new Redlock({ nodes, logger: console });            // everything, on the console
 * new Redlock({ nodes, logger: false });              // silent
 * new Redlock({ nodes, logger: new Logger('Redlock') }); // Nest (RedlockService does this by default)
 * @publicApi
 */
export interface RedlockLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug?(message: string): void;
}

/** Silence. */
const SILENT: Required<RedlockLogger> = { log() {}, warn() {}, error() {}, debug() {} };

/**
 * The default outside Nest: warnings and errors on `console`, prefixed `[Redlock]`; informational
 * lines are dropped (pass `logger: console` to see them).
 */
const CONSOLE_WARNINGS: Required<RedlockLogger> = {
  log() {},
  warn: (message) => console.warn(`[Redlock] ${message}`),
  error: (message) => console.error(`[Redlock] ${message}`),
  debug() {},
};

/** Turns the `logger` option into a logger with every method present. */
export function resolveLogger(logger: RedlockLogger | false | undefined): Required<RedlockLogger> {
  if (logger === false) return SILENT;
  if (logger === undefined) return CONSOLE_WARNINGS;
  return {
    log: (m) => logger.log(m),
    warn: (m) => logger.warn(m),
    error: (m) => logger.error(m),
    debug: (m) => logger.debug?.(m),
  };
}

/** True when `value` can serve as the `logger` option. */
export function isLogger(value: unknown): value is RedlockLogger {
  if (value === null || typeof value !== 'object') return false;
  const l = value as Record<string, unknown>;
  return typeof l.log === 'function' && typeof l.warn === 'function' && typeof l.error === 'function';
}
