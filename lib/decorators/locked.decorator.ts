import { Inject } from '@nestjs/common';
import { isObservable, Observable, throwError } from 'rxjs';
import { compileLockKey, type LockKey } from '../lock/key-template.js';
import { resolveHoldOptions, type HoldOptions } from '../options/hold-options.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { checkCallOptions, checkTtl, resolveRetryOptions, type RetryOptions } from '../options/redlock-options.js';
import { parameterNamesOf } from '../lock/parameter-names.js';
import { checkLockMode, type LockModeOptions } from '../kinds/lock-mode.js';
import { RedlockError } from '../errors/redlock.error.js';
import { KEY_TEMPLATE, keyTemplateOf } from '../ops/diagnostics.js';
import { RedlockService } from '../nest/redlock.service.js';
import { lockedAsyncGenerator } from './locked-generator.js';
import { lockedObservable } from './locked-observable.js';
import { lockedCall } from './locked-call.js';

/**
 * Options of `@Locked(key, options)`: the lock's TTL and per-method retry settings.
 *
 * @example
 * \@Locked('report:#day', { ttl: 30_000, retryCount: 0 })
 * @publicApi
 */
export interface LockedOptions extends RetryOptions, LockModeOptions, HoldOptions {
  /** Lock TTL in ms; the lock is renewed while the method runs. @default the module's `ttl` */
  ttl?: number;
  /** Issue a fencing token (`currentLock()!.fencingToken` inside the method). @default the module's `fencing` */
  fencing?: boolean;
  /** Who holds the lock, for operators (`inspect()`, the CLI). @default the module's `owner` */
  owner?: string;
}

/** The hidden property through which `RedlockService` is injected into decorated classes. */
const REDLOCK_SERVICE = Symbol('RedlockService');

const injected = new WeakSet<object>();

/**
 * The methods `@Locked` accepts: those declared to return a Promise, an Observable or an async
 * iterable (an `async *` generator). A method typed as synchronous (`void`, a plain value) is a
 * compile error: once decorated it returns a Promise, and a rejection (lock busy) nobody awaits
 * would crash the process while its type still said `void`.
 *
 * @example
 * \@Locked('audit:#id')
 * async audit(id: number): Promise<void> { await this.log.write(id); }
 * @publicApi
 */
export type LockableMethod = (...args: any[]) => PromiseLike<unknown> | Observable<unknown> | AsyncIterable<unknown>;

/** The decorator `@Locked(...)` returns: it only fits a {@link LockableMethod}. */
export type LockedDecorator = <M extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => TypedPropertyDescriptor<M> | void;

function copyMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}

/** Refuses what `@Locked` cannot make hold a lock: a non-method, a static method, a synchronous generator. */
function checkLockable(
  original: unknown,
  isStatic: boolean,
  where: string,
  propertyKey: string | symbol,
): asserts original is (...args: never[]) => unknown {
  if (typeof original !== 'function') {
    throw new RedlockError(`@Locked on ${where}: it decorates methods only.`);
  }
  if (isStatic) {
    throw new RedlockError(
      `@Locked on static method ${where}: static methods are not supported. RedlockService is injected into the instances Nest creates, and a static method runs without one; make it an instance method of a provider, or call RedlockService.using() in it.`,
    );
  }
  const shape = (original as { constructor?: { name?: string } }).constructor?.name;
  if (shape === 'GeneratorFunction') {
    throw new RedlockError(
      `@Locked on ${where}: a synchronous generator cannot hold a lock (taking one is asynchronous, and its caller could not wait for it); declare it \`async *${String(propertyKey)}()\`.`,
    );
  }
}

/** Refuses bad `@Locked` options at decoration time, naming the option (how retries combine with the module's is checked per call). */
function checkLockedOptions(options: LockedOptions, where: string): void {
  if (options.ttl !== undefined) {
    try {
      checkTtl(options.ttl);
    } catch (error) {
      // `.option` stays the option's own name ('ttl'), as for every other @Locked option; the message says where.
      if (error instanceof RedlockConfigError)
        throw new RedlockConfigError('ttl', `@Locked on ${where}: ${error.message}`);
      throw error;
    }
  }
  checkCallOptions(options); // a typo (`retryCont`) is refused here, naming it
  checkLockMode(options); // `mode` / `limit` refused at decoration time, naming the option
  resolveHoldOptions(options, options.ttl);
  // Refuse malformed retry settings now; how they combine with the module's options is checked per call.
  resolveRetryOptions(
    {
      retryCount: 0,
      retryDelay: options.retryDelay ?? Number.MAX_SAFE_INTEGER,
      retryJitter: 0,
      acquireTimeout: undefined,
    },
    options,
  );
}

