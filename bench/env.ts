/** Where the benchmark runs: repository root, installed versions, machine facts. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest folder up from this file whose package.json is this library's. */
export const repoRoot: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'nestjs-quorum-lock')
      return dir;
    dir = dirname(dir);
  }
  return process.cwd();
})();

export const benchDir = join(repoRoot, 'bench');

/** The installed version of `name` (from node_modules, or this package's own). */
export function packageVersion(name: string): string {
  const file =
    name === 'nestjs-quorum-lock'
      ? join(repoRoot, 'package.json')
      : join(repoRoot, 'node_modules', name, 'package.json');
  try {
    return String((JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? '?').replace(/^v/, '');
  } catch {
    return '?';
  }
}

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

/** This library's commit, with `+ uncommitted lib/ changes` when lib/ differs from it. */
export function libraryRevision(): string {
  const sha = run('git', ['rev-parse', '--short', 'HEAD']);
  if (!sha) return 'unknown revision';
  const dirty = run('git', ['status', '--porcelain', '--', 'lib']) !== '';
  return dirty ? `${sha} + uncommitted lib/ changes` : sha;
}

export interface MachineFacts {
  nproc: string;
  kernel: string;
  cpu: string;
  node: string;
  redis: string;
  ioredis: string;
  loadavg: string;
}

export function machineFacts(): MachineFacts {
  const redisBin = process.env.REDIS_SERVER ?? 'redis-server';
  const redis = /v=(\S+)/.exec(run(redisBin, ['--version']))?.[1] ?? '?';
  return {
    nproc: run('nproc', []) || String(availableParallelism()),
    kernel: run('uname', ['-r']) || release(),
    cpu: cpus()[0]?.model ?? '?',
    node: process.version,
    redis,
    ioredis: packageVersion('ioredis'),
    loadavg: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  };
}
