import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compareValues } from '../../src/run/compare.js';

// Subnormal numbers have too little precision for "a little smaller" to mean anything: keep clear of them.
const normal = (x: number): boolean => x === 0 || Math.abs(x) > 1e-200;
const finite = fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }).filter(normal);
const tolerance = fc.double({ min: 0, max: 1, noNaN: true }).filter(normal);

describe('output comparison', () => {
  it('reports the smallest atol and rtol that pass, exactly (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(finite, finite), { minLength: 1, maxLength: 30 }),
        tolerance,
        tolerance,
        (pairs, atol, rtol) => {
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
          if (c.minRtol > 1e-200 && Number.isFinite(c.minRtol)) assert.ok(compareValues(actual, expected, { atol, rtol: c.minRtol * (1 - 1e-6) }).mismatches > 0);
        },
      ),
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
