import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compareOutputs, compareValues } from '../../src/run/compare.js';
import { fromNumbers } from '../../src/run/tensor.js';

// Subnormal numbers have too little precision for "a little smaller" to mean anything: keep clear of them.
const normal = (x: number): boolean => x === 0 || Math.abs(x) > 1e-200;
const finite = fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }).filter(normal);
const tolerance = fc.double({ min: 0, max: 1, noNaN: true }).filter(normal);

describe('output comparison', () => {
  it('reports the smallest atol and rtol that pass, exactly (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(finite, finite), { minLength: 1, maxLength: 30 }), tolerance, tolerance, (pairs, atol, rtol) => {
        const actual = pairs.map(([a]) => a);
        const expected = pairs.map(([, e]) => e);
        const c = compareValues(actual, expected, { atol, rtol });
        assert.equal(c.passed, c.mismatches === 0);
        // The reported tolerances pass...
        assert.equal(compareValues(actual, expected, { atol: c.minAtol, rtol }).mismatches, 0);
        if (Number.isFinite(c.minRtol)) assert.equal(compareValues(actual, expected, { atol, rtol: c.minRtol }).mismatches, 0);
        // ...and anything clearly smaller does not. "Clearly": beyond the rounding of |a - e| - rtol * |e|, which cancels.
        const slack = Math.max(c.minAtol * 1e-6, c.maxAbsError * 1e-12);
        if (c.minAtol > slack) assert.ok(compareValues(actual, expected, { atol: c.minAtol - slack, rtol }).mismatches > 0);
        if (c.minRtol > 1e-200 && Number.isFinite(c.minRtol))
          assert.ok(compareValues(actual, expected, { atol, rtol: c.minRtol * (1 - 1e-6) }).mismatches > 0);
      }),
      { numRuns: 500 },
    );
  });

  it('counts mismatches and the largest errors', () => {
    const c = compareValues([1, 2.5, 3], [1, 2, 0], { atol: 0.1, rtol: 0 });
    assert.equal(c.mismatches, 2);
    assert.equal(c.maxAbsError, 3);
    assert.equal(c.maxRelError, Infinity);
    assert.equal(c.minRtol, Infinity, 'no rtol helps when the expected value is 0');
    assert.equal(c.minAtol, 3);
  });

  it('treats NaN as equal to NaN only', () => {
    assert.equal(compareValues([NaN], [NaN], { atol: 0, rtol: 0 }).passed, true);
    const c = compareValues([NaN], [1], { atol: 0, rtol: 0 });
    assert.equal(c.passed, false);
    assert.equal(c.minAtol, Infinity);
  });
});

describe('compareOutputs', () => {
  const spec = { name: 'y', dtype: 'F32' as const, shape: [1, 3] };
  const actual = new Map([['y', fromNumbers(spec, [1, 2, 3])]]);
  const tolerances = { atol: { all: 0, by: new Map([['scores', 0.5]]) }, rtol: { all: 0, by: new Map<string, number>() } };
  const nameOf = (anchor: string): string => (anchor === 'y' ? 'scores' : anchor);

  it('takes the tolerance given by client name, then anchor name, then for all; notes a shape that differs or a missing output', async () => {
    const shifted = await compareOutputs(actual, () => Promise.resolve(fromNumbers(spec, [1.5, 2.5, 3.5])), tolerances, nameOf);
    assert.deepEqual(
      shifted.map((c) => [c.name, c.atol, c.passed]),
      [['scores', 0.5, true]],
    );
    const reshaped = await compareOutputs(actual, () => Promise.resolve(fromNumbers({ ...spec, shape: [3] }, [1, 2, 3])), tolerances, nameOf);
    assert.equal(reshaped[0]?.passed, false);
    assert.equal(reshaped[0].note, 'shape [1, 3] differs from the expected [3]');
    const missing = await compareOutputs(actual, () => Promise.resolve('plugin "cpu" gave no output "y"'), tolerances, nameOf);
    assert.deepEqual([missing[0]?.passed, missing[0]?.note], [false, 'plugin "cpu" gave no output "y"']);
  });
});
