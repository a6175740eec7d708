import { RedlockError } from './redlock.error.js';

/**
 * The `Redlock` (or `RedlockService`) was closed (`close()`, Nest `app.close()`): no new lock can be
 * acquired, and acquisitions in flight at that moment reject with this error.
 *
 * @example
 * try { await redlock.acquire('job', 5_000); }
 * catch (e) { if (e instanceof RedlockClosedError) return; throw e; } // shutting down
 * @publicApi
 */
export class RedlockClosedError extends RedlockError {
  constructor() {
    super('Redlock is closed (the application is shutting down); no new lock can be acquired.');
  }
}
