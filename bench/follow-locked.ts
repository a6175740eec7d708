/**
 * Which files of the library does one `@Locked` call run? A Nest application context with one
 * `@Locked` method over 3 local masters: after a warm-up, V8's precise coverage counts the functions
 * that run during exactly one call (acquire, the method, release), and one master's MONITOR names the
 * scripts it ran. The answer is the list of source files a reader opens to follow the call from the
 * decorator to the Lua and back.
 *
 *   npm run follow                # the files
 *   npm run follow -- --functions # and the functions that ran in each
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { connect } from 'node:net';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Locked, RedlockModule } from 'nestjs-quorum-lock';
import { startRedisMasters } from '../tools/redis-masters.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = join(root, 'dist');

@Injectable()
class Orders {
  @Locked('order:#id', 5_000)
  async pay(id: string): Promise<string> {
    return id;
  }
}

/** Script name → `lib/**` path of its `.lua` file, and the SHA1 Redis knows it by. */
async function scriptFiles(): Promise<Map<string, string>> {
  const { SCRIPTS } = (await import(join(dist, 'lua', 'scripts.generated.js'))) as {
    SCRIPTS: Record<string, { lua: string }>;
  };
  const luaFiles = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.lua'))
        luaFiles.set(
          entry.name.slice(0, -4).replace(/-(\w)/g, (_, c: string) => c.toUpperCase()),
          path,
        );
    }
  };
  walk(join(root, 'lib'));
  const bySha = new Map<string, string>();
  for (const [name, { lua }] of Object.entries(SCRIPTS)) {
    const file = luaFiles.get(name);
    if (file) bySha.set(createHash('sha1').update(lua).digest('hex'), relative(root, file));
  }
  return bySha;
}

/** Lines a master's MONITOR prints while `during` runs. */
async function monitor(port: number, during: () => Promise<void>): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let seen = '';
  socket.on('data', (chunk) => (seen += chunk.toString()));
  socket.write('MONITOR\r\n');
  while (!seen.includes('+OK')) await new Promise((r) => setTimeout(r, 5));
  await during();
  await new Promise((r) => setTimeout(r, 50));
  socket.destroy();
  return seen;
}

async function main(): Promise<void> {
  await using masters = await startRedisMasters(3);
  @Module({ imports: [RedlockModule.forRoot({ nodes: masters.urls })], providers: [Orders] })
  class FollowModule {}
  const app = await NestFactory.createApplicationContext(FollowModule, { logger: false });
  const orders = app.get(Orders);
  // The restart guard distrusts fresh masters for a few seconds: wait that out, keeping the defaults.
  for (const until = Date.now() + 20_000; ;) {
    try {
      await orders.pay('trusted-yet');
      break;
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  for (let i = 0; i < 50; i++) await orders.pay(`warm-${i}`);

  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  await session.post('Profiler.takePreciseCoverage'); // resets the counts
  const log = await monitor(masters.masters[0].port, async () => void (await orders.pay('followed')));
  const { result } = await session.post('Profiler.takePreciseCoverage');
  await session.post('Profiler.stopPreciseCoverage');
  session.disconnect();
  await app.close();

  const files = new Set<string>();
  const functions = new Map<string, string[]>();
  for (const script of result) {
    if (!script.url.startsWith('file://')) continue;
    const path = fileURLToPath(script.url);
    if (!path.startsWith(dist + '/') || path.includes('/cjs/')) continue;
    if (!script.functions.some((f) => f.ranges[0].count > 0)) continue;
    const file = relative(dist, path).replace(/\.js$/, '.ts');
    files.add(file);
    functions.set(
      file,
      script.functions.filter((f) => f.ranges[0].count > 0 && f.functionName).map((f) => f.functionName),
    );
  }
  const sorted = [...files].sort().map((file) => `lib/${file}`);
  const bySha = await scriptFiles();
  const scripts = new Set<string>();
  for (const [, sha] of log.matchAll(/"evalsha" "([0-9a-f]{40})"/gi)) scripts.add(bySha.get(sha) ?? `script ${sha}`);
  const commands = [...log.matchAll(/\] "(\w+)"/g)].map(([, c]) => c.toUpperCase());

  console.log(`One @Locked call ran code in ${sorted.length} TypeScript files of lib/:`);
  const withFunctions = process.argv.includes('--functions');
  for (const file of sorted)
    console.log(`  ${file}${withFunctions ? `: ${functions.get(file.slice(4))!.join(', ')}` : ''}`);
  console.log(`and ${scripts.size} Lua file(s): ${[...scripts].join(', ') || 'none'}`);
  console.log(`Commands one master saw: ${commands.join(', ')}`);
  console.log(`Files to follow the call: ${sorted.length + scripts.size}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
