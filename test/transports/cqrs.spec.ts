/**
 * CQRS command handlers (`execute(command)`, `#command.id`) in two app instances on one set of
 * masters: the same id never runs in both at once, and a busy lock rejects the dispatch with the
 * `LockAcquisitionError` (`busy`) that the caller's own context then answers (409 over HTTP,
 * `lock-busy` over RPC, WebSocket and GraphQL).
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Command, CommandBus, CommandHandler, CqrsModule, type ICommandHandler } from '@nestjs/cqrs';
import { LockAcquisitionError, Locked, RedlockService } from '../../lib/index.js';
import { useMasters } from '../support/index.js';
import { startApp } from '../support/nest.js';
import {
  CriticalSection,
  ONE_TRY,
  SectionHandler,
  instanceProviders,
  transportOptions,
} from './fixtures/critical-section.js';
import { useTwoInstances, type AtClose } from './fixtures/two-instances.js';

class ReserveItem extends Command<string> {
  constructor(readonly id: string) {
    super();
  }
}

class ReserveItemOnce extends Command<string> {
  constructor(readonly id: string) {
    super();
  }
}

@CommandHandler(ReserveItem)
class ReserveItemHandler extends SectionHandler implements ICommandHandler<ReserveItem, string> {
  @Locked('cmd-item:#command.id')
  execute(command: ReserveItem): Promise<string> {
    return this.enter(command.id);
  }
}

@CommandHandler(ReserveItemOnce)
class ReserveItemOnceHandler extends SectionHandler implements ICommandHandler<ReserveItemOnce, string> {
  @Locked('cmd-item:#command.id', ONE_TRY)
  execute(command: ReserveItemOnce): Promise<string> {
    return this.enter(command.id);
  }
}

const masters = useMasters(3);
const section = new CriticalSection();

async function startInstance(name: string, atClose: AtClose): Promise<{ app: INestApplication; bus: CommandBus }> {
  const app = await startApp(transportOptions(masters.urls), {
    imports: [CqrsModule.forRoot()],
    providers: [ReserveItemHandler, ReserveItemOnceHandler, ...instanceProviders(section, name)],
  });
  atClose(() => app.close());
  return { app, bus: app.get(CommandBus) };
}

const two = useTwoInstances(startInstance);

describe('CQRS command handlers, two instances', () => {
  it('runs commands for the same id one at a time across both instances; every command completes', async () => {
    const runs = Array.from({ length: 10 }, (_, i) =>
      (i % 2 === 0 ? two.a : two.b).bus.execute(new ReserveItem('same')),
    );
    const answers = await Promise.all(runs);
    expect(new Set(answers)).toEqual(new Set(['A', 'B']));
    expect(section.entered).toBe(10);
    expect(section.maxInside).toBe(1);
  });

  it('a busy lock rejects the dispatch with LockAcquisitionError busy; the handler never ran', async () => {
    const held = await two.a.app.get(RedlockService).acquire('cmd-item:7', 10_000);
    const before = section.entered;
    try {
      const dispatch = two.b.bus.execute(new ReserveItemOnce('7'));
      await expect(dispatch).rejects.toBeInstanceOf(LockAcquisitionError);
      await expect(dispatch).rejects.toMatchObject({ busy: true, resources: ['cmd-item:7'] });
      expect(section.entered).toBe(before);
    } finally {
      await held.release();
    }
    await expect(two.b.bus.execute(new ReserveItemOnce('7'))).resolves.toBe('B');
  });
});
