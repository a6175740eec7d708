/**
 * A socket.io gateway (`@SubscribeMessage`, `#data.id`) in two app instances on one set of masters:
 * the same id never runs in both at once, and a busy lock reaches the client as an `exception`
 * event `{ status: 'error', reason: 'lock-busy', message }`. Nest applies no global filter to
 * gateways, so the gateway names the filter with `@UseFilters`.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { UseFilters, type INestApplication } from '@nestjs/common';
import { MessageBody, SubscribeMessage, WebSocketGateway, type WsResponse } from '@nestjs/websockets';
import { interval, map, take, type Observable } from 'rxjs';
import { io, type Socket } from 'socket.io-client';
import { Locked, RedlockExceptionFilter, RedlockService } from '../../lib/index.js';
import { useMasters, waitFor, whilePaused } from '../support/index.js';
import { startHttpApp } from '../support/nest.js';
import {
  CriticalSection,
  CustomAnswerFilter,
  LOSABLE,
  LossProbe,
  ONE_TRY,
  SectionHandler,
  expectErrorAnswer,
  expectNoMasterPort,
  instanceProviders,
  transportOptions,
} from './fixtures/critical-section.js';
import { useTwoInstances, type AtClose } from './fixtures/two-instances.js';

const probe = new LossProbe();

@WebSocketGateway()
@UseFilters(RedlockExceptionFilter)
class ItemsGateway extends SectionHandler {
  @SubscribeMessage('work')
  @Locked('ws-item:#data.id')
  work(@MessageBody() data: { id: string }): Promise<string> {
    return this.enter(data.id);
  }

  @SubscribeMessage('work-once')
  @Locked('ws-item:#data.id', ONE_TRY)
  workOnce(@MessageBody() data: { id: string }): Promise<string> {
    return this.enter(data.id);
  }

  @SubscribeMessage('work-until-lost')
  @Locked('ws-item:#data.id', LOSABLE)
  workUntilLost(@MessageBody() data: { id: string }): Promise<string> {
    return probe.runUntilLost(data.id);
  }

  @SubscribeMessage('ticks')
  @Locked('ws-item:#data.id', ONE_TRY)
  ticks(@MessageBody() data: { id: string }): Observable<WsResponse<number>> {
    return interval(10).pipe(
      take(3),
      map((n) => ({ event: `tick:${data.id}`, data: n + 1 })),
    );
  }

  @SubscribeMessage('work-once-custom')
  @UseFilters(CustomAnswerFilter)
  @Locked('ws-item:#data.id', ONE_TRY)
  workOnceCustom(@MessageBody() data: { id: string }): Promise<string> {
    return this.enter(data.id);
  }
}

const masters = useMasters(3);
const section = new CriticalSection();

async function startInstance(name: string, atClose: AtClose): Promise<{ app: INestApplication; socket: Socket }> {
  const { app, base } = await startHttpApp(transportOptions(masters.urls), {
    providers: [ItemsGateway, ...instanceProviders(section, name)],
  });
  atClose(() => app.close());
  const socket = io(base, { transports: ['websocket'], reconnection: false });
  atClose(() => socket.disconnect());
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  return { app, socket };
}

const two = useTwoInstances(startInstance);

/** The payload of the next `exception` event after emitting; a gateway that sends none ends it after `ms`. */
function exceptionAfter(socket: Socket, event: string, data: unknown, ms = 5_000): Promise<unknown> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.off('exception', onException);
      resolve(`no exception event within ${ms} ms`);
    }, ms);
    const onException = (payload: unknown) => {
      clearTimeout(timer);
      resolve(payload);
    };
    socket.once('exception', onException);
    socket.emit(event, data);
  });
}

describe('socket.io gateway, two instances', () => {
  it('runs messages for the same id one at a time across both instances; every message is acknowledged', async () => {
    const before = section.entered;
    const acks = Array.from(
      { length: 10 },
      (_, i) =>
        (i % 2 === 0 ? two.a : two.b).socket.timeout(20_000).emitWithAck('work', { id: 'same' }) as Promise<string>,
    );
    const answers = await Promise.all(acks);
    expect(new Set(answers)).toEqual(new Set(['A', 'B']));
    expect(section.entered - before).toBe(10);
    expect(section.maxInside).toBe(1);
  });

  it("a busy lock sends the client an 'exception' event { status, reason: lock-busy, message } naming the resource", async () => {
    const held = await two.a.app.get(RedlockService).acquire('ws-item:7', 10_000);
    try {
      const answer = await exceptionAfter(two.b.socket, 'work-once', { id: '7' });
      expectErrorAnswer(answer, 'lock-busy', 'ws-item:7');
    } finally {
      await held.release();
    }
  });

  it('an Observable handler sends each value as its event; busy, it sends lock-busy', async () => {
    const ticks: number[] = [];
    two.b.socket.on('tick:t1', (n: number) => void ticks.push(n));
    two.b.socket.emit('ticks', { id: 't1' });
    expect(await waitFor(() => ticks.length === 3, 10_000)).toBe(true);
    expect(ticks).toEqual([1, 2, 3]);
    const held = await two.a.app.get(RedlockService).acquire('ws-item:t2', 10_000);
    try {
      expectErrorAnswer(await exceptionAfter(two.b.socket, 'ticks', { id: 't2' }), 'lock-busy', 'ws-item:t2');
    } finally {
      await held.release();
    }
  });

  it('no quorum (two of three masters paused) sends lock-unavailable, naming no master', async () => {
    const answer = await whilePaused(masters.masters.slice(0, 2), () =>
      exceptionAfter(two.b.socket, 'work-once', { id: '9' }),
    );
    expectErrorAnswer(answer, 'lock-unavailable', 'ws-item:9');
    expectNoMasterPort(answer, masters);
  });

  it('a lock lost while the handler ran sends lock-lost, naming no master', async () => {
    const answer = await probe.loseLockOf(
      masters,
      exceptionAfter(two.b.socket, 'work-until-lost', { id: 'lost' }, 20_000),
    );
    expectErrorAnswer(answer, 'lock-lost', 'ws-item:lost');
    expectNoMasterPort(answer, masters);
  });

  it('a message that makes no key sends bad-lock-key', async () => {
    expectErrorAnswer(await exceptionAfter(two.b.socket, 'work-once', {}), 'bad-lock-key');
  });

  it("a subclass's answer() reaches the client", async () => {
    const held = await two.a.app.get(RedlockService).acquire('ws-item:8', 10_000);
    try {
      const answer = await exceptionAfter(two.b.socket, 'work-once-custom', { id: '8' });
      expect(answer).toEqual({ status: 'error', reason: 'come-back-later', message: 'custom answer in ws' });
    } finally {
      await held.release();
    }
  });
});
