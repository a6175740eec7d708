/**
 * Another commit of the library, built for `npm run bench -- --compare REF`: a detached git worktree in
 * a temporary folder, whose `node_modules` is a symlink to this checkout's (no `npm ci`), built with its
 * own `npm run build`. `remove()` deletes the worktree and the folder; it also runs on Ctrl-C.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './env.js';

export interface RefBuild {
  /** The ref as given on the command line. */
  readonly ref: string;
  /** Its commit, abbreviated. */
  readonly sha: string;
  /** `git log -1 --format=%s` of that commit. */
  readonly subject: string;
  /** The built ESM entry point (`dist/index.js`), as a file URL to `import()`. */
  readonly entry: string;
  remove(): void;
}

const git = (args: string[], cwd = repoRoot): string =>
  execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** Builds `ref` of this repository aside; throws naming the ref when git does not know it or the build fails. */
export function buildRef(ref: string): RefBuild {
  let sha: string;
  try {
    sha = git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  } catch {
    throw new Error(`--compare: git does not know ${JSON.stringify(ref)} as a commit of this repository`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'quorum-lock-compare-'));
  let added = false;
  const remove = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    // The link first, so that nothing below can follow it into this checkout's node_modules.
    if (existsSync(join(dir, 'node_modules'))) unlinkSync(join(dir, 'node_modules'));
    if (added) {
      try {
        git(['worktree', 'remove', '--force', dir]);
      } catch {
        // removed below; prune forgets it
      }
    }
    rmSync(dir, { recursive: true, force: true });
    if (added) git(['worktree', 'prune']);
  };
  const onSignal = () => {
    remove();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    git(['worktree', 'add', '--detach', dir, sha]);
    added = true;
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
    console.log(`bench: building ${ref} (${sha.slice(0, 7)}) in a temporary worktree`);
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] });
    if (!existsSync(join(dir, 'dist', 'index.js'))) throw new Error(`${ref}: npm run build wrote no dist/index.js`);
  } catch (error) {
    remove();
    throw error;
  }
  return {
    ref,
    sha: sha.slice(0, 7),
    subject: git(['log', '-1', '--format=%s', sha]),
    entry: pathToFileURL(join(dir, 'dist', 'index.js')).href,
    remove,
  };
}
