#!/usr/bin/env node
// `npm run lint` runs this: lib/ is built in layers, and a file may import only from its own
// folder or from a layer below it. It also refuses import circles between files, counting
// type-only imports (a circle of types is still two files that cannot be read apart).
// Usage: node scripts/check-layers.mjs [--graph] [--sizes]   (--graph prints each folder's imports;
// --sizes the largest files and the longest functions, the layers issue's measures)
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lib = join(root, 'lib');

/**
 * The layers, bottom first. A folder may import from its own layer's folder and from any layer
 * listed before it; folders that share a layer may not import each other. `.` is lib/'s own files
 * (the Nest module and the package entries).
 */
export const LAYERS = [
  ['util'],
  ['errors'],
  ['lock'],
  ['options'],
  ['lua'],
  ['backend'],
  ['quorum'],
  ['kinds'],
  ['ops'],
  ['waiting'],
  ['inspect'],
  ['leadership'],
  ['engine'],
  ['filters'],
  ['nest'],
  ['decorators'],
  ['.'],
  ['testing', 'terminus', 'cli'],
];
/** Files of lib/ that sit above a folder's layer: the package entries, which gather everything. */
const ENTRIES = new Set(['index.ts', 'core.ts']);

const rankOf = new Map(LAYERS.flatMap((folders, rank) => folders.map((f) => [f, rank])));

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The layer folder of a file: the first folder under lib/, or `.` for lib/'s own files. */
function folderOf(file) {
  const rel = relative(lib, file);
  return rel.includes('/') ? rel.split('/')[0] : '.';
}

const files = walk(lib);
const importRe =
  /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;
const edges = new Map();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const targets = new Set();
  for (const m of text.matchAll(importRe)) {
    const spec = m[1] ?? m[2];
    targets.add(normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts'));
  }
  edges.set(
    file,
    [...targets].filter((t) => t.startsWith(lib) && files.includes(t)),
  );
}

const problems = [];
for (const [file, targets] of edges) {
  const from = folderOf(file);
  if (!rankOf.has(from))
    problems.push(`${relative(root, file)}: folder \`${from}\` has no layer in scripts/check-layers.mjs`);
  if (ENTRIES.has(relative(lib, file))) continue;
  for (const target of targets) {
    const to = folderOf(target);
    if (to === from) continue;
    const up = rankOf.get(to) >= rankOf.get(from);
    if (up)
      problems.push(
        `${relative(root, file)} imports ${relative(root, target)}: \`${to}/\` is ${rankOf.get(to) === rankOf.get(from) ? 'on the same layer as' : 'above'} \`${from}/\``,
      );
  }
}

// The core entry (`nestjs-quorum-lock/core`) reaches no Nest code: no file it loads imports @nestjs.
const nestFree = new Set();
const pending = [join(lib, 'core.ts')];
while (pending.length) {
  const file = pending.pop();
  if (nestFree.has(file)) continue;
  nestFree.add(file);
  if (/(?:from|import)\s*['"]@nestjs\//.test(readFileSync(file, 'utf8')))
    problems.push(`${relative(root, file)} imports @nestjs, and lib/core.ts (the Nest-free entry) loads it`);
  pending.push(...(edges.get(file) ?? []));
}

// Circles between files (Tarjan's strongly connected components).
let index = 0;
const stack = [];
const meta = new Map();
function visit(v) {
  meta.set(v, { index, low: index, onStack: true });
  index++;
  stack.push(v);
  for (const w of edges.get(v) ?? []) {
    if (!edges.has(w)) continue;
    if (!meta.has(w)) {
      visit(w);
      meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).low);
    } else if (meta.get(w).onStack) meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).index);
  }
  if (meta.get(v).low === meta.get(v).index) {
    const circle = [];
    let w;
    do {
      w = stack.pop();
      meta.get(w).onStack = false;
      circle.push(relative(root, w));
    } while (w !== v);
    if (circle.length > 1) problems.push(`import circle: ${circle.reverse().join(' → ')}`);
  }
}
for (const v of edges.keys()) if (!meta.has(v)) visit(v);

if (process.argv.includes('--graph')) {
  const byFolder = new Map();
  for (const [file, targets] of edges)
    for (const t of targets) {
      const a = folderOf(file);
      const b = folderOf(t);
      if (a !== b) byFolder.set(a, new Set([...(byFolder.get(a) ?? []), b]));
    }
  for (const [a, bs] of [...byFolder].sort((x, y) => rankOf.get(x[0]) - rankOf.get(y[0])))
    console.log(`${a} → ${[...bs].sort((x, y) => rankOf.get(x) - rankOf.get(y)).join(', ')}`);
}
if (process.argv.includes('--sizes')) {
  const { default: ts } = await import('typescript');
  const sized = files
    .filter((f) => !f.endsWith('.generated.ts'))
    .map((f) => [readFileSync(f, 'utf8').split('\n').length - 1, relative(root, f)]);
  const functions = [];
  for (const file of files.filter((f) => !f.endsWith('.generated.ts'))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      const isFunction =
        ts.isFunctionDeclaration(node) ||
        ts.isMethodDeclaration(node) ||
        ts.isArrowFunction(node) ||
        ts.isFunctionExpression(node) ||
        ts.isConstructorDeclaration(node);
      if (isFunction && node.body) {
        const first = source.getLineAndCharacterOfPosition(node.body.getStart()).line;
        const last = source.getLineAndCharacterOfPosition(node.body.getEnd()).line;
        const name = node.name?.getText() ?? '(anonymous)';
        functions.push([last - first + 1, `${relative(root, file)}:${first + 1} ${name}`]);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  const top = (rows) =>
    rows
      .sort((a, b) => b[0] - a[0])
      .slice(0, 8)
      .map(([n, what]) => `  ${n}\t${what}`)
      .join('\n');
  console.log(`Largest files (lines):\n${top(sized)}\nLongest functions (lines of body):\n${top(functions)}`);
}
if (problems.length) {
  console.error(
    `Layer rule (scripts/check-layers.mjs): ${problems.length} problem(s)\n` + problems.map((p) => `  ${p}`).join('\n'),
  );
  process.exit(1);
}
console.log(`Layers: ${files.length} files in lib/, every import downward, no circles.`);
