import { Inject } from '@nestjs/common';
import { isObservable, throwError, type Observable } from 'rxjs';
import { compileLockKey, type LockKey } from '../core/key-template.js';
import { checkCallOptions, checkTtl, resolveRetryOptions, type RetryOptions } from '../core/options.js';
import { parameterNamesOf } from '../core/parameter-names.js';
import { checkLockMode, type LockModeOptions } from '../core/lock-mode.js';
import { RedlockError } from '../errors/redlock.error.js';
import { KEY_TEMPLATE, keyTemplateOf } from '../ops/diagnostics.js';
import { RedlockService } from '../redlock.service.js';
import { heldObservable, lockedObservable } from './locked-observable.js';

/**
 * Options of `@Locked(key, options)`: the lock's TTL and per-method retry settings.
 *
 * @example
 * \@Locked('report:#day', { ttl: 30_000, retryCount: 0 })
 * @publicApi
 */
export interface LockedOptions extends RetryOptions, LockModeOptions {
  /** Lock TTL in ms; the lock is renewed while the method runs. @default the module's `ttl` */
  ttl?: number;
  /** Issue a fencing token (`currentLock()!.fencingToken` inside the method). @default the module's `fencing` */
  fencing?: boolean;
}

/** The hidden property through which `RedlockService` is injected into decorated classes. */
const REDLOCK_SERVICE = Symbol('RedlockService');

const injected = new WeakSet<object>();

function copyMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}

/**
 * Runs the method under a Redlock quorum lock on the resources named by `key`: acquired before the
 * method runs (for a controller, after guards and pipes, with the handler's real arguments), renewed
 * while it runs, released on every master when it settles. The method then returns a Promise.
 *
 * - The method's own errors pass through unchanged; if the lock was lost while it ran, the call
 *   rejects with `LockLostError` after it settles. Inside, `currentLock()` gives the lock (its
 *   `signal`, its remaining `validity`).
 * - A nested `@Locked` call on resources already held in the same call chain runs without acquiring
 *   them again (no self-deadlock).
 * - A method declared to return `Observable<T>` takes the lock when subscribed and keeps it until the
 *   Observable completes, errors or is unsubscribed.
 * - Route, pipe, Swagger and `@Cron` metadata are kept, whichever order the decorators are in.
 *
 * @param key A template (`'order:#id'`, `'#0'`, `'cart:#dto.id'`), an array of them, or a function of the arguments.
 * @param ttlOrOptions The TTL in ms, or `LockedOptions`.
 * @throws LockKeyError at decoration when a placeholder names no parameter; at call time (as a
 *   rejection) when a placeholder's value is undefined, null, empty or an object.
 * @example
 * \@Controller('orders')
 * export class OrdersController {
 *   \@Post(':id/pay')
 *   \@Locked('order:#id', 5_000)
 *   pay(\@Param('id', ParseIntPipe) id: number) { return this.orders.pay(id); }
 * }
 * @publicApi
 */
export function Locked(key: LockKey, ttlOrOptions?: number | LockedOptions): MethodDecorator {
  const options: LockedOptions = typeof ttlOrOptions === 'number' ? { ttl: ttlOrOptions } : { ...ttlOrOptions };
  return (target: object, propertyKey: string | symbol, descriptor: PropertyDescriptor) => {
    const original: unknown = descriptor.value;
    const owner = typeof target === 'function' ? target.name : target.constructor.name;
    const where = `${owner}.${String(propertyKey)}`;
    (options as Record<symbol, unknown>)[KEY_TEMPLATE] = keyTemplateOf(key, where); // for the diagnostics channels and metrics
    if (typeof original !== 'function') {
      throw new RedlockError(`@Locked on ${where}: it decorates methods only.`);
    }
    if (options.ttl !== undefined) checkTtl(options.ttl, `@Locked ttl on ${where}`);
    checkCallOptions({ fencing: options.fencing });
    checkLockMode(options); // `mode` / `limit` refused at decoration time, naming the option
    // Refuse malformed retry settings now; how they combine with the module's options is checked per call.
    resolveRetryOptions({ retryCount: 0, retryDelay: options.retryDelay ?? Number.MAX_SAFE_INTEGER, retryJitter: 0, acquireTimeout: undefined }, options);
    const resourcesOf = compileLockKey(key, parameterNamesOf(original as (...args: never[]) => unknown), where);
    const declaresObservable = isObservable((Reflect.getMetadata('design:returntype', target, propertyKey) as { prototype?: unknown } | undefined)?.prototype);

    if (!injected.has(target)) {
      Inject(RedlockService)(target, REDLOCK_SERVICE);
      injected.add(target);
    }

    const wrapper = function (this: Record<symbol, RedlockService | undefined>, ...args: unknown[]): unknown {
      const service = this?.[REDLOCK_SERVICE];
      const run = (): unknown => Reflect.apply(original, this, args);
      let resources: string[];
      try {
        if (!service) {
          throw new RedlockError(
            `@Locked on ${where}: RedlockService was not injected. Nest injects it only into instances it builds from the class itself (a class provider or a controller, not \`new\`, \`useValue\` or \`useFactory\`), in an application that imports RedlockModule.forRoot().`,
          );
        }
        resources = resourcesOf(args);
      } catch (error) {
        return declaresObservable ? throwError(() => error) : Promise.reject(error);
      }
      if (declaresObservable) {
        return lockedObservable((body) => service.using(resources, options.ttl, body, options), run as () => Observable<unknown>);
      }
      return new Promise((resolve, reject) => {
        let handedOut = false;
        let settled: Promise<unknown> | undefined;
        settled = service.using(
          resources,
          options.ttl,
          () => {
            const result = run();
            if (!isObservable(result)) return result;
            handedOut = true;
            const relocked = lockedObservable((body) => service.using(resources, options.ttl, body, options), () => result as Observable<unknown>);
            return new Promise<void>((done, fail) => resolve(heldObservable(result, done, fail, () => settled!, relocked, options.ttl ?? service.options.ttl)));
          },
          options,
        );
        settled.then(
          (value) => handedOut || resolve(value),
          (error: unknown) => handedOut || reject(error),
        );
      });
    };

    copyMetadata(original, wrapper);
    Object.defineProperty(wrapper, 'name', { value: original.name, configurable: true });
    descriptor.value = wrapper;
    return descriptor;
  };
}
