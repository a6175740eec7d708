/**
 * Base class of every error this library throws. Catch it to tell lock problems apart from your own.
 *
 * @example
 * try { await redlock.using('report', 5_000, run); }
 * catch (e) { if (e instanceof RedlockError) log.warn(e.message); else throw e; }
 * @publicApi
 */
export class RedlockError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    Error.captureStackTrace?.(this, new.target);
  }

  override get name(): string {
    return this.constructor.name;
  }
}
