/** Small, dependency-free statistics for the benchmark: percentiles, medians, spread, fairness, fits. */

/** Nearest-rank percentile of an ascending array (`q` in 0..1); NaN when empty. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** p50 / p99 / max of raw samples. */
export function quantiles(values: readonly number[]): { p50: number; p99: number; max: number; count: number } {
  const sorted = Array.from(Float64Array.from(values).sort());
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    count: sorted.length,
  };
}

/** Median and min–max of per-round values; NaNs (a round with no sample) are ignored. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function spread(values: readonly number[]): Spread {
  const finite = values.filter((v) => Number.isFinite(v));
  const sorted = Array.from(Float64Array.from(finite).sort());
  if (sorted.length === 0) return { median: NaN, min: NaN, max: NaN, n: 0 };
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1], n: sorted.length };
}

/** Median of per-round ratios a[i] / b[i] (paired within a round, so drift between rounds cancels). */
export function pairedRatio(a: readonly number[], b: readonly number[]): number {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (Number.isFinite(a[i]) && Number.isFinite(b[i]) && b[i] !== 0) ratios.push(a[i] / b[i]);
  }
  return spread(ratios).median;
}

/** Median and min–max of per-round ratios a[i] / b[i]. */
export function pairedSpread(a: readonly number[], b: readonly number[]): Spread {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (Number.isFinite(a[i]) && Number.isFinite(b[i]) && b[i] !== 0) ratios.push(a[i] / b[i]);
  }
  return spread(ratios);
}

/** Jain's fairness index: (Σx)² / (n·Σx²); 1 = perfectly even, 1/n = one caller got everything. */
export function jain(xs: readonly number[]): number {
  let sum = 0;
  let squares = 0;
  for (const x of xs) {
    sum += x;
    squares += x * x;
  }
  return squares === 0 ? NaN : (sum * sum) / (xs.length * squares);
}

/** Least-squares line y = intercept + slope·x, with R². */
export function linearFit(
  xs: readonly number[],
  ys: readonly number[],
): { slope: number; intercept: number; r2: number } {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (xs[i] - mx) ** 2;
    sxy += (xs[i] - mx) * (ys[i] - my);
    syy += (ys[i] - my) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: my - slope * mx, r2: syy === 0 ? 1 : (sxy * sxy) / (sxx * syy) };
}
