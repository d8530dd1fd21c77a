import type { Tensor, TensorSpec } from '../../run/plugin-api.js';
import { byteLength } from '../../run/tensor.js';

/**
 * A batch of requests as the plugin takes it, and back. Requests are
 * joined along the batch dimension, in queue order, as Triton's backends
 * receive a batch. A PopEF executable has fixed shapes: its anchors
 * describe one micro-batch, and each run of the plugin takes exactly that
 * many rows. A batch of more rows runs once per micro-batch (on an IPU these
 * are the executable's device iterations, which is why max_batch_size is
 * micro-batch × device iterations: `popef config`); the last micro-batch is
 * padded with zero rows, and the padding is cut from the outputs.
 */

export interface BatchLayout {
  /** The plugin's inputs and outputs, by anchor: the shapes of one run. */
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** Whether the first dimension is the batch (max_batch_size > 0). */
  readonly batched: boolean;
}

/** Row-major bytes of one row of a tensor of this shape and byte length. */
function rowBytes(shape: readonly number[], byteLength: number): number {
  const rows = shape[0] ?? 1;
  return rows === 0 ? 0 : byteLength / rows;
}

/**
 * The plugin runs for requests of these row counts, whose tensors (by
 * anchor, `rows` rows each) are joined: one map of inputs per run. Each
 * input is gathered once, into one buffer for all the runs; when every
 * request holds exactly one run's rows (the common case of a graph that
 * takes one row, and of a batch of one), a request's tensors are its run's
 * as they are, and nothing is copied.
 */
export function assembleRuns(
  layout: BatchLayout,
  parts: readonly ReadonlyMap<string, Tensor>[],
  rows: readonly number[],
): ReadonlyMap<string, Tensor>[] {
  // Without a batch dimension every request is one run of its own tensors.
  if (!layout.batched) return [...parts];
  const perRun = layout.inputs[0]?.shape[0] ?? 1;
  if (rows.every((n) => n === perRun)) {
    const runs = oneRunEach(layout, parts);
    if (runs !== undefined) return runs;
  }
  const total = rows.reduce((a, b) => a + b, 0);
  const runs: Map<string, Tensor>[] = [];
  const count = Math.max(1, Math.ceil(total / Math.max(1, perRun)));
  for (let r = 0; r < count; r++) runs.push(new Map());
  for (const spec of layout.inputs) {
    const specRows = spec.shape[0] ?? 1;
    const joined = new Uint8Array(count * specRows * rowBytes(spec.shape, byteLength(spec)));
    let at = 0;
    for (const part of parts) {
      const t = part.get(spec.name);
      if (t === undefined) continue;
      joined.set(t.data, at);
      at += t.data.byteLength;
    }
    const runBytes = joined.byteLength / count;
    for (let r = 0; r < count; r++)
      runs[r]?.set(spec.name, { name: spec.name, dtype: spec.dtype, shape: spec.shape, data: joined.subarray(r * runBytes, (r + 1) * runBytes) });
  }
  return runs;
}

/** One run per request, of the request's own bytes; undefined when a request lacks an input or its bytes are not one run's. */
function oneRunEach(layout: BatchLayout, parts: readonly ReadonlyMap<string, Tensor>[]): Map<string, Tensor>[] | undefined {
  const runs: Map<string, Tensor>[] = [];
  for (const part of parts) {
    const run = new Map<string, Tensor>();
    for (const spec of layout.inputs) {
      const t = part.get(spec.name);
      if (t === undefined || t.data.byteLength !== byteLength(spec)) return undefined;
      run.set(spec.name, { name: spec.name, dtype: spec.dtype, shape: spec.shape, data: t.data });
    }
    runs.push(run);
  }
  return runs;
}

/**
 * The outputs of the runs, cut into each request's rows (with the request's
 * row count as the first dimension). When each request had a run of its
 * own, its outputs are that run's, uncopied.
 */
export function splitOutputs(
  layout: BatchLayout,
  results: readonly ReadonlyMap<string, Tensor>[],
  rows: readonly number[],
): ReadonlyMap<string, Tensor>[] {
  if (!layout.batched) return [...results];
  const out = rows.map(() => new Map<string, Tensor>());
  for (const spec of layout.outputs) {
    const pieces = results.map((r) => r.get(spec.name)?.data ?? new Uint8Array(0));
    const row = rowBytes(spec.shape, byteLength(spec));
    // Each request's rows are one run's output as it is, or a cut of all the runs' joined.
    const ownRun = results.length === rows.length && rows.every((n, i) => n * row === pieces[i]?.byteLength);
    const joined = ownRun ? undefined : pieces.length === 1 ? (pieces[0] as Uint8Array) : Buffer.concat(pieces);
    let at = 0;
    rows.forEach((n, i) => {
      const data = joined === undefined ? (pieces[i] as Uint8Array) : joined.subarray(at, at + n * row);
      out[i]?.set(spec.name, { name: spec.name, dtype: spec.dtype, shape: [n, ...spec.shape.slice(1)], data });
      at += n * row;
    });
  }
  return out;
}
