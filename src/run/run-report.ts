import type { OutputComparison } from './compare.js';
import type { TimedRun } from './measure.js';
import type { TensorSpec } from './plugin-api.js';
import { latency, summarize, topK, type Latency, type TensorSummary } from './stats.js';

/**
 * What `popef run` reports (its --json form is this object, described by
 * schemas/run.schema.json), assembled from the run's parts; presenters
 * render it.
 */
export interface RunReport {
  readonly tool: 'popef-toolkit';
  readonly plugin: string;
  readonly model: string;
  readonly executable: string;
  readonly inputs: readonly { name: string; anchor: string; dtype: string; shape: readonly number[] }[];
  readonly outputs: readonly (TensorSummary & { anchor: string; topK?: { index: number; value: number }[][] })[];
  readonly timing: Latency & { warmup: number; totalMs: number; batch: number; samplesPerSecond: number };
  readonly comparison: readonly OutputComparison[] | null;
  /** The second plugin of --compare-with, when the comparison is against it. */
  readonly comparedWith?: string;
}

export interface RunReportParts {
  readonly plugin: string;
  readonly model: string;
  readonly executable: string;
  readonly inputs: readonly TensorSpec[];
  /** The model's outputs, in its order. */
  readonly outputs: readonly TensorSpec[];
  readonly run: TimedRun;
  readonly warmup: number;
  /** The client-facing name of an anchor. */
  readonly nameOf: (anchor: string) => string;
  readonly topK?: number;
  readonly comparison?: { readonly comparisons: readonly OutputComparison[]; readonly with?: string };
}

export function runReport(p: RunReportParts): RunReport {
  const { run, nameOf } = p;
  // The first input's leading dimension is the batch.
  const batch = p.inputs[0]?.shape[0] ?? 1;
  return {
    tool: 'popef-toolkit',
    plugin: p.plugin,
    model: p.model,
    executable: p.executable,
    inputs: p.inputs.map((s) => ({ name: nameOf(s.name), anchor: s.name, dtype: s.dtype, shape: s.shape })),
    outputs: p.outputs.flatMap((spec) => {
      // The plugin guard has checked that every output is there.
      const t = run.outputs.get(spec.name);
      return t === undefined
        ? []
        : [{ ...summarize(t, nameOf(spec.name)), anchor: spec.name, ...(p.topK === undefined ? {} : { topK: topK(t, p.topK) }) }];
    }),
    timing: {
      ...latency(run.samples),
      warmup: p.warmup,
      totalMs: run.totalMs,
      batch,
      samplesPerSecond: (run.samples.length * batch * 1000) / Math.max(run.totalMs, 1e-9),
    },
    comparison: p.comparison?.comparisons ?? null,
    ...(p.comparison?.with === undefined ? {} : { comparedWith: p.comparison.with }),
  };
}
