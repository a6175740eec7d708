import { AsyncLocalStorage } from 'node:async_hooks';
import { isObservable, Observable } from 'rxjs';
import type { RedlockService } from '../nest/redlock.service.js';
import type { UsingOptions } from '../engine/call-spec.js';
import { heldObservable, lockedObservable } from './locked-observable.js';

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  value !== null &&
  (typeof value === 'object' || typeof value === 'function') &&
  typeof (value as { then?: unknown }).then === 'function';

/**
 * One `@Locked` call of a method that returns a value or a Promise: `run` under the lock on
 * `resources`, released when it settles. An Observable met at run time (returned, or resolved by an
 * async method) keeps the lock while it is subscribed instead.
 *
 * @example
 * return lockedCall(service, ['order:42'], { ttl: 5_000 }, () => Reflect.apply(original, this, args));
 */
export function lockedCall(
  service: RedlockService,
  resources: string[],
  options: UsingOptions & { ttl?: number },
  run: () => unknown,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let handedOut = false;
    // An Observable met at run time (returned, or resolved by an async method) keeps the lock while subscribed.
    const handOut = (result: unknown): unknown => {
      if (!isObservable(result)) return result;
      handedOut = true;
      // Subscribed later by the caller: run the subscription in the lock's call chain all the same.
      const inLock = AsyncLocalStorage.snapshot();
      const source = new Observable<unknown>((subscriber) => inLock(() => result.subscribe(subscriber)));
      const relocked = lockedObservable(
        (body) => service.using(resources, options.ttl, body, options),
        () => result,
      );
      return new Promise<void>((done, fail) =>
        resolve(heldObservable(source, done, fail, () => settled, relocked, options.ttl ?? service.options.ttl)),
      );
    };
    const settled: Promise<unknown> = service.using(
      resources,
      options.ttl,
      () => {
        const result = run();
        return isPromiseLike(result) ? Promise.resolve(result).then(handOut) : handOut(result);
      },
      options,
    );
    settled.then(
      (value) => {
        if (!handedOut) resolve(value);
      },
      (error: unknown) => handedOut || reject(error),
    );
  });
}
