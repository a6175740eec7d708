import { Module, type DynamicModule } from '@nestjs/common';
import { REDLOCK_MODULE_OPTIONS } from '../nest/redlock.module-definition.js';
import { RedlockService } from '../nest/redlock.service.js';
import { RedlockTestingService } from './redlock-testing.service.js';

/**
 * Replaces `RedlockModule` in a test: a global module that provides a `RedlockTestingService` under
 * the `RedlockService` token (so `@Locked` and injected `RedlockService`s use it) and no Redis.
 *
 * @example
 * const redlock = new RedlockTestingService();
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RedlockTestingModule.forRoot(redlock)],
 *   providers: [OrdersService],
 * }).compile();
 * @publicApi
 */
@Module({})
export class RedlockTestingModule {
  /** @param service The stand-in to provide (a new one by default); keep a reference to simulate busy or lost locks. */
  static forRoot(service: RedlockTestingService = new RedlockTestingService()): DynamicModule {
    return {
      module: RedlockTestingModule,
      global: true,
      providers: [
        { provide: RedlockTestingService, useValue: service },
        { provide: RedlockService, useValue: service },
        { provide: REDLOCK_MODULE_OPTIONS, useValue: service.options },
      ],
      exports: [RedlockTestingService, RedlockService, REDLOCK_MODULE_OPTIONS],
    };
  }
}
