export { RedlockHealthIndicator } from './redlock-health.indicator.js';
export type { MasterHealth } from './master-health.js';
