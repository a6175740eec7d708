import { Controller, Param, Post } from '@nestjs/common';
import { ReportsService } from './reports.service.js';

@Controller('reports')
export class ReportsController {
  constructor(private readonly reports: ReportsService) {}

  @Post(':day')
  build(@Param('day') day: string) {
    return this.reports.build(day);
  }
}
