export { RedlockError } from './redlock.error.js';
export { RedlockConfigError } from './redlock-config.error.js';
export { LockAcquisitionError } from './lock-acquisition.error.js';
export { LockExtensionError } from './lock-extension.error.js';
export { LockLostError } from './lock-lost.error.js';
export { LockKeyError } from './lock-key.error.js';
