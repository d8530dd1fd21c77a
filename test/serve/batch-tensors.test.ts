// Joining requests into the plugin's runs and cutting the outputs back
// (src/serve/scheduler/batch-tensors.ts): the copy-free path, taken when each
// request is one run, and the joining path must give each request the same
// rows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Tensor } from '../../src/run/plugin-api.js';
import { assembleRuns, splitOutputs, type BatchLayout } from '../../src/serve/scheduler/batch-tensors.js';

/** A request's input 'x' of `rows` rows of two F32 values, counting from `from`. */
function part(from: number, rows: number): Map<string, Tensor> {
  const values = Float32Array.from({ length: rows * 2 }, (_, i) => from + i);
  return new Map([['x', { name: 'x', dtype: 'F32', shape: [rows, 2], data: new Uint8Array(values.buffer) }]]);
}

const floats = (t: Tensor | undefined): number[] => (t === undefined ? [] : [...new Float32Array(new Uint8Array(t.data).buffer)]);

/** The plugin's work for the tests: y = x + 100, run by run. */
function run(runs: readonly ReadonlyMap<string, Tensor>[]): Map<string, Tensor>[] {
  return runs.map((r) => {
    const x = r.get('x');
    const y = Float32Array.from(floats(x), (v) => v + 100);
    return new Map([['y', { name: 'y', dtype: 'F32', shape: x?.shape ?? [], data: new Uint8Array(y.buffer) }]]);
  });
}

const layoutOf = (rowsPerRun: number): BatchLayout => ({
  inputs: [{ name: 'x', dtype: 'F32', shape: [rowsPerRun, 2] }],
  outputs: [{ name: 'y', dtype: 'F32', shape: [rowsPerRun, 2] }],
  batched: true,
});

describe('batch tensors', () => {
  it('runs requests of one run each on their own bytes, uncopied, and gives each its outputs back', () => {
    const layout = layoutOf(1);
    const parts = [part(0, 1), part(10, 1), part(20, 1)];
    const runs = assembleRuns(layout, parts, [1, 1, 1]);
    assert.equal(runs.length, 3);
    runs.forEach((r, i) => assert.equal(r.get('x')?.data, parts[i]?.get('x')?.data, `run ${i} is request ${i}'s bytes`));
    const results = run(runs);
    const out = splitOutputs(layout, results, [1, 1, 1]);
    assert.deepEqual(
      out.map((o) => floats(o.get('y'))),
      [
        [100, 101],
        [110, 111],
        [120, 121],
      ],
    );
    out.forEach((o, i) => assert.equal(o.get('y')?.data, results[i]?.get('y')?.data, `request ${i} gets run ${i}'s output`));
  });

  it("joins requests of other row counts into runs of the graph's rows, pads the last, and cuts each request its rows", () => {
    // A graph of two rows per run; requests of 1, 3 and 1 rows: five rows, three runs, one row of padding.
    const layout = layoutOf(2);
    const rows = [1, 3, 1];
    const runs = assembleRuns(layout, [part(0, 1), part(10, 3), part(20, 1)], rows);
    assert.deepEqual(
      runs.map((r) => floats(r.get('x'))),
      [
        [0, 1, 10, 11],
        [12, 13, 14, 15],
        [20, 21, 0, 0],
      ],
    );
    const out = splitOutputs(layout, run(runs), rows);
    assert.deepEqual(
      out.map((o) => o.get('y')?.shape),
      [
        [1, 2],
        [3, 2],
        [1, 2],
      ],
    );
    assert.deepEqual(
      out.map((o) => floats(o.get('y'))),
      [
        [100, 101],
        [110, 111, 112, 113, 114, 115],
        [120, 121],
      ],
    );
  });

  it('gives the same rows on both paths: one run per request, and the same requests joined', () => {
    const parts = [part(0, 2), part(10, 2)];
    const own = splitOutputs(layoutOf(2), run(assembleRuns(layoutOf(2), parts, [2, 2])), [2, 2]);
    const joined = splitOutputs(layoutOf(4), run(assembleRuns(layoutOf(4), parts, [2, 2])), [2, 2]);
    assert.deepEqual(
      own.map((o) => floats(o.get('y'))),
      joined.map((o) => floats(o.get('y'))),
    );
  });
});
