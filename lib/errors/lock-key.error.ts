import { RedlockError } from './redlock.error.js';

/**
 * A resource name or key template produced no usable key: an empty string, or a placeholder whose
 * value at call time is `undefined`, `null` or an object. Nothing was locked.
 *
 * @example
 * \@Locked('order:#id') pay(id?: string) {}
 * await service.pay(undefined); // rejects with LockKeyError, never locks "order:undefined"
 * @publicApi
 */
export class LockKeyError extends RedlockError {}
