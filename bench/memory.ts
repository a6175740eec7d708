/**
 * `npm run bench -- --memory`: the long run. This library only, 3 masters, 64 concurrent callers doing
 * ≥ 1,000,000 cycles of one workload: `release` (the default: half of the callers through
 * `acquire()`/`release()`, half through `using()`, which also starts and stops renewal) or, with
 * `--memory-workload expire`, `tryAcquire()` with a 1 s TTL and no release (the lock lapses; the
 * library must stop tracking it). After a warm-up it samples heapUsed and RSS (after
 * `gc()` when run with --expose-gc, as `npm run bench` does) and the live timers, fits a line to each,
 * and compares the process's active handles and listeners before the Redlock was created and after it
 * was closed. Each workload rewrites its own section of docs/evidence/bench-memory.md.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redlock } from 'nestjs-quorum-lock';
import { startRedisMasters } from '../tools/redis-masters.js';
import { repoRoot, libraryRevision, machineFacts } from './env.js';
import { pin } from './masters.js';
import type { BenchConfig } from './options.js';
import { num } from './report/format.js';
import { linearFit } from './stats.js';

interface Sample {
  cycles: number;
  seconds: number;
  heapUsed: number;
  rss: number;
  timers: number;
}

const MiB = 1024 * 1024;
/** The TTL of the expire workload: short, so that the masters' keys and the held locks stay few. */
const EXPIRE_TTL = 1_000;
const gc = (globalThis as { gc?: () => void }).gc;

function countBy(items: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return counts;
}

function listeners(): Map<string, number> {
  return new Map(process.eventNames().map((e) => [String(e), process.listenerCount(e)]));
}

/** `name: before → after` for every entry that changed. */
function changes(before: Map<string, number>, after: Map<string, number>): string[] {
  const names = new Set([...before.keys(), ...after.keys()]);
  return [...names]
    .filter((n) => (before.get(n) ?? 0) !== (after.get(n) ?? 0))
    .map((n) => `${n}: ${before.get(n) ?? 0} → ${after.get(n) ?? 0}`);
}

const show = (m: Map<string, number>) => [...m].map(([k, v]) => `${k} ×${v}`).join(', ') || 'none';

