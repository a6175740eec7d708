/** Number formatting shared by the Markdown report and the SVG chart. */
import type { Spread } from '../stats.js';

export function num(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return '–';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** 3 significant-ish digits: 0.42, 4.2, 42, 420, 4,200. */
export function short(n: number): string {
  if (!Number.isFinite(n)) return '–';
  const a = Math.abs(n);
  return num(n, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

/** `median (min–max)`. */
export function med(s: Spread, f: (n: number) => string = short): string {
  if (s.n === 0) return '–';
  return s.n === 1 || s.min === s.max ? f(s.median) : `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
}

/** `1.23×`. */
export function ratio(r: number): string {
  return Number.isFinite(r) ? `${r.toFixed(2)}×` : '–';
}

/** Compact k-notation for chart labels: 4.2k, 870. */
export function kilo(n: number): string {
  if (!Number.isFinite(n)) return '';
  return n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : n.toFixed(0);
}
