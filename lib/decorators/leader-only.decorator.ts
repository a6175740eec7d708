import { Inject } from '@nestjs/common';
import type { LeadOptions, Leadership } from '../leadership/leadership.js';
import { checkCallOptions, checkTtl, resolveRetryOptions } from '../options/redlock-options.js';
import { RedlockClosedError } from '../errors/redlock-closed.error.js';
import { RedlockError } from '../errors/redlock.error.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import { RedlockService } from '../nest/redlock.service.js';

/**
 * Options of `@LeaderOnly(resource, options)`: those of `lead()`, without `signal` (the campaign
 * lasts as long as the application).
 *
 * @example
 * \@LeaderOnly('outbox', { ttl: 5_000, retryDelay: 1_000 })
 * @publicApi
 */
export type LeaderOnlyOptions = Omit<LeadOptions, 'signal'>;

/**
 * What `@LeaderOnly` decorates: a method returning a Promise (elsewhere than on the leader it resolves
 * to `undefined`, so a synchronous method would change its type).
 *
 * @example
 * const run: LeaderOnlyMethod = async () => undefined;
 */
export type LeaderOnlyMethod = (...args: never[]) => Promise<unknown>;

/** The hidden property through which `RedlockService` is injected into classes with `@LeaderOnly` methods. */
const REDLOCK_SERVICE = Symbol('RedlockService (LeaderOnly)');

/** The resources (and options) each decorated class campaigns for, read by the bootstrap explorer. */
const declared = new WeakMap<object, Map<string, LeaderOnlyOptions>>();

/** One campaign per service and resource, shared by every `@LeaderOnly` method on that resource. */
const campaigns = new WeakMap<RedlockService, Map<string, Leadership>>();

/**
 * The campaign of `service` for `resource`, started on first need. Undefined once the service has
 * closed (the application is shutting down): nothing leads then. @internal
 */
export function campaignFor(
  service: RedlockService,
  resource: string,
  options: LeaderOnlyOptions | undefined,
): Leadership | undefined {
  let byResource = campaigns.get(service);
  if (!byResource) campaigns.set(service, (byResource = new Map()));
  const existing = byResource.get(resource);
  if (existing && !existing.resigned) return existing;
  if (existing) return undefined; // resigned by close(): do not campaign again
  let leadership: Leadership;
  try {
    leadership = service.lead(resource, options);
  } catch (error) {
    if (error instanceof RedlockClosedError) return undefined; // closed: nothing leads any more
    throw error;
  }
  byResource.set(resource, leadership);
  return leadership;
}

/** The `@LeaderOnly` resources declared by `instance`'s class and its ancestors. @internal */
export function leaderOnlyResourcesOf(instance: object): Map<string, LeaderOnlyOptions> {
  const found = new Map<string, LeaderOnlyOptions>();
  for (
    let proto = Object.getPrototypeOf(instance) as object | null;
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    for (const [resource, options] of declared.get(proto) ?? []) if (!found.has(resource)) found.set(resource, options);
  }
  return found;
}

/**
 * Runs the method only in the application instance that currently leads `resource`; elsewhere the
 * call resolves to `undefined` without running it. The method then returns a Promise.
 *
 * Campaigning starts when the application boots (`onApplicationBootstrap`) for every provider and
 * controller that Nest built with such a method, so that the first `@Cron`/`@Interval` fires find a
 * leader; for an instance Nest did not discover (request-scoped), on the first call. Until the first
 * term is won (one round trip after boot) no instance runs the method. One campaign per resource is
 * shared by every method on it. `app.close()` resigns, and another instance takes over within a few
 * round trips; after a crash, within the TTL plus one `retryDelay`.
 *
 * @param resource The resource to lead (a plain name, not a template: leadership is per application, not per call).
 * @param options `ttl`, `retryDelay`, `retryJitter`, `fencing` of the campaign.
 * @example
 * \@Injectable()
 * export class ReportJob {
 *   \@Cron(CronExpression.EVERY_MINUTE)
 *   \@LeaderOnly('report-job')
 *   async run() { await this.reports.build(); } // runs on the leader only
 * }
 * @publicApi
 */
export function LeaderOnly(
  resource: string,
  options?: LeaderOnlyOptions,
): <T extends LeaderOnlyMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T>,
) => TypedPropertyDescriptor<T> {
  if (typeof resource !== 'string' || resource.length === 0) {
    throw new LockKeyError(
      `@LeaderOnly: \`resource\` must be a non-empty string; got ${resource === '' ? 'an empty string' : typeof resource}.`,
    );
  }
  if (options?.ttl !== undefined) checkTtl(options.ttl);
  checkCallOptions({ fencing: options?.fencing });
  // Refuse malformed retry settings now; how they combine with the module's options is checked at campaign start.
  resolveRetryOptions(
    {
      retryCount: 0,
      retryDelay: options?.retryDelay ?? Number.MAX_SAFE_INTEGER,
      retryJitter: 0,
      acquireTimeout: undefined,
    },
    { retryDelay: options?.retryDelay, retryJitter: options?.retryJitter },
  );
  return <T extends LeaderOnlyMethod>(
    target: object,
    propertyKey: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ): TypedPropertyDescriptor<T> => {
    const original: unknown = descriptor.value;
    const owner = typeof target === 'function' ? target.name : target.constructor.name;
    const where = `${owner}.${String(propertyKey)}`;
    if (typeof original !== 'function' || typeof target === 'function') {
      throw new RedlockError(`@LeaderOnly on ${where}: it decorates instance methods only.`);
    }
    let byResource = declared.get(target);
    if (!byResource) {
      declared.set(target, (byResource = new Map()));
      Inject(RedlockService)(target, REDLOCK_SERVICE);
    }
    byResource.set(resource, { ...options });

    const wrapper = async function (
      this: Record<symbol, RedlockService | undefined>,
      ...args: unknown[]
    ): Promise<unknown> {
      const service = this?.[REDLOCK_SERVICE];
      if (!service) {
        throw new RedlockError(
          `@LeaderOnly on ${where}: RedlockService was not injected. Nest injects it only into instances it builds from the class itself (a class provider or a controller), in an application that imports RedlockModule.forRoot().`,
        );
      }
      if (!campaignFor(service, resource, options)?.isLeader) return undefined;
      return Reflect.apply(original, this, args);
    };

    for (const key of Reflect.getOwnMetadataKeys(original))
      Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), wrapper);
    Object.defineProperty(wrapper, 'name', { value: original.name, configurable: true });
    descriptor.value = wrapper as unknown as T;
    return descriptor;
  };
}
