import type { Tensor } from './plugin-api.js';
import { toNumbers } from './tensor.js';

/** What `popef run` shows of an output. */
export interface TensorSummary {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly first: readonly number[];
}

/** Minimum, maximum, mean and the first `firstCount` values of a tensor. */
export function summarize(t: Tensor, name = t.name, firstCount = 5): TensorSummary {
  const v = toNumbers(t);
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (const x of v) {
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
  }
  return {
    name,
    dtype: t.dtype,
    shape: t.shape,
    min: v.length === 0 ? NaN : min,
    max: v.length === 0 ? NaN : max,
    mean: v.length === 0 ? NaN : sum / v.length,
    first: Array.from(v.subarray(0, firstCount)),
  };
}

/** The k largest values of each row of the last dimension (a classifier's classes). */
export function topK(t: Tensor, k: number): { index: number; value: number }[][] {
  const v = toNumbers(t);
  const classes = t.shape[t.shape.length - 1] ?? v.length;
  const rows: { index: number; value: number }[][] = [];
  for (let start = 0; start < v.length; start += Math.max(1, classes)) {
    const row = Array.from(v.subarray(start, start + classes), (value, index) => ({ index, value }));
    row.sort((a, b) => b.value - a.value || a.index - b.index);
    rows.push(row.slice(0, k));
  }
  return rows;
}

/** Latency figures in milliseconds. */
export interface Latency {
  readonly runs: number;
  readonly min: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentiles of the measured latencies. */
export function latency(samples: readonly number[]): Latency {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
  return {
    runs: s.length,
    min: s[0] ?? NaN,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    max: s[s.length - 1] ?? NaN,
    mean: s.reduce((a, b) => a + b, 0) / Math.max(1, s.length),
  };
}
