/**
 * Test support shared by every tier (framework-free): masters, one inspector, one `waitFor`, and
 * outcomes of promises and signals. The Nest suites add `./nest.js` (app start-up, option presets).
 */
export * from './clusters.js';
export * from './inspector.js';
export * from './masters.js';
export * from './outcomes.js';
export * from './wait-for.js';
export * from './built-cli.js';
export * from './monitor.js';
