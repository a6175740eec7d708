import { execFile, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What the built bin printed and how it ended. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A spawned bin still running: its pid, a way to signal it, and how it ended. */
export interface CliProcess {
  pid: number;
  kill(signal: NodeJS.Signals): void;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/**
 * The package's command-line bin, built from `lib/` as `npm run build` makes it (ESM half) into a
 * private folder inside the repository (so the build finds package.json's `"type": "module"` and
 * node_modules). `build()` in a `beforeAll`, `remove()` in an `afterAll`.
 *
 * @example
 * const built = builtCli('inspect');
 * beforeAll(() => built.build(), 120_000);
 * afterAll(() => built.remove());
 * const { code } = await built.cli('masters', '--nodes', urls.join(','));
 */
export function builtCli(name: string): {
  bin: string;
  build(): Promise<void>;
  remove(): void;
  cli(...args: string[]): Promise<CliResult>;
  start(...args: string[]): CliProcess;
} {
  const root = process.cwd();
  const out = join(root, `.cli-build-${name}-${process.pid}`);
  const bin = join(out, 'cli', 'main.js');
  return {
    bin,
    async build() {
      const tsc = join(root, 'node_modules/typescript/bin/tsc');
      const args = ['-p', 'tsconfig.build.json', '--outDir', out, '--declaration', 'false', '--sourceMap', 'false'];
      await run(process.execPath, [tsc, ...args], { cwd: root });
    },
    remove: () => rmSync(out, { recursive: true, force: true }),
    /** Spawns the bin; resolves to its exit code and output (never rejects on a non-zero exit). */
    async cli(...args: string[]): Promise<CliResult> {
      try {
        const { stdout, stderr } = await run(process.execPath, [bin, ...args], { timeout: 30_000 });
        return { code: 0, stdout, stderr };
      } catch (e) {
        const f = e as CliResult;
        return { code: f.code, stdout: f.stdout, stderr: f.stderr };
      }
    },
    /** Starts the bin and returns at once (for a command that runs until signalled or done). */
    start(...args: string[]): CliProcess {
      const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const done = new Promise<Awaited<CliProcess['done']>>((resolve) =>
        child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
      );
      return { pid: child.pid!, kill: (signal) => child.kill(signal), done };
    },
  };
}
