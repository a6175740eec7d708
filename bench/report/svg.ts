/**
 * docs/evidence/bench-results.svg, written by hand: two panels of grouped bars, throughput (cycles/s, 64 callers)
 * and uncontended p50 latency (µs), one group per master count, one bar per subject, whiskers for
 * the min–max over rounds.
 */
import type { RunResults } from '../model.js';
import { spread, type Spread } from '../stats.js';
import { kilo } from './format.js';

const COLORS: Record<string, string> = {
  'quorum-lock': '#d94f2b',
  'node-redlock': '#4c78a8',
  'redlock-universal': '#72b7b2',
  'redis-semaphore': '#9c6fb6',
  raw: '#a8a8a8',
  'raw-ap': '#5f5f5f',
};

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A "nice" tick step (1, 2, 2.5 or 5 × 10^k) giving about five ticks, and the axis top: the first tick at or above `max`. */
function axis(max: number): { top: number; step: number } {
  const rough = (max > 0 ? max : 1) / 5;
  const mag = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= rough)!;
  return { top: Math.max(step, Math.ceil(max / step) * step), step };
}

interface Panel {
  title: string;
  unit: string;
  groups: { label: string; bars: { id: string; s: Spread }[] }[];
}

function panel(p: Panel, x0: number, y0: number, width: number, height: number): string {
  const out: string[] = [];
  const left = 56;
  const plotW = width - left - 8;
  const plotH = height - 58;
  const top = y0 + 28;
  const all = p.groups.flatMap((g) => g.bars.map((b) => b.s.max));
  const { top: yMax, step } = axis(Math.max(0, ...all.filter(Number.isFinite)));
  const y = (v: number) => top + plotH - (v / yMax) * plotH;
  out.push(`<text x="${x0 + left}" y="${y0 + 14}" class="title">${esc(p.title)}</text>`);
  for (let v = 0; v <= yMax + step / 2; v += step) {
    out.push(
      `<line x1="${x0 + left}" x2="${x0 + left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" class="grid"/>`,
    );
    out.push(
      `<text x="${x0 + left - 6}" y="${(y(v) + 4).toFixed(1)}" class="tick" text-anchor="end">${kilo(v)}</text>`,
    );
  }
  out.push(
    `<text transform="translate(${x0 + 14},${top + plotH / 2}) rotate(-90)" class="tick" text-anchor="middle">${esc(p.unit)}</text>`,
  );
  const groupW = plotW / Math.max(1, p.groups.length);
  p.groups.forEach((g, gi) => {
    const n = Math.max(1, g.bars.length);
    const barW = Math.min(34, (groupW * 0.84) / n);
    const gx = x0 + left + gi * groupW + (groupW - barW * n) / 2;
    g.bars.forEach((b, bi) => {
      if (!Number.isFinite(b.s.median)) return;
      const bx = gx + bi * barW;
      const by = y(b.s.median);
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${by.toFixed(1)}" width="${(barW - 3).toFixed(1)}" height="${(top + plotH - by).toFixed(1)}" fill="${COLORS[b.id] ?? '#888'}"><title>${esc(b.id)}: ${kilo(b.s.median)} (${kilo(b.s.min)}–${kilo(b.s.max)})</title></rect>`,
      );
      if (b.s.max > b.s.min) {
        const cx = (bx + (barW - 3) / 2).toFixed(1);
        out.push(
          `<line x1="${cx}" x2="${cx}" y1="${y(b.s.min).toFixed(1)}" y2="${y(b.s.max).toFixed(1)}" class="whisker"/>`,
        );
      }
      out.push(
        `<text x="${(bx + (barW - 3) / 2).toFixed(1)}" y="${(Math.min(by, y(b.s.max)) - 4).toFixed(1)}" class="value" text-anchor="middle">${kilo(b.s.median)}</text>`,
      );
    });
    out.push(
      `<text x="${(x0 + left + gi * groupW + groupW / 2).toFixed(1)}" y="${top + plotH + 18}" class="group" text-anchor="middle">${esc(g.label)}</text>`,
    );
  });
  out.push(`<line x1="${x0 + left}" x2="${x0 + left + plotW}" y1="${top + plotH}" y2="${top + plotH}" class="axis"/>`);
  return out.join('\n');
}

export function renderSvg(res: RunResults): string {
  const width = 960;
  const height = 452;
  const ids = res.subjects.map((s) => s.id);
  const groups = (pick: (r: RunResults['byMasters'][number]) => Record<string, number[]>) =>
    res.byMasters.map((r) => ({
      label: `${r.masters} master${r.masters > 1 ? 's' : ''}`,
      bars: ids.filter((id) => pick(r)[id]).map((id) => ({ id, s: spread(pick(r)[id]) })),
    }));
  const cps = (r: RunResults['byMasters'][number]) =>
    Object.fromEntries(Object.entries(r.throughput).map(([id, x]) => [id, x.map((t) => t.cyclesPerSec)]));
  const p50 = (r: RunResults['byMasters'][number]) =>
    Object.fromEntries(Object.entries(r.latency).map(([id, x]) => [id, x.map((t) => t.p50)]));
  let lx = 20;
  const legend = res.subjects
    .map((s) => {
      const label =
        s.kind === 'library' ? `${s.label} ${s.version}` : s.id === 'raw-ap' ? 'raw, auto-pipelined' : 'raw quorum';
      const x = lx;
      lx += 17 + label.length * 6.1 + 16; // ~6.1 px per character at 11 px
      return `<rect x="${x}" y="50" width="12" height="12" fill="${COLORS[s.id] ?? '#888'}"/><text x="${x + 17}" y="60" class="legend">${esc(label)}</text>`;
    })
    .join('\n');
  const m = res.machine;
  const footer1 = `${res.startedAt.slice(0, 10)} · ${m.nproc} cores, Linux ${m.kernel}, Node ${m.node}, redis-server ${m.redis}, ioredis ${m.ioredis} · ${res.pinning.replace(/ \(`.*`\)/, '')}`;
  const footer2 = `bars: median of ${res.config.rounds} round${res.config.rounds > 1 ? 's' : ''}, whiskers: min–max · ${res.command}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif">
<style>
.heading{font-size:17px;font-weight:600;fill:#222}.title{font-size:13px;font-weight:600;fill:#333}.tick{font-size:10px;fill:#666}
.group{font-size:12px;fill:#333}.value{font-size:8.5px;fill:#333}.legend{font-size:11px;fill:#333}.foot{font-size:9.5px;fill:#777}
.grid{stroke:#e6e6e6;stroke-width:1}.axis{stroke:#999;stroke-width:1}.whisker{stroke:#222;stroke-width:1.2}
</style>
<rect width="100%" height="100%" fill="#fff"/>
<text x="20" y="30" class="heading">Redlock acquire+release on local redis-server masters</text>
${legend}
${panel({ title: `Throughput, ${res.config.throughput.concurrency} concurrent callers (cycles/s, higher is better)`, unit: 'cycles/s', groups: groups(cps) }, 10, 76, 470, 330)}
${panel({ title: 'Uncontended latency, p50 (µs, lower is better)', unit: 'µs', groups: groups(p50) }, 480, 76, 470, 330)}
<text x="20" y="${height - 24}" class="foot">${esc(footer1)}</text>
<text x="20" y="${height - 10}" class="foot">${esc(footer2)}</text>
</svg>
`;
}
