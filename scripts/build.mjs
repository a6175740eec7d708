// `npm run build`: the dual package. ESM in dist/ (`import`), CommonJS in dist/cjs/ (`require`) with
// `.cjs`/`.d.cts` names, so each format's files and types say what they are whatever the nearest
// package.json says. Both builds come from the same lib/ sources; their source maps point there.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const tsc = (project) =>
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });

rmSync('dist', { recursive: true, force: true });
tsc('tsconfig.build.json');
tsc('tsconfig.cjs.json');

/** `./x.js` → `./x.cjs` in relative specifiers (require calls, import types, source map comments). */
const relativeJs = /(["'])(\.{1,2}\/[^"'\n]*?)\.js\1/g;

function* filesUnder(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* filesUnder(path);
    else yield path;
  }
}

for (const path of [...filesUnder('dist/cjs')]) {
  let target = path;
  let text = readFileSync(path, 'utf8');
  if (path.endsWith('.d.ts')) {
    target = path.slice(0, -'.d.ts'.length) + '.d.cts';
    text = text.replace(relativeJs, '$1$2.cjs$1');
  } else if (path.endsWith('.js.map')) {
    target = path.slice(0, -'.js.map'.length) + '.cjs.map';
    const map = JSON.parse(text);
    map.file = map.file.replace(/\.js$/, '.cjs');
    text = JSON.stringify(map);
  } else if (path.endsWith('.js')) {
    target = path.slice(0, -'.js'.length) + '.cjs';
    text = text
      .replace(relativeJs, '$1$2.cjs$1')
      .replace(/(\/\/# sourceMappingURL=.*)\.js\.map$/m, '$1.cjs.map')
      // CommonJS has no import.meta: the file's own URL (a lazy require of an optional peer resolves from it).
      .replace(/\bimport\.meta\.url\b/g, "require('node:url').pathToFileURL(__filename).href");
  }
  writeFileSync(target, text);
  if (target !== path) rmSync(path);
}
