import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { builtCli, resourceName, useMasters } from '../support/index.js';

const exec = promisify(execFile);
// The ESM build of lib/, as `nestjs-quorum-lock/core` ships it (its `bin` sits in cli/).
const built = builtCli('core-entry');
const coreOf = (): string => join(dirname(dirname(built.bin)), 'core.js');

beforeAll(() => built.build(), 120_000);
afterAll(() => built.remove());

/**
 * The Nest-free entry in a process of its own: it loads no rxjs until `Leadership.changes` is read
 * (rxjs is CommonJS under Node, so the loaded modules show in `require.cache`).
 */
describe('nestjs-quorum-lock/core (built, in a process of its own, 3 masters)', () => {
  const set = useMasters(3);

  it('loads no rxjs module until Leadership.changes is read; changes then works', async () => {
    const script = `
      import { createRequire } from 'node:module';
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('/node_modules/rxjs/')).length;
      const { Redlock } = await import(${JSON.stringify(coreOf())});
      const redlock = new Redlock({ nodes: ${JSON.stringify(set.urls)}, restartGuard: false });
      await redlock.connect();
      await redlock.using(${JSON.stringify(resourceName('core-entry'))}, 2000, async () => undefined);
      const before = loaded();
      const leadership = redlock.lead(${JSON.stringify(resourceName('core-entry-lead'))}, { ttl: 2000 });
      const leading = await new Promise((resolve) => leadership.changes.subscribe((v) => v && resolve(v)));
      const after = loaded();
      await leadership.resign();
      await redlock.close();
      console.log(JSON.stringify({ before, leading, after }));
    `;
    const { stdout } = await exec(process.execPath, ['--input-type=module', '-e', script], { timeout: 30_000 });
    const seen = JSON.parse(stdout.trim().split('\n').at(-1)!) as { before: number; leading: boolean; after: number };
    expect(seen.before).toBe(0);
    expect(seen.leading).toBe(true);
    expect(seen.after).toBeGreaterThan(0);
  });
});
