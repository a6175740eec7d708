/**
 * Compiles the library and a test fixture to plain JavaScript for child processes (the tests run
 * TypeScript through ts-jest, which a forked `node` cannot). Type-free transpilation of each file
 * (`ts.transpileModule`), into `node_modules/.cache/` so that the children resolve ioredis and rxjs
 * from the project's node_modules.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function tsFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFilesUnder(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * A compiled copy of lib/, `fixture` and the test files it imports (`companions`; paths relative to
 * the project root); returns the fixture's compiled path and a clean-up.
 */
export function buildChild(fixture: string, companions: string[] = []): { entry: string; remove: () => void } {
  const out = join(ROOT, 'node_modules', '.cache', 'nestjs-quorum-lock-children', `${process.pid}-${Date.now()}`);
  const files = [...tsFilesUnder(join(ROOT, 'lib')), ...[fixture, ...companions].map((file) => join(ROOT, file))];
  for (const file of files) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      fileName: file,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2023,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
        isolatedModules: true,
      },
    });
    const target = join(out, relative(ROOT, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  writeFileSync(join(out, 'package.json'), JSON.stringify({ type: 'module' }));
  return {
    entry: join(out, fixture).replace(/\.ts$/, '.js'),
    remove: () => rmSync(out, { recursive: true, force: true }),
  };
}
