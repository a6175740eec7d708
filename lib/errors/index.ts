export { RedlockError } from './redlock.error.js';
export { RedlockConfigError } from './redlock-config.error.js';
export { RedlockClosedError } from './redlock-closed.error.js';
export { LockAcquisitionError, type LockAcquisitionReason } from './lock-acquisition.error.js';
export { LockExtensionError } from './lock-extension.error.js';
export { LockLostError, type LockLostReason } from './lock-lost.error.js';
export { LockKeyError } from './lock-key.error.js';
