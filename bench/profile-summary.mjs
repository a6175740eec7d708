// Sums a V8 `.cpuprofile` (from `node --cpu-prof`) by function and by where the code lives.
// Usage: node bench/profile-summary.mjs prof/CPU.*.cpuprofile [top=30]
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
const top = Number(topArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const deltas = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const where = (url) => {
  if (!url) return 'native/other';
  if (!url.includes('node_modules') && (url.includes('/dist/') || url.includes('/lib/'))) return 'library';
  if (
    url.includes('node_modules/ioredis') ||
    url.includes('node_modules/redis-parser') ||
    url.includes('node_modules/@ioredis')
  )
    return 'ioredis';
  if (url.includes('dist-bench')) return 'bench';
  if (url.startsWith('node:')) return 'node core';
  return 'other';
};
const byFn = new Map();
const byWhere = new Map();
let idle = 0;
for (const [id, t] of self) {
  const n = byId.get(id);
  const { functionName, url, lineNumber } = n.callFrame;
  if (functionName === '(idle)') {
    idle += t;
    continue;
  }
  const short = (url || '').split('/').slice(-2).join('/');
  const key = `${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`;
  byFn.set(key, (byFn.get(key) ?? 0) + t);
  const w = ['(garbage collector)', '(program)'].includes(functionName)
    ? functionName
    : functionName === 'writev' || functionName === 'writeBuffer' || functionName === 'writeUtf8String'
      ? 'socket writes'
      : where(url);
  byWhere.set(w, (byWhere.get(w) ?? 0) + t);
}
const busy = total - idle;
console.log(`busy ${(busy / 1e3).toFixed(0)} ms of ${(total / 1e3).toFixed(0)} ms`);
for (const [w, t] of [...byWhere].sort((a, b) => b[1] - a[1]))
  console.log(`${(t / 1e3).toFixed(1).padStart(8)} ms ${((100 * t) / busy).toFixed(1).padStart(5)} %  ${w}`);
console.log('--- top functions (self) ---');
for (const [k, t] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(`${(t / 1e3).toFixed(1).padStart(8)} ms ${((100 * t) / busy).toFixed(1).padStart(5)} %  ${k}`);
