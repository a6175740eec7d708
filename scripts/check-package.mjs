// CI check of the built package, run after `npm run build` (see .ci/run):
// - every target of the "exports" map is in the packed tarball (npm pack --dry-run --json);
// - each entry loads with require() (CommonJS build) and import() (ESM build);
// - loading both builds in one process warns once (the dual-package hazard), loading one does not;
// - a stack frame from the built package, mapped through its source map, names a file the tarball ships.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const failures = [];
const check = (ok, message) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${message}`);
  if (!ok) failures.push(message);
};

const [pack] = JSON.parse(
  execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }),
);
const shipped = new Set(pack.files.map((f) => f.path));
console.log(`tarball: ${pack.files.length} files, ${pack.size} bytes packed`);

const targets = [];
const walk = (value) => (typeof value === 'string' ? targets.push(value) : Object.values(value).forEach(walk));
const { exports } = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8'));
walk(exports);
for (const target of targets)
  check(shipped.has(target.replace(/^\.\//, '')), `exports target ${target} is in the tarball`);

const node = (args) => spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
const subpaths = Object.keys(exports)
  .filter((s) => s !== './package.json')
  .map((s) => (s === '.' ? 'nestjs-quorum-lock' : `nestjs-quorum-lock/${s.slice(2)}`));
for (const spec of subpaths) {
  const cjs = node([
    '-e',
    `const m = require(${JSON.stringify(spec)}); if (!Object.keys(m).length) process.exit(1); console.log(Object.keys(m).length)`,
  ]);
  check(
    cjs.status === 0 && cjs.stderr === '',
    `require(${JSON.stringify(spec)}) loads the CommonJS build${cjs.status ? `: ${cjs.stderr}` : ''}`,
  );
  const esm = node([
    '--input-type=module',
    '-e',
    `const m = await import(${JSON.stringify(spec)}); if (!Object.keys(m).length) process.exit(1);`,
  ]);
  check(
    esm.status === 0 && esm.stderr === '',
    `import(${JSON.stringify(spec)}) loads the ESM build${esm.status ? `: ${esm.stderr}` : ''}`,
  );
}
const same = node([
  '-e',
  `const c = require('nestjs-quorum-lock'); import('nestjs-quorum-lock').then((e) => console.log(c.RedlockService === e.RedlockService))`,
]);
check(
  same.stdout.trim() === 'false' &&
    same.stderr.includes('NESTJS_QUORUM_LOCK_DUAL_PACKAGE') &&
    same.stderr.split('NESTJS_QUORUM_LOCK_DUAL_PACKAGE').length === 2,
  'loading both builds in one process warns once with NESTJS_QUORUM_LOCK_DUAL_PACKAGE',
);
const twice = node([
  '-e',
  `require('nestjs-quorum-lock'); require('nestjs-quorum-lock/testing'); require('nestjs-quorum-lock')`,
]);
check(
  twice.status === 0 && !twice.stderr.includes('NESTJS_QUORUM_LOCK_DUAL_PACKAGE'),
  'loading one build only does not warn',
);

// The core entry is for code without Nest: loading it loads no @nestjs module.
const coreOnly = node([
  '-e',
  `require('nestjs-quorum-lock/core'); const nest = Object.keys(require.cache).filter((f) => f.includes('@nestjs')); console.log(nest.length); process.exit(nest.length ? 1 : 0)`,
]);
check(
  coreOnly.status === 0,
  `require('nestjs-quorum-lock/core') loads no @nestjs module (${coreOnly.stdout.trim()} loaded)`,
);

// ... and no rxjs until `Leadership.changes` is read (the CommonJS build finds it from its own file, too).
const lazyRxjs = node([
  '-e',
  `const { Redlock } = require('nestjs-quorum-lock/core'); const rx = () => Object.keys(require.cache).filter((f) => f.includes('/node_modules/rxjs/')).length; const before = rx(); const r = new Redlock({ nodes: ['redis://127.0.0.1:1'], restartGuard: false, logger: { log() {}, warn() {}, error() {} } }); const l = r.lead('x'); l.changes.subscribe(() => undefined); console.log(before, rx()); process.exit(before === 0 && rx() > 0 ? 0 : 1)`,
]);
check(
  lazyRxjs.status === 0,
  `require('nestjs-quorum-lock/core') loads rxjs only once Leadership.changes is read (${lazyRxjs.stdout.trim()} before, after)`,
);

// An invalid option throws from lib/options/ (option-table.ts); with --enable-source-maps its frames name the sources.
const frames = {
  require: node([
    '--enable-source-maps',
    '-e',
    `try { new (require('nestjs-quorum-lock').Redlock)({ nodes: [] }) } catch (e) { console.log(e.stack) }`,
  ]),
  import: node([
    '--enable-source-maps',
    '--input-type=module',
    '-e',
    `const { Redlock } = await import('nestjs-quorum-lock'); try { new Redlock({ nodes: [] }) } catch (e) { console.log(e.stack) }`,
  ]),
};
for (const [how, run] of Object.entries(frames)) {
  const files = [...run.stdout.matchAll(/\(?(\/[^():\s]+):\d+:\d+\)?/g)]
    .filter((m) => m[1].startsWith(`${root}/`))
    .map((m) => relative(root, m[1]))
    .filter((f) => !f.startsWith('node_modules/'));
  check(
    files.length > 0 && files.every((f) => f.startsWith('lib/') && f.endsWith('.ts')),
    `${how}: the package's stack frames map to lib/*.ts (${[...new Set(files)].join(', ') || run.stdout + run.stderr})`,
  );
  check(files.length > 0 && files.every((f) => shipped.has(f)), `${how}: every mapped source file is in the tarball`);
}

if (failures.length > 0) {
  console.error(`\n${failures.length} package check(s) failed`);
  process.exit(1);
}
console.log('package checks passed');
