import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redlock } from '../engine/redlock.js';
import { registerLoadedFormat } from './dual-package.js';
import { REDLOCK_MODULE_OPTIONS, type RedlockModuleOptions } from './redlock.module-definition.js';

registerLoadedFormat();

/**
 * The injectable lock service: `acquire`, `tryAcquire` and `using` over the masters configured in
 * `RedlockModule.forRoot()`, and `adopt` for a lock another process handed over (`lock.toHandle()`). It connects at module init; on `app.close()` it stops renewals, releases
 * the locks still held (bounded by `commandTimeout`) and closes only the connections it opened.
 *
 * @example
 * \@Injectable()
 * export class SeatsService {
 *   constructor(private readonly redlock: RedlockService) {}
 *   sell(seat: string) {
 *     return this.redlock.using(`seat:${seat}`, 2_000, async (lock) => this.repo.sell(seat, lock.signal));
 *   }
 * }
 * @publicApi
 */
@Injectable()
export class RedlockService extends Redlock implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    // Nest's Logger by default (context `Redlock`); `logger: false` silences the library.
    super({ ...options, logger: options.logger === undefined ? new Logger('Redlock') : options.logger });
  }

  /** Connects the masters (waits up to `connectTimeout`). */
  async onModuleInit(): Promise<void> {
    await this.connect();
  }

  /** Runs last in shutdown, so that other providers can still release their locks in their own hooks. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
