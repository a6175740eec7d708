/**
 * `nestjs-quorum-lock/core`: the Redlock algorithm without Nest. Workers, scripts and other
 * frameworks import the lock from here; nothing below this entry imports `@nestjs`.
 *
 * @example
 * import { Redlock } from 'nestjs-quorum-lock/core';
 * const redlock = new Redlock({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'] });
 * await redlock.using('report:daily', 30_000, async (signal) => buildReport(signal));
 */
export { Redlock } from './engine/redlock.js';
export type { AcquireOptions, TryAcquireOptions, UsingOptions } from './engine/call-spec.js';
export type { HoldOptions } from './options/hold-options.js';
export { lockModeOf, type LockMode, type LockModeOptions } from './kinds/lock-mode.js';
export { Lock, type LockJson } from './lock/lock.js';
export type { LockHandle } from './lock/lock-handle.js';
export type { AdoptOptions } from './engine/adopt.js';
export { Leadership, type LeadOptions } from './leadership/leadership.js';
export { currentLock } from './lock/lock-context.js';
export type { LockKey } from './lock/key-template.js';
export type { MasterOutcome, DistrustReason, GuardReason } from './errors/outcomes.js';
export type { RedlockLogger } from './util/logger.js';
export type { NodeRedisClient } from './options/node-redis-client.js';
export type { MasterState } from './backend/health/master-state.js';
export {
  MAX_TTL,
  REDLOCK_DEFAULTS,
  type RedlockNode,
  type RedlockClusterNode,
  type RedlockOptions,
  type RetryDelay,
  type RetryOptions,
} from './options/redlock-options.js';
export { MAX_RESOURCES } from './lock/resources.js';
export * from './errors/index.js';
export type {
  LockInspection,
  MasterHolding,
  MasterPermit,
  MasterReader,
  PermitSlotInspection,
  PermitsInspection,
  SharedHolderInspection,
} from './inspect/inspect.js';
export type { RevokeOptions, RevokeResult } from './engine/revoke.js';
export type { AcquireContext, AcquireOutcome, LockLostMessage, LockOperationContext } from './ops/diagnostics.js';
