import type { MasterState } from '../backend/health/master-state.js';

/**
 * One master in the health details of `RedlockHealthIndicator`.
 *
 * @example
 * const slow = details.masters.filter((m: MasterHealth) => (m.roundTripMs ?? 0) > 50);
 * @publicApi
 */
export interface MasterHealth {
  /** `host:port`, never with a password. */
  readonly master: string;
  /** The connection is ready. */
  readonly connected: boolean;
  /** Its votes count now. */
  readonly trusted: boolean;
  /** Milliseconds until its votes count again (0 when trusted). */
  readonly distrustedFor: number;
  /** Why its votes do not count (`unreachable`, `fresh`, `restarted`, `failover`, `duplicate`, `evicting-policy`, `unknown`). */
  readonly distrust?: string;
  /** Round-trip time of the last check, ms. */
  readonly roundTripMs?: number;
  /** Its `maxmemory-policy`, when known; anything but `noeviction` can drop a held lock. */
  readonly maxmemoryPolicy?: string;
  /** The last connection error (redacted). */
  readonly lastError?: string;
}

/** The per-master state of `Redlock` that the health details show (`refreshMasterStates()` asks the masters afresh). */
type MasterStateLike = Pick<
  MasterState,
  'label' | 'connected' | 'trusted' | 'distrustedFor' | 'distrust' | 'roundTripMs' | 'maxmemoryPolicy' | 'lastError'
>;

interface HealthSource {
  readonly masters: readonly string[];
  readonly distrustedFor: readonly number[];
  refreshMasterStates?(): Promise<readonly MasterStateLike[]>;
  masterStates?(): readonly MasterStateLike[];
}

/** Each master's health, asked afresh. */
export async function masterHealth(redlock: HealthSource): Promise<MasterHealth[]> {
  const states = redlock.refreshMasterStates ? await redlock.refreshMasterStates() : redlock.masterStates?.();
  if (!states) {
    return redlock.masters.map((master, i) => {
      const distrustedFor = Math.round(redlock.distrustedFor[i] ?? 0);
      return {
        master,
        connected: true,
        trusted: distrustedFor === 0,
        distrustedFor,
        ...(distrustedFor ? { distrust: 'restarted' } : {}),
      };
    });
  }
  return states.map((s) => ({
    master: s.label,
    connected: s.connected,
    trusted: s.trusted,
    distrustedFor: Math.round(s.distrustedFor),
    ...(s.distrust === undefined ? {} : { distrust: s.distrust }),
    ...(s.roundTripMs === undefined ? {} : { roundTripMs: s.roundTripMs }),
    ...(s.maxmemoryPolicy === undefined ? {} : { maxmemoryPolicy: s.maxmemoryPolicy }),
    ...(s.lastError === undefined ? {} : { lastError: s.lastError }),
  }));
}
