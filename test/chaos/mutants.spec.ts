/**
 * The checker must be able to fail: four cheap planted bugs of chaos/mutants.ts (three a no-fault
 * pass shows; an overstated acquire validity needs slowed links), each applied to a copy of lib/ and
 * run through a short in-process chaos pass of its mutant's fault (hot contention), must each be
 * caught. Every planted bug's patch must still apply to today's lib/. `npm run chaos -- --mutants` runs all of them, with client processes.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedisMasters, type RedisMasters } from '../../tools/redis-masters.js';
import { checkPhase } from '../../chaos/checker.js';
import { InProcessClient } from '../../chaos/inprocess-client.js';
import { LIBRARY_VARIANTS, MUTANTS, writeMutant } from '../../chaos/mutants.js';
import { Cluster, Inspector, type FaultKind } from '../../chaos/nemesis.js';
import { runPhase, type Settings } from '../../chaos/phase.js';
import { ProxyFarm } from '../../chaos/proxy.js';
import { FencedRegister } from '../../chaos/register.js';

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

let masters: RedisMasters;
let registerServer: RedisMasters;
let farm: ProxyFarm;
let inspector: Inspector;
let register: FencedRegister;
let cluster: Cluster;
let settings: Settings;

beforeAll(async () => {
  [masters, registerServer] = await Promise.all([startRedisMasters(5), startRedisMasters(1)]);
  farm = ProxyFarm.create(masters.masters.map((m) => m.port));
  inspector = new Inspector(masters.urls);
  await inspector.connect();
  register = new FencedRegister(registerServer.urls[0]);
  await register.connect();
  cluster = new Cluster(masters.masters, farm, inspector);
  settings = {
    registerUrl: registerServer.urls[0],
    ttl: 1_000,
    commandTimeout: 200,
    hotResources: 2,
    coldResources: 50,
    hotWorkers: 3,
    coldWorkers: 1,
    hotHoldMs: [2, 30],
    hotLongHoldMs: [1_200, 1_600],
    hotLongShare: 0.05,
    coldHoldMs: [2, 10],
    retryDelay: 40,
    retryJitter: 20,
    acquireTimeout: 2_500,
  };
}, 20_000);

afterAll(async () => {
  await cluster?.healAll().catch(() => undefined);
  register?.close();
  inspector?.close();
  await farm?.close();
  await Promise.all([masters?.stop(), registerServer?.stop()]);
}, 20_000);

describe("planted bugs still apply to today's lib/", () => {
  for (const mutant of [...MUTANTS, ...LIBRARY_VARIANTS]) {
    it(`${mutant.name}: every patch finds its text exactly once`, () => {
      const dir = join(ROOT, 'dist-chaos', 'jest-mutants-apply', mutant.name);
      writeMutant(mutant, join(ROOT, 'lib'), dir);
      for (const p of mutant.patches) {
        expect(readFileSync(join(dir, p.file), 'utf8')).not.toEqual(readFileSync(join(ROOT, 'lib', p.file), 'utf8'));
      }
    });
  }

  it('a patch whose text is no longer in lib/ fails loudly instead of leaving the copy unpatched', () => {
    const stale = {
      ...MUTANTS[0],
      patches: [{ file: 'quorum/vote-round.ts', find: 'text that lib/ no longer has', replace: '' }],
    };
    expect(() =>
      writeMutant(stale, join(ROOT, 'lib'), join(ROOT, 'dist-chaos', 'jest-mutants-apply', 'stale')),
    ).toThrow(/found its text 0 times/);
  });
});

describe('planted bugs are caught by the chaos checker (in-process, hot contention)', () => {
  for (const name of [
    'renewal-stops-silently',
    'release-without-value-check',
    'fencing-not-increasing',
    'acquire-validity-from-round-end', // a claim past the masters' window: links slowed 40 ms each way
  ]) {
    it(`${name}: at least one check fails the pass`, async () => {
      const mutant = MUTANTS.find((m) => m.name === name)!;
      // A copy of lib/ inside the repository (git-ignored), so that Jest transforms it like the sources.
      const dir = join(ROOT, 'dist-chaos', 'jest-mutants', name);
      writeMutant(mutant, join(ROOT, 'lib'), dir);
      const lib = (await import(
        `../../dist-chaos/jest-mutants/${name}/index.js`
      )) as typeof import('../../lib/index.js');
      const spec = {
        id: `jm-${name}`,
        fault: mutant.phase.fault as FaultKind,
        guard: true,
        fencing: true,
        seconds: 4,
        title: mutant.phase.fault as FaultKind,
        variants: mutant.phase.variants,
      };
      const clients = ['c1', 'c2', 'c3'].map((id) => new InProcessClient(id, lib));
      const check = checkPhase(await runPhase(cluster, spec, clients, settings, register));
      // The pass did real contended work (a loaded machine manages fewer sections; none would prove nothing).
      expect(check.cycles.hot).toBeGreaterThan(5);
      expect({ mutant: name, caughtBy: check.problems.map((p) => p.check) }).not.toEqual({
        mutant: name,
        caughtBy: [],
      });
    }, 40_000);
  }
});
