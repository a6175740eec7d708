import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_FILTER } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { RedlockModule } from 'nestjs-quorum-lock';
import { InventoryService, redlockNodes } from './inventory.service.js';
import { LockBusyFilter } from './lock-busy.filter.js';
import { SalesReportJob } from './sales-report.job.js';
import { SeatsController } from './seats.controller.js';

/** The shop: Redlock configured from `REDLOCK_NODES` through `@nestjs/config`, and a scheduled sales report. */
@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    ScheduleModule.forRoot(),
    RedlockModule.forRootAsync({
      inject: [ConfigService],
      // ttl: a sale takes milliseconds, and a crashed holder should block a seat for 2 s at most.
      useFactory: (config: ConfigService) => ({ nodes: redlockNodes(config), keyPrefix: 'shop:lock:', ttl: 2_000 }),
    }),
  ],
  controllers: [SeatsController],
  providers: [InventoryService, SalesReportJob, { provide: APP_FILTER, useClass: LockBusyFilter }],
})
export class AppModule {}
