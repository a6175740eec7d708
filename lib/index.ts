export { RedlockModule } from './redlock.module.js';
export {
  REDLOCK_MODULE_OPTIONS,
  type RedlockModuleOptions,
  type RedlockOptionsFactory,
} from './redlock.module-definition.js';
export { RedlockService } from './redlock.service.js';
export { Locked, type LockedOptions } from './decorators/index.js';
export { Redlock, type AcquireOptions, type TryAcquireOptions, type UsingOptions } from './core/redlock.js';
export type { HoldOptions } from './core/hold-options.js';
export { lockModeOf, type LockMode, type LockModeOptions } from './core/lock-mode.js';
export { Lock, type LockJson } from './core/lock.js';
export { Leadership, type LeadOptions } from './core/leadership.js';
export { LeaderOnly, type LeaderOnlyMethod, type LeaderOnlyOptions } from './decorators/leader-only.decorator.js';
export { currentLock } from './core/lock-context.js';
export type { LockKey } from './core/key-template.js';
export type { MasterOutcome } from './core/votes.js';
export type { RedlockLogger } from './core/logger.js';
export type { MasterState, DistrustReason } from './core/master-monitor.js';
export type { GuardReason } from './core/restart-guard.js';
export {
  MAX_TTL,
  REDLOCK_DEFAULTS,
  type RedlockNode,
  type RedlockClusterNode,
  type RedlockOptions,
  type RetryDelay,
  type RetryOptions,
} from './core/options.js';
export { MAX_RESOURCES } from './core/resources.js';
export * from './errors/index.js';
export * from './filters/index.js';
export type {
  LockInspection,
  MasterHolding,
  MasterPermit,
  MasterReader,
  PermitSlotInspection,
  PermitsInspection,
  SharedHolderInspection,
} from './core/inspect.js';
export type { RevokeOptions, RevokeResult } from './core/revoke.js';
export type { AcquireContext, AcquireOutcome, LockLostMessage, LockOperationContext } from './ops/diagnostics.js';
