import { RedlockError } from './redlock.error.js';

/**
 * An option or argument was refused before anything was sent to a master.
 * `option` names what to change (for example `ttl`, `nodes[1]` or `retryCount`).
 *
 * @example
 * new Redlock({ nodes: [] }); // throws RedlockConfigError: `nodes` must list at least one Redis master…
 * @publicApi
 */
export class RedlockConfigError extends RedlockError {
  constructor(
    /** The option or argument at fault, as the user spells it. */
    readonly option: string,
    message: string,
  ) {
    super(message);
  }
}
