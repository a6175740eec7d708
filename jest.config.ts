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
};

export default config;