/**
 * Runs the method under a Redlock quorum lock on the resources named by `key`: acquired before the
 * method runs (for a controller, after guards and pipes, with the handler's real arguments), renewed
 * while it runs, released on every master when it settles. The method must be declared to return a
 * Promise, an Observable or be an `async *` generator (a compile error otherwise).
 *
 * - The method's own errors pass through unchanged; if the lock was lost while it ran, the call
 *   rejects with `LockLostError` after it settles. Inside, `currentLock()` gives the lock (its
 *   `signal`, its remaining `validity`).
 * - Reentrant: a `@Locked` call on resources its own call chain holds runs without acquiring them
 *   again, at any depth; sibling calls of one holder (`Promise.all`) take turns, one at a time. A
 *   call that inherits the lock keeps it held until it settles; once the holder has returned, a
 *   later call (a timer it started) acquires the lock like any other caller.
 * - A method declared to return `Observable<T>` takes the lock when subscribed and keeps it until the
 *   Observable completes, errors or is unsubscribed; an `async` method resolving to an Observable
 *   keeps it while that Observable is subscribed. An `async *` generator holds it from the first
 *   `next()` until it returns, throws or is closed early (`return()`, `break` in `for await`).
 * - `onBusy: 'skip'`: when another holder has the lock the method does not run and the call
 *   resolves to `undefined` (an Observable completes empty; a generator yields nothing).
 * - Route, pipe, Swagger and `@Cron` metadata are kept, whichever order the decorators are in.
 * - Static methods and synchronous generators are refused when the class is defined.
 *
 * @param key A template (`'order:#id'`, `'#0'`, `'cart:#dto.id'`), an array of them, or a function of the arguments.
 * @param ttlOrOptions The TTL in ms, or `LockedOptions`.
 * @throws LockKeyError at decoration when a placeholder names no parameter; at call time (as a
 *   rejection) when a placeholder's value is undefined, null, empty or an object.
 * @throws RedlockConfigError at decoration for a malformed option (named in `.option`).
 * @example
 * \@Controller('orders')
 * export class OrdersController {
 *   \@Post(':id/pay')
 *   \@Locked('order:#id', 5_000)
 *   async pay(\@Param('id', ParseIntPipe) id: number) { return this.orders.pay(id); }
 * }
 * @publicApi
 */
export function Locked(key: LockKey, ttlOrOptions?: number | LockedOptions): LockedDecorator {
  const options: LockedOptions = typeof ttlOrOptions === 'number' ? { ttl: ttlOrOptions } : { ...ttlOrOptions };
  return (target: object, propertyKey: string | symbol, descriptor: PropertyDescriptor) => {
    const original: unknown = descriptor.value;
    const isStatic = typeof target === 'function';
    const owner = isStatic ? target.name : target.constructor.name;
    const where = `${owner}.${String(propertyKey)}`;
    (options as Record<symbol, unknown>)[KEY_TEMPLATE] = keyTemplateOf(key, where); // for the diagnostics channels and metrics
    checkLockable(original, isStatic, where, propertyKey);
    const shape = (original as { constructor?: { name?: string } }).constructor?.name;
    checkLockedOptions(options, where);
    const resourcesOf = compileLockKey(key, parameterNamesOf(original), where);
    const declaresObservable = isObservable(
      (Reflect.getMetadata('design:returntype', target, propertyKey) as { prototype?: unknown } | undefined)?.prototype,
    );

    if (!injected.has(target)) {
      Inject(RedlockService)(target, REDLOCK_SERVICE);
      injected.add(target);
    }

    /** The service and the resources of one call, or the error that refuses it. */
    const prepare = (
      self: Record<symbol, RedlockService | undefined> | undefined,
      args: unknown[],
    ): { service: RedlockService; resources: string[] } => {
      const service = self?.[REDLOCK_SERVICE];
      if (!service) {
        throw new RedlockError(
          `@Locked on ${where}: RedlockService was not injected. Nest injects it only into instances it builds from the class itself (a class provider or a controller, not \`new\`, \`useValue\` or \`useFactory\`), in an application that imports RedlockModule.forRoot().`,
        );
      }
      return { service, resources: resourcesOf(args) };
    };

    let wrapper: (this: Record<symbol, RedlockService | undefined>, ...args: unknown[]) => unknown;
    if (shape === 'AsyncGeneratorFunction') {
      wrapper = function (...args) {
        return lockedAsyncGenerator(
          (body) => {
            const { service, resources } = prepare(this, args);
            return service.using(resources, options.ttl, body, options);
          },
          () => Reflect.apply(original, this, args) as AsyncGenerator<unknown, unknown, unknown>,
        );
      };
    } else {
      wrapper = function (...args) {
        const run = (): unknown => Reflect.apply(original, this, args);
        let service: RedlockService;
        let resources: string[];
        try {
          ({ service, resources } = prepare(this, args));
        } catch (error) {
          return declaresObservable ? throwError(() => error) : Promise.reject(error);
        }
        if (declaresObservable) {
          return lockedObservable(
            (body) => service.using(resources, options.ttl, body, options),
            run as () => Observable<unknown>,
          );
        }
        return lockedCall(service, resources, options, run);
      };
    }

    copyMetadata(original, wrapper);
    Object.defineProperty(wrapper, 'name', { value: (original as { name: string }).name, configurable: true });
    descriptor.value = wrapper;
    return descriptor;
  };
}