export async function runMemory(config: BenchConfig, note: (text: string) => void): Promise<void> {
  const { cycles, concurrency, masters: count } = config.memory;
  const warmup = Math.min(config.memory.warmupCycles, Math.floor(cycles / 10));
  const every = Math.max(1_000, Math.min(config.memory.sampleEvery, Math.floor(cycles / 40)));
  const { workload } = config.memory;
  const ttl = workload === 'expire' ? EXPIRE_TTL : config.ttl;
  const machine = machineFacts();
  const redis = await startRedisMasters(count);
  const pinning = pin(
    config.pin,
    redis.masters.map((m) => m.pid!),
    config.cpu,
  );
  console.log(
    `memory: ${num(cycles)} cycles, ${concurrency} callers, ${count} masters, ${pinning}${gc ? '' : ' (no --expose-gc: samples without gc)'}`,
  );
  try {
    // The restart guard (on by default) ignores masters younger than the largest TTL; wait them out.
    await new Promise((r) => setTimeout(r, config.ttl + 2_000));
    gc?.();
    await new Promise((r) => setTimeout(r, 100));
    const handlesBefore = countBy(process.getActiveResourcesInfo());
    const listenersBefore = listeners();

    const redlock = new Redlock({ nodes: redis.urls });
    await redlock.connect();
    const samples: Sample[] = [];
    let started = 0;
    let done = 0;
    let errors = 0;
    const t0 = performance.now();
    const caller = async (id: number) => {
      while (started < cycles) {
        const key = `mem:${started++}`;
        try {
          if (workload === 'expire') {
            if (!(await redlock.tryAcquire(key, ttl))) errors++; // never released: it lapses
          } else if (id % 2 === 0) await (await redlock.acquire(key, ttl)).release();
          else await redlock.using(key, ttl, async () => undefined);
        } catch {
          errors++;
        }
        if (++done % every === 0) {
          gc?.();
          const { heapUsed, rss } = process.memoryUsage();
          const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
          samples.push({ cycles: done, seconds: (performance.now() - t0) / 1000, heapUsed, rss, timers });
          if (done % (every * 10) === 0)
            console.log(
              `memory: ${num(done)} cycles, heap ${num(heapUsed / MiB, 1)} MiB, rss ${num(rss / MiB, 1)} MiB, timers ${timers}`,
            );
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, (_, id) => caller(id)));
    const seconds = (performance.now() - t0) / 1000;

    await redlock.close();
    await new Promise((r) => setTimeout(r, 500));
    gc?.();
    const handlesAfter = countBy(process.getActiveResourcesInfo());
    const listenersAfter = listeners();

    const after = samples.filter((s) => s.cycles > warmup);
    const span = after.length > 1 ? after[after.length - 1].cycles - after[0].cycles : 0;
    const fit = (pick: (s: Sample) => number) =>
      linearFit(
        after.map((s) => s.cycles),
        after.map(pick),
      );
    const heap = fit((s) => s.heapUsed);
    const rss = fit((s) => s.rss);
    const timers = fit((s) => s.timers);
    const heapGrowth = heap.slope * span;
    const rssGrowth = rss.slope * span;
    const heapGrows = heapGrowth > 1 * MiB;
    const rssGrows = rssGrowth > 8 * MiB;
    const handleChanges = changes(handlesBefore, handlesAfter);
    const listenerChanges = changes(listenersBefore, listenersAfter);
    const leftBehind = [...handleChanges, ...listenerChanges].filter((c) => {
      const [, b, a] = /: (\d+) → (\d+)$/.exec(c) ?? [];
      return Number(a) > Number(b);
    });

    const verdict = (grows: boolean) => (grows ? '**grows**' : 'flat');
    // Expiring locks keep a lapse timer each while they are valid: a level set by throughput × TTL, not a leak.
    const meanTimers = after.reduce((sum, s) => sum + s.timers, 0) / Math.max(1, after.length);
    const timersGrow = timers.slope * span > Math.max(64, 0.1 * meanTimers);
    const what =
      workload === 'expire'
        ? `- ${num(done)} \`tryAcquire()\` cycles (${num(errors)} errors or refusals), each lock left to lapse without \`release()\`, by ${concurrency} concurrent callers on fresh keys, ${count} masters, TTL ${num(ttl)} ms, in ${num(seconds, 1)} s (${num(done / seconds)} cycles/s).`
        : `- ${num(done)} acquire+release cycles (${num(errors)} errors) by ${concurrency} concurrent callers on fresh keys, ${count} masters, TTL ${num(ttl)} ms, in ${num(seconds, 1)} s (${num(done / seconds)} cycles/s). ` +
          'Even callers use `acquire()` + `release()`, odd callers `using()` (which also starts and stops renewal).';
    const md = [
      workload === 'expire' ? '## Acquire and let expire' : '## Acquire and release',
      '',
      `Generated by \`npm run bench -- ${config.argv.join(' ')}\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC. Library revision: ${libraryRevision()}.`,
      '',
      what,
      `- Machine: ${machine.nproc} cores, Linux ${machine.kernel}, Node ${machine.node}, redis-server ${machine.redis}, ioredis ${machine.ioredis}. Pinning: ${pinning}.`,
      `- A sample every ${num(every)} cycles${gc ? ', each after `global.gc()`' : ' (no --expose-gc: no gc before samples, so heap is noisier)'}; the first ${num(warmup)} cycles are warm-up. ` +
        `Lines are least-squares fits over the ${after.length} samples after warm-up (${num(span)} cycles). "Grows" means the fit rises by more than 1 MiB (heap) or 8 MiB (RSS) over that span.`,
      '',
      '| measure | after warm-up | at the end | fitted slope | fitted change over the span | R² | verdict |',
      '| --- | ---: | ---: | ---: | ---: | ---: | --- |',
      `| heapUsed | ${num((after[0]?.heapUsed ?? NaN) / MiB, 2)} MiB | ${num((after.at(-1)?.heapUsed ?? NaN) / MiB, 2)} MiB | ${num(heap.slope * 1000, 1)} B per 1k cycles | ${num(heapGrowth / 1024, 0)} KiB | ${num(heap.r2, 2)} | ${verdict(heapGrows)} |`,
      `| RSS | ${num((after[0]?.rss ?? NaN) / MiB, 1)} MiB | ${num((after.at(-1)?.rss ?? NaN) / MiB, 1)} MiB | ${num(rss.slope * 1000, 1)} B per 1k cycles | ${num(rssGrowth / 1024, 0)} KiB | ${num(rss.r2, 2)} | ${verdict(rssGrows)} |`,
      `| live timers | ${after[0]?.timers ?? '–'} | ${after.at(-1)?.timers ?? '–'} | ${num(timers.slope * 1000, 3)} per 1k cycles | ${num(timers.slope * span, 1)} | ${num(timers.r2, 2)} | ${verdict(timersGrow)} |`,
      '',
      `Handles and listeners (\`process.getActiveResourcesInfo()\`, \`process.eventNames()\`), before the Redlock was created and 500 ms after \`close()\`: ` +
        (leftBehind.length ? `**left behind: ${leftBehind.join('; ')}**.` : 'nothing left behind.'),
      '',
      `- handles before: ${show(handlesBefore)}`,
      `- handles after: ${show(handlesAfter)}`,
      `- process listeners before: ${show(listenersBefore)}; after: ${show(listenersAfter)}`,
      '',
      '### Samples',
      '',
      '| cycles | seconds | heapUsed MiB | RSS MiB | live timers |',
      '| ---: | ---: | ---: | ---: | ---: |',
      ...samples.map(
        (s) =>
          `| ${num(s.cycles)}${s.cycles <= warmup ? ' (warm-up)' : ''} | ${num(s.seconds, 1)} | ${num(s.heapUsed / MiB, 2)} | ${num(s.rss / MiB, 1)} | ${s.timers} |`,
      ),
      '',
    ].join('\n');
    const file = join(repoRoot, 'docs', 'evidence', 'bench-memory.md');
    const section = `<!-- ${workload} -->\n${md}\n<!-- /${workload} -->`;
    const marked = new RegExp(`<!-- ${workload} -->[\\s\\S]*?<!-- /${workload} -->`);
    const previous = await readFile(file, 'utf8').catch(() => '# Memory over long runs\n');
    await writeFile(
      file,
      marked.test(previous) ? previous.replace(marked, () => section) : `${previous.trimEnd()}\n\n${section}\n`,
    );
    console.log(
      `memory: heap ${heapGrows ? 'GROWS' : 'flat'} (${num(heapGrowth / 1024)} KiB over ${num(span)} cycles), rss ${rssGrows ? 'GROWS' : 'flat'} (${num(rssGrowth / 1024)} KiB), ` +
        `left behind: ${leftBehind.length ? leftBehind.join('; ') : 'nothing'}; wrote the ${workload} section of docs/evidence/bench-memory.md`,
    );
    if (leftBehind.length || heapGrows) note('memory check failed');
  } finally {
    await redis.stop();
  }
}
