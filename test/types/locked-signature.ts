/**
 * Type test for `@Locked` (compiled by `npm run typecheck`, never run): it accepts only methods
 * declared to return a Promise, an Observable or an async iterable. Each `@ts-expect-error` below
 * is a method that would turn into a Promise-returning one whose rejection nobody awaits while its
 * type still says otherwise; if `@Locked` accepted it, the directive would be unused and tsc would fail.
 */
import 'reflect-metadata';
import { Controller, Param, Post } from '@nestjs/common';
import { of, type Observable } from 'rxjs';
import { Locked } from '../../lib/index.js';

export class Accepted {
  @Locked('a:#id')
  async asyncMethod(id: number): Promise<void> {
    void id;
  }

  @Locked('a:#id')
  promiseMethod(id: number): Promise<number> {
    return Promise.resolve(id);
  }

  @Locked('a:#id', { onBusy: 'skip', minHold: 500 })
  observableMethod(id: number): Observable<number> {
    return of(id);
  }

  @Locked('a:#id')
  async asyncObservable(id: number): Promise<Observable<number>> {
    return of(id);
  }

  @Locked('a:#id')
  async *rows(id: number): AsyncGenerator<number> {
    yield id;
  }
}

@Controller('orders')
export class AcceptedController {
  @Post(':id/pay')
  @Locked('order:#id')
  async pay(@Param('id') id: string): Promise<string> {
    return id;
  }
}

export class Refused {
  // @ts-expect-error declared `void`: a busy lock would reject a Promise nobody awaits
  @Locked('r:#id')
  audit(id: number): void {
    void id;
  }

  // @ts-expect-error a plain value is not a Promise
  @Locked('r:#id')
  count(id: number): number {
    return id;
  }

  // @ts-expect-error a synchronous generator cannot hold a lock
  @Locked('r:#id')
  *rows(id: number): Generator<number> {
    yield id;
  }
}
