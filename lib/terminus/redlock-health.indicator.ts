import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { RedlockService } from '../nest/redlock.service.js';
import { masterHealth, type MasterHealth } from './master-health.js';

/**
 * A `@nestjs/terminus` health indicator for the lock masters, from `nestjs-quorum-lock/terminus`
 * (Terminus is an optional peer: only this entry point loads it).
 *
 * - `up` when every master is connected and its votes count;
 * - `degraded` when a quorum is, but not all (locks still work; one more failure and they stop).
 *   Terminus versions without a `degraded` status get `up` with the same details;
 * - `down` below a quorum: no lock can be taken.
 *
 * The details list each master: connected, trusted (or distrusted, for how long and why), the
 * round-trip time of the last check, and its `maxmemory-policy` when known.
 *
 * @example
 * \@Controller('health')
 * export class HealthController {
 *   constructor(private readonly health: HealthCheckService, private readonly redlock: RedlockHealthIndicator) {}
 *   \@Get() \@HealthCheck()
 *   check() { return this.health.check([() => this.redlock.isHealthy('locks')]); }
 * }
 * // module: imports: [TerminusModule, RedlockModule.forRoot(...)], providers: [RedlockHealthIndicator]
 * @publicApi
 */
@Injectable()
export class RedlockHealthIndicator {
  constructor(
    @Inject(RedlockService) private readonly redlock: RedlockService,
    @Inject(HealthIndicatorService) private readonly indicators: HealthIndicatorService,
  ) {}

  /**
   * Checks the masters now (a fresh round trip to each).
   *
   * @param key The key of this indicator in the health report. @default 'redlock'
   */
  async isHealthy<const Key extends string = 'redlock'>(
    key: Key = 'redlock' as Key,
  ): Promise<HealthIndicatorResult<Key>> {
    const session = this.indicators.check(key);
    const masters: MasterHealth[] = await masterHealth(this.redlock);
    const counting = masters.filter((m) => m.trusted).length;
    const details = { quorum: this.redlock.quorum, trusted: counting, total: masters.length, masters };
    if (counting < this.redlock.quorum) {
      return session.down({
        ...details,
        message: `${counting} of ${masters.length} masters count; ${this.redlock.quorum} are needed to lock.`,
      });
    }
    if (counting === masters.length) return session.up(details);
    const message = `${counting} of ${masters.length} masters count: locks work, but ${counting - this.redlock.quorum + 1} more failure(s) stop them.`;
    const degraded = (session as { degraded?: (data: object) => HealthIndicatorResult<Key> }).degraded;
    return typeof degraded === 'function'
      ? degraded.call(session, { ...details, message })
      : session.up({ ...details, message });
  }
}
