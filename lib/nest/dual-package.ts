/**
 * Detects the dual-package hazard. This package ships an ESM build (`import`) and a CommonJS build
 * (`require`). A process that loads both has two `RedlockService` classes, which Nest treats as two
 * DI tokens: `@Locked` from one copy then cannot find the service the other copy's module provides.
 * Each copy records its format in a process-wide registry (`Symbol.for`, shared across copies);
 * when both formats have loaded, one warning with code `NESTJS_QUORUM_LOCK_DUAL_PACKAGE` says so.
 */
const REGISTRY = Symbol.for('nestjs-quorum-lock.loaded-formats');

/** The format of this copy: `module` and `exports` exist only in a CommonJS module's scope. */
export const PACKAGE_FORMAT: 'commonjs' | 'esm' =
  typeof module === 'object' && typeof exports === 'object' ? 'commonjs' : 'esm';

/** The warning's code, for `process.on('warning')` or `--no-deprecation`-style filtering. */
export const DUAL_PACKAGE_WARNING = 'NESTJS_QUORUM_LOCK_DUAL_PACKAGE';

interface LoadedFormats {
  formats: Set<string>;
  warned: boolean;
}

/** Records this copy's format; warns once per process when the other format has loaded too. */
export function registerLoadedFormat(format: string = PACKAGE_FORMAT): void {
  const holder = globalThis as { [REGISTRY]?: LoadedFormats };
  const loaded = (holder[REGISTRY] ??= { formats: new Set(), warned: false });
  loaded.formats.add(format);
  if (loaded.formats.size < 2 || loaded.warned) return;
  loaded.warned = true;
  process.emitWarning(
    'nestjs-quorum-lock was loaded both through require() (CommonJS build) and through import (ESM build) in this process. ' +
      'The two copies have different RedlockService classes, so Nest sees two DI tokens and @Locked from one copy cannot reach the module of the other. ' +
      'Load the package one way: from a CommonJS app use require/TypeScript imports compiled to require everywhere, from an ESM app use import everywhere.',
    { code: DUAL_PACKAGE_WARNING },
  );
}
