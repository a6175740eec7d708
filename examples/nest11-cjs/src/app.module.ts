import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { RedlockExceptionFilter, RedlockModule } from 'nestjs-quorum-lock';
import { AppController } from './app.controller';
import { AppService } from './app.service';
import { ReportsController } from './reports.controller';
import { ReportsService } from './reports.service';

@Module({
  imports: [
    RedlockModule.forRoot({
      nodes: (process.env.REDLOCK_NODES ?? 'redis://127.0.0.1:6379').split(','),
      // Servers started for a test run are brand new; they have forgotten nothing.
      restartGuard: process.env.NODE_ENV !== 'test',
    }),
  ],
  controllers: [AppController, ReportsController],
  providers: [AppService, ReportsService, { provide: APP_FILTER, useClass: RedlockExceptionFilter }],
})
export class AppModule {}
