/**
 * The `@Locked` wrapper's own work per call, without Redis: the same method called through the
 * decorator and through `using()` directly, where `using()` is a stand-in that runs the body at once
 * (so that what is left is the wrapper: the service lookup, the key template, the call's promise and
 * its Observable check). 32 calls in flight at a time, CPU per call in ns, median of 5 rounds.
 *   npm run build && rm -rf dist-bench && npx tsc -p bench/tsconfig.json
 *   node dist-bench/bench/decorator-wrapper.js [--als]
 * `--als` turns AsyncLocalStorage's promise hooks on first, as the first real `using()` does.
 */
import 'reflect-metadata';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Locked } from 'nestjs-quorum-lock';

if (process.argv.includes('--als')) new AsyncLocalStorage<number>().enterWith(1);

class Work {
  @Locked('item:#id')
  async lockedAsync(id: string): Promise<{ id: string }> {
    return { id };
  }

  // A synchronous handler, as in the route workload (typed as a Promise for the decorator).
  @Locked('item:#id')
  lockedSync(id: string): Promise<{ id: string }> {
    return { id } as unknown as Promise<{ id: string }>;
  }
}

const lock = {};
const service = {
  options: { ttl: 10_000 },
  using: (_resources: string[], _ttl: number | undefined, fn: (lock: object) => unknown) =>
    Promise.resolve().then(() => fn(lock)),
};
const work = new Work() as Work & Record<string | symbol, unknown>;
// The hidden property Nest injects RedlockService into (recorded by `@Inject` on the prototype).
const [{ key }] = Reflect.getMetadata('self:properties_metadata', Work) as { key: string | symbol }[];
work[key] = service;

const arms: [string, (id: string) => Promise<unknown>][] = [
  ['using() stand-in, called directly', (id) => service.using([`item:${id}`], undefined, () => ({ id }))],
  ['@Locked, synchronous method', (id) => work.lockedSync(id)],
  ['@Locked, async method', (id) => work.lockedAsync(id)],
];

async function run(call: (id: string) => Promise<unknown>, n: number): Promise<number> {
  const from = process.cpuUsage();
  for (let i = 0; i < n; i += 32) {
    const calls: Promise<unknown>[] = [];
    for (let j = 0; j < 32; j++) calls.push(call(String(i + j)));
    await Promise.all(calls);
  }
  const used = process.cpuUsage(from);
  return ((used.user + used.system) * 1000) / n;
}

const results = new Map<string, number[]>();
for (const [, call] of arms) await run(call, 100_000);
for (let round = 0; round < 5; round++)
  for (const [name, call] of arms) results.set(name, [...(results.get(name) ?? []), await run(call, 200_000)]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const base = median(results.get(arms[0][0])!);
console.log(`AsyncLocalStorage hooks ${process.argv.includes('--als') ? 'on' : 'off'}`);
for (const [name, xs] of results)
  console.log(`${name.padEnd(36)} ${median(xs).toFixed(0)} ns per call (+${(median(xs) - base).toFixed(0)})`);
