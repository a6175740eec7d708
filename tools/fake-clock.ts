/**
 * A wall clock that tests can step, for `redis-server` processes started with its `env`
 * (`startRedisMasters(n, { env: clock.env })`): Debian's libfaketime reads the offset from a file
 * on every call, so `step()` moves the servers' `TIME` (and their key expiry) at once, as an NTP
 * step would. The monotonic clock is left alone, as a wall-clock step leaves it.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's libfaketime lives (the `faketime` package), per architecture, or `FAKETIME_LIB`. */
const LIBFAKETIME = [
  process.env.FAKETIME_LIB,
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
];
// libfaketime and jemalloc (redis-server's allocator) recurse into each other at start-up; glibc's
// debugging malloc, preloaded first, takes the allocations instead and breaks the cycle.
const GLIBC_MALLOC = [
  '/lib/x86_64-linux-gnu/libc_malloc_debug.so.0',
  '/lib/aarch64-linux-gnu/libc_malloc_debug.so.0',
  '/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0',
  '/usr/lib/aarch64-linux-gnu/libc_malloc_debug.so.0',
];

const found = (candidates: readonly (string | undefined)[]): string | undefined =>
  candidates.find((c): c is string => c !== undefined && existsSync(c));

/** A steppable clock: the environment to start servers with, and the offset control. */
export interface FakeClock {
  /** Environment for the server processes. */
  readonly env: Readonly<Record<string, string>>;
  /** Sets the servers' wall clock to `seconds` (fractional allowed) ahead of the real one; 0 undoes it. */
  step(seconds: number): Promise<void>;
  /** Removes the offset file. */
  dispose(): Promise<void>;
}

/** True when libfaketime is installed (Debian/Ubuntu: `apt-get install -y faketime`). */
export function fakeClockAvailable(): boolean {
  return found(LIBFAKETIME) !== undefined && found(GLIBC_MALLOC) !== undefined;
}

/**
 * Creates a clock at offset 0.
 * @example
 * const clock = await fakeClock();
 * const redis = await startRedisMasters(3, { env: clock.env });
 * await clock.step(1.5); // every server's TIME jumps 1.5 s ahead
 */
export async function fakeClock(): Promise<FakeClock> {
  const libfaketime = found(LIBFAKETIME);
  const malloc = found(GLIBC_MALLOC);
  if (!libfaketime || !malloc)
    throw new Error(
      `${libfaketime ? "glibc's libc_malloc_debug.so.0" : 'libfaketime'} was not found (looked in ${(libfaketime ? GLIBC_MALLOC : LIBFAKETIME).filter(Boolean).join(', ')}); install it: apt-get install -y faketime libc6`,
    );
  const dir = await mkdtemp(join(tmpdir(), 'fake-clock-'));
  const file = join(dir, 'offset');
  await writeFile(file, '+0\n');
  return {
    env: {
      LD_PRELOAD: `${malloc} ${libfaketime}`,
      FAKETIME_TIMESTAMP_FILE: file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
    step: (seconds) => writeFile(file, `${seconds >= 0 ? '+' : ''}${seconds}\n`),
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}
