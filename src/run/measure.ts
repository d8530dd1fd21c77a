import type { OpenedModel, Tensor } from './plugin-api.js';

/**
 * The timed loop of `popef run`: warm-up runs, then a number of runs or
 * runs for a duration, each timed. Each run receives its outputs into the
 * previous run's buffers (RunOptions.into): only the last run's are kept.
 */

export interface TimedRunOptions {
  readonly warmup: number;
  /** Runs to time (when no duration is given). */
  readonly iterations: number;
  /** Time the runs for this long instead (at least one run). */
  readonly durationMs?: number;
  /** Called after each timed run: how many so far, and since when. */
  readonly onProgress?: (progress: { readonly runs: number; readonly elapsedMs: number }) => void;
}

export interface TimedRun {
  /** The outputs of the last run. */
  readonly outputs: Map<string, Tensor>;
  /** Each timed run's latency, in milliseconds. */
  readonly samples: number[];
  /** From the first timed run's start to the last one's end. */
  readonly totalMs: number;
}

function lend(previous: ReadonlyMap<string, Tensor>): { into: Map<string, Uint8Array> } {
  return { into: new Map([...previous].map(([name, t]) => [name, t.data])) };
}

export async function runTimed(model: OpenedModel, inputs: ReadonlyMap<string, Tensor>, options: TimedRunOptions): Promise<TimedRun> {
  let outputs = new Map<string, Tensor>();
  for (let i = 0; i < options.warmup; i++) outputs = await model.run(inputs, lend(outputs));
  const { durationMs, iterations } = options;
  const samples: number[] = [];
  const started = performance.now();
  const more = (): boolean =>
    durationMs === undefined ? samples.length < iterations : samples.length === 0 || performance.now() - started < durationMs;
  while (more()) {
    const t0 = performance.now();
    outputs = await model.run(inputs, lend(outputs));
    samples.push(performance.now() - t0);
    options.onProgress?.({ runs: samples.length, elapsedMs: performance.now() - started });
  }
  return { outputs, samples, totalMs: performance.now() - started };
}
