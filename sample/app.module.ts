import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_FILTER } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { RedlockExceptionFilter, RedlockModule } from 'nestjs-quorum-lock';
import { RedlockHealthIndicator } from 'nestjs-quorum-lock/terminus';
import { HealthController } from './health.controller.js';
import { InventoryService, redlockNodes } from './inventory.service.js';
import { SalesReportJob } from './sales-report.job.js';
import { SeatsController } from './seats.controller.js';

/** The shop: Redlock configured from `REDLOCK_NODES` through `@nestjs/config`, a scheduled sales report, and `GET /health`. */
@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    ScheduleModule.forRoot(),
    TerminusModule,
    RedlockModule.forRootAsync({
      inject: [ConfigService],
      // ttl: a sale takes milliseconds, and a crashed holder should block a seat for 2 s at most.
      useFactory: (config: ConfigService) => ({ nodes: redlockNodes(config), keyPrefix: 'shop:lock:', ttl: 2_000 }),
    }),
  ],
  controllers: [SeatsController, HealthController],
  providers: [
    RedlockHealthIndicator,
    InventoryService,
    SalesReportJob,
    // The library's filter: 409 lock-busy, 503 lock-unavailable (with Retry-After) or lock-lost, 400 bad-lock-key.
    { provide: APP_FILTER, useClass: RedlockExceptionFilter },
  ],
})
export class AppModule {}
