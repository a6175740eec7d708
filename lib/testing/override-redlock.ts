import { REDLOCK_MODULE_OPTIONS } from '../nest/redlock.module-definition.js';
import { RedlockService } from '../nest/redlock.service.js';
import { RedlockTestingService } from './redlock-testing.service.js';

/** The part of `@nestjs/testing`'s `TestingModuleBuilder` that `overrideRedlock` uses. */
export interface ProviderOverridable<B> {
  overrideProvider(token: unknown): { useValue(value: unknown): B };
}

/**
 * Swaps the application's `RedlockModule` for a `RedlockTestingService` in a testing module built
 * from the real `AppModule`. It overrides `RedlockService` and the module's options provider too,
 * so the options factory of `forRootAsync` (and the `ConfigService` it reads) never runs, and no
 * `REDLOCK_NODES` is needed.
 *
 * @param builder `Test.createTestingModule({ imports: [AppModule] })`.
 * @param service The stand-in (a new one by default); keep a reference to simulate busy or lost locks.
 * @example
 * const redlock = new RedlockTestingService();
 * const moduleRef = await overrideRedlock(Test.createTestingModule({ imports: [AppModule] }), redlock).compile();
 * @publicApi
 */
export function overrideRedlock<B extends ProviderOverridable<B>>(
  builder: B,
  service: RedlockTestingService = new RedlockTestingService(),
): B {
  return builder
    .overrideProvider(REDLOCK_MODULE_OPTIONS)
    .useValue(service.options)
    .overrideProvider(RedlockService)
    .useValue(service);
}
