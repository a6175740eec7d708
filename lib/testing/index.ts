export { RedlockTestingService, type StubAcquisition } from './redlock-testing.service.js';
export { RedlockTestingModule } from './redlock-testing.module.js';
export { overrideRedlock, type ProviderOverridable } from './override-redlock.js';
