export { RedlockModule } from './redlock.module.js';
export {
  REDLOCK_MODULE_OPTIONS,
  type RedlockModuleOptions,
  type RedlockOptionsFactory,
} from './nest/redlock.module-definition.js';
export { RedlockService } from './nest/redlock.service.js';
export { Locked, type LockedOptions } from './decorators/index.js';
export { LeaderOnly, type LeaderOnlyMethod, type LeaderOnlyOptions } from './decorators/leader-only.decorator.js';
export * from './filters/index.js';
export * from './core.js';
