/**
 * A model's counters in Triton's ModelStatistics terms, and how the
 * scheduler adds to them (as Triton core's InferenceStatsAggregator does,
 * r24.10 src/infer_stats.cc): each successful request adds its rows to
 * inference_count and its times to inference_stats; each execution, of
 * however many requests, adds one to execution_count and to the batch_stats
 * row of its batch size; a request that fails, is rejected or is
 * cancelled adds to `fail` only. Input and output copying is not timed
 * apart from the run (the plugin does both): those durations are zero,
 * counted once per success.
 */

export interface Duration {
  count: number;
  ns: bigint;
}

export interface ModelStats {
  lastInference: number;
  inferenceCount: number;
  executionCount: number;
  success: Duration;
  fail: Duration;
  queue: Duration;
  computeInfer: Duration;
  /** Per batch size: executions and their run time. */
  readonly batches: Map<number, Duration>;
}

function zero(): Duration {
  return { count: 0, ns: 0n };
}

export function emptyStats(): ModelStats {
  return {
    lastInference: 0,
    inferenceCount: 0,
    executionCount: 0,
    success: zero(),
    fail: zero(),
    queue: zero(),
    computeInfer: zero(),
    batches: new Map(),
  };
}

function add(d: Duration, fromNs: number, toNs: number): void {
  d.count += 1;
  d.ns += BigInt(Math.max(0, Math.round(toNs - fromNs)));
}

export function recordSuccess(s: ModelStats, rows: number, enqueuedNs: number, computeStartNs: number, computeEndNs: number): void {
  s.lastInference = Date.now();
  s.inferenceCount += rows;
  add(s.success, enqueuedNs, computeEndNs);
  add(s.queue, enqueuedNs, computeStartNs);
  add(s.computeInfer, computeStartNs, computeEndNs);
}

export function recordExecution(s: ModelStats, batchSize: number, computeStartNs: number, computeEndNs: number): void {
  s.executionCount += 1;
  const b = s.batches.get(batchSize) ?? zero();
  add(b, computeStartNs, computeEndNs);
  s.batches.set(batchSize, b);
}

export function recordFailure(s: ModelStats, enqueuedNs: number, endNs: number): void {
  s.lastInference = Date.now();
  add(s.fail, enqueuedNs, endNs);
}
