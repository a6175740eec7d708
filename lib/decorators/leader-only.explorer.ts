import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { campaignFor, leaderOnlyResourcesOf } from './leader-only.decorator.js';
import { RedlockService } from '../nest/redlock.service.js';

/**
 * Starts the campaigns of `@LeaderOnly` methods when the application boots, so that the first
 * scheduled fire already finds a leader (or a standby) instead of starting the campaign itself.
 * `RedlockService.close()` (on `app.close()`) resigns them.
 *
 * @example
 * // Part of RedlockModule; nothing to do. Campaigns start in onApplicationBootstrap.
 */
@Injectable()
export class LeaderOnlyExplorer implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly redlock: RedlockService,
  ) {}

  onApplicationBootstrap(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      for (const [resource, options] of leaderOnlyResourcesOf(instance)) campaignFor(this.redlock, resource, options);
    }
  }
}
