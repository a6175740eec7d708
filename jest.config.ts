import type { Config } from 'jest';

/**
 * Jest in ESM mode (see docs/decisions.md): the package is ESM-only, and Nest 12 is too.
 * Run through `npm test`, which passes `--experimental-vm-modules` to Node.
 */
const config: Config = {
  testEnvironment: 'node',
  rootDir: '.',
  roots: ['<rootDir>/test'],
  testRegex: '.*\\.(e2e-)?spec\\.ts$',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testTimeout: 30_000,
  // A leftover client of one spec (a cluster client's retry, a reconnecting subscriber) must not hold the
  // whole run open after its results are in; the library's own shutdown is tested where it belongs
  // (test/nest/shutdown.spec.ts, test/core/connections-and-close.spec.ts).
  forceExit: true,
};

export default config;
