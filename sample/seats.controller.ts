import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { currentLock, Locked } from 'nestjs-quorum-lock';
import { InventoryService, type Sale, type SeatStatus } from './inventory.service.js';

/** The shop's HTTP API: the same sale with and without a Redlock quorum lock. */
@Controller('seats')
export class SeatsController {
  constructor(private readonly inventory: InventoryService) {}

  @Get(':id')
  show(@Param('id') id: string): Promise<SeatStatus> {
    return this.inventory.status(id);
  }

  /**
   * One buyer at a time per seat, across every app instance. A buyer waits up to ~2 s for the lock
   * (40 retries, 50 ± 25 ms apart); after that `RedlockExceptionFilter` answers 409 "lock-busy".
   */
  @Post(':id/buy')
  @Locked('seat:#id', { ttl: 2_000, retryCount: 40, retryDelay: 50, retryJitter: 25 })
  buy(@Param('id') id: string, @Body('buyer') buyer: string): Promise<Sale> {
    return this.inventory.sell(id, buyer ?? 'anonymous', currentLock()?.signal);
  }

  /** The same sale with no lock: concurrent buyers oversell. */
  @Post(':id/buy-unsafe')
  buyUnsafe(@Param('id') id: string, @Body('buyer') buyer: string): Promise<Sale> {
    return this.inventory.sell(id, buyer ?? 'anonymous');
  }
}
