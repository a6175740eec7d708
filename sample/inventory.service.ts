import { ConflictException, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';

/** The Redlock masters from `REDLOCK_NODES` (comma-separated redis:// URLs). */
export function redlockNodes(config: ConfigService): string[] {
  const nodes = config
    .getOrThrow<string>('REDLOCK_NODES')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  if (nodes.length === 0) throw new Error('REDLOCK_NODES lists no Redis URL');
  return nodes;
}

/** What `GET /seats/:id` shows. */
export interface SeatStatus {
  id: string;
  /** Units the shop believes are left. */
  stock: number;
  /** Tickets actually handed out. */
  sold: number;
  buyers: string[];
}

/** A completed sale. */
export interface Sale {
  id: string;
  buyer: string;
  remaining: number;
}

const stockKey = (id: string) => `shop:stock:${id}`;
const salesKey = (id: string) => `shop:sales:${id}`;
const REPORTS_KEY = 'shop:reports';

/**
 * The shop's stock, kept in Redis (plain keys on the FIRST master, apart from the lock keys) so that
 * every app instance sees the same numbers. `sell()` is a deliberately slow read-modify-write:
 * without mutual exclusion, concurrent buyers read the same stock and all of them get a ticket.
 */
@Injectable()
export class InventoryService implements OnApplicationShutdown {
  private readonly redis: Redis;

  constructor(config: ConfigService) {
    this.redis = new Redis(redlockNodes(config)[0], { maxRetriesPerRequest: 1 });
    this.redis.on('error', () => {}); // failed commands reject on their own; no "Unhandled error event"
  }

  /** Puts `units` in stock for `id` and forgets its past sales. */
  async restock(id: string, units: number): Promise<void> {
    await this.redis.multi().set(stockKey(id), units).del(salesKey(id)).exec();
  }

  async status(id: string): Promise<SeatStatus> {
    const [stock, buyers] = await Promise.all([this.redis.get(stockKey(id)), this.redis.lrange(salesKey(id), 0, -1)]);
    return { id, stock: Number(stock ?? 0), sold: buyers.length, buyers };
  }

  /**
   * Sells one unit of `id` to `buyer`, or throws 409 "sold-out".
   * @param signal The lock's signal, if any: the write is skipped once the lock is lost.
   */
  async sell(id: string, buyer: string, signal?: AbortSignal): Promise<Sale> {
    const stock = Number((await this.redis.get(stockKey(id))) ?? 0); // 1. read
    if (stock <= 0) {
      throw new ConflictException({ statusCode: 409, reason: 'sold-out', message: `${id} is sold out` });
    }
    await delay(5 + Math.random() * 15); // 2. slow work: payment, seat map, ... (the race window)
    signal?.throwIfAborted(); // never write under a lock we no longer hold
    // 3. write: atomic on its own, yet it overwrites whatever other buyers wrote since step 1.
    await this.redis
      .multi()
      .set(stockKey(id), stock - 1)
      .rpush(salesKey(id), buyer)
      .exec();
    return { id, buyer, remaining: stock - 1 };
  }

  /** Records that `instance` produced the report of the fire at second `fire`. */
  async recordReport(fire: number, instance: string): Promise<void> {
    await this.redis.rpush(REPORTS_KEY, `${fire} ${instance}`);
  }

  /** Every report recorded since `clearReports()`, in order: which instance ran which fire. */
  async reports(): Promise<{ fire: number; instance: string }[]> {
    return (await this.redis.lrange(REPORTS_KEY, 0, -1)).map((line) => {
      const [fire, instance] = line.split(' ');
      return { fire: Number(fire), instance };
    });
  }

  async clearReports(): Promise<void> {
    await this.redis.del(REPORTS_KEY);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit();
  }
}
