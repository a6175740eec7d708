import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LeaderOnlyExplorer } from './decorators/leader-only.explorer.js';
import { ConfigurableRedlockModule } from './nest/redlock.module-definition.js';
import { RedlockService } from './nest/redlock.service.js';

/**
 * Provides `RedlockService` (and so `@Locked`) to the application. Global by default
 * (`isGlobal: true`), since `@Locked` may decorate any provider or controller.
 *
 * @example
 * \@Module({ imports: [RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'] })] })
 * export class AppModule {}
 *
 * \@Module({
 *   imports: [
 *     ConfigModule.forRoot(),
 *     RedlockModule.forRootAsync({
 *       inject: [ConfigService],
 *       useFactory: (config: ConfigService) => ({ nodes: config.getOrThrow<string>('REDLOCK_NODES').split(',') }),
 *     }),
 *   ],
 * })
 * export class AsyncAppModule {}
 * @publicApi
 */
@Module({
  imports: [DiscoveryModule],
  providers: [RedlockService, LeaderOnlyExplorer],
  exports: [RedlockService],
})
export class RedlockModule extends ConfigurableRedlockModule {}
