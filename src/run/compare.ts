import type { Tensor } from './plugin-api.js';
import { toNumbers } from './tensor.js';

/**
 * Output comparison, numpy.isclose style: an element passes when
 * |actual - expected| <= atol + rtol * |expected| (NaN equals NaN). Besides
 * the verdict it reports the error statistics and the smallest tolerances
 * that would have passed, which is what a user tuning --atol/--rtol needs.
 */

export interface Tolerance {
  readonly atol: number;
  readonly rtol: number;
}

/** How far two tensors are apart, and whether they agree within the tolerances. */
export interface Comparison {
  readonly elements: number;
  readonly mismatches: number;
  readonly maxAbsError: number;
  /** Largest |a - e| / |e| (Infinity when e = 0 and a differs). */
  readonly maxRelError: number;
  readonly passed: boolean;
  /** Smallest atol that passes with the given rtol. */
  readonly minAtol: number;
  /** Smallest rtol that passes with the given atol (Infinity if none does). */
  readonly minRtol: number;
}

function close(a: number, e: number, atol: number, rtol: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(e)) return Number.isNaN(a) && Number.isNaN(e);
  if (a === e) return true;
  return Math.abs(a - e) <= atol + rtol * Math.abs(e);
}

/** The smallest x >= start for which ok(x) holds, starting from a computed bound that rounding may leave a few ulps short. */
function settle(start: number, ok: (x: number) => boolean): number {
  let x = start;
  for (let i = 0; i < 64 && !ok(x) && Number.isFinite(x); i++) {
    x = x === 0 ? Number.MIN_VALUE : x + Math.max(Number.EPSILON * Math.abs(x), Number.MIN_VALUE);
  }
  return ok(x) ? x : Infinity;
}

/** Compares element by element (|actual - expected| <= atol + rtol x |expected|), with error statistics and the smallest tolerances that would pass. */
export function compareValues(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: Tolerance): Comparison {
  const n = Math.min(actual.length, expected.length);
  let mismatches = 0;
  let maxAbs = 0;
  let maxRel = 0;
  let minAtol = 0;
  let minRtol = 0;
  for (let i = 0; i < n; i++) {
    const a = actual[i] ?? 0;
    const e = expected[i] ?? 0;
    if (!close(a, e, tol.atol, tol.rtol)) mismatches += 1;
    if (Number.isNaN(a) || Number.isNaN(e)) {
      if (!(Number.isNaN(a) && Number.isNaN(e))) {
        maxAbs = Infinity;
        maxRel = Infinity;
        minAtol = Infinity;
        minRtol = Infinity;
      }
      continue;
    }
    if (a === e) continue;
    const diff = Math.abs(a - e);
    const scale = Math.abs(e);
    maxAbs = Math.max(maxAbs, diff);
    maxRel = Math.max(maxRel, scale === 0 ? Infinity : diff / scale);
    minAtol = Math.max(minAtol, diff - tol.rtol * scale);
    if (diff > tol.atol) minRtol = Math.max(minRtol, scale === 0 ? Infinity : (diff - tol.atol) / scale);
  }
  const allClose = (atol: number, rtol: number): boolean => {
    for (let i = 0; i < n; i++) if (!close(actual[i] ?? 0, expected[i] ?? 0, atol, rtol)) return false;
    return true;
  };
  return {
    elements: n,
    mismatches,
    maxAbsError: maxAbs,
    maxRelError: maxRel,
    passed: mismatches === 0 && actual.length === expected.length,
    minAtol: settle(Math.max(0, minAtol), (x) => allClose(x, tol.rtol)),
    minRtol: settle(Math.max(0, minRtol), (x) => allClose(tol.atol, x)),
  };
}

/** One output's comparison, as `popef run` reports it. */
export interface OutputComparison extends Comparison {
  /** The output's client-facing name. */
  readonly name: string;
  readonly atol: number;
  readonly rtol: number;
  /** Why it failed beyond the values (a shape that differs, an output missing). */
  readonly note?: string;
}

/** A tolerance for all outputs, and any given per output (by client or anchor name). */
export interface OutputTolerance {
  readonly all: number;
  readonly by: ReadonlyMap<string, number>;
}

export interface OutputTolerances {
  readonly atol: OutputTolerance;
  readonly rtol: OutputTolerance;
}

/**
 * Compares each output with its expected values, whether they come from
 * saved files (--expect) or from a second plugin (--compare-with):
 * `expectedOf` gives the expected tensor of an output, or a note saying why
 * there is none. `nameOf` gives an anchor's client-facing name.
 */
export async function compareOutputs(
  actual: ReadonlyMap<string, Tensor>,
  expectedOf: (output: Tensor, name: string) => Promise<Tensor | string>,
  tolerances: OutputTolerances,
  nameOf: (anchor: string) => string,
): Promise<OutputComparison[]> {
  const comparisons: OutputComparison[] = [];
  for (const t of actual.values()) {
    const name = nameOf(t.name);
    const pick = (tol: OutputTolerance): number => tol.by.get(name) ?? tol.by.get(t.name) ?? tol.all;
    const tol = { atol: pick(tolerances.atol), rtol: pick(tolerances.rtol) };
    const expected = await expectedOf(t, name);
    if (typeof expected === 'string') {
      comparisons.push({ ...compareValues([], [], tol), passed: false, name, ...tol, note: expected });
      continue;
    }
    const c = compareValues(toNumbers(t), toNumbers(expected), tol);
    const sameShape = expected.shape.length === t.shape.length && expected.shape.every((d, i) => d === t.shape[i]);
    comparisons.push(
      sameShape
        ? { ...c, name, ...tol }
        : { ...c, passed: false, name, ...tol, note: `shape [${t.shape.join(', ')}] differs from the expected [${expected.shape.join(', ')}]` },
    );
  }
  return comparisons;
}
