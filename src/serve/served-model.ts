import type { ExecutionPlugin, OpenedModel, Tensor } from '../run/plugin-api.js';
import type { ModelConfig } from '../triton/model-config.js';
import type { ProtocolDataType } from '../triton/protocol-datatypes.js';
import type { RequestContract } from './infer-request.js';
import { RequestError } from './status.js';

/**
 * One model of a served repository: its state as Triton reports it
 * (READY, UNAVAILABLE with a reason), the client-facing tensors joined to
 * their PopEF anchors, the plugin instances that run it, and Triton's
 * statistics for it.
 */

export interface ServedTensor {
  /** The client name (config.pbtxt, after name_map.json). */
  readonly name: string;
  /** The PopEF anchor it maps to. */
  readonly anchor: string;
  readonly datatype: ProtocolDataType;
  /** Dims as the config states them (without the batch dimension when max_batch_size > 0). */
  readonly dims: readonly number[];
  /** The anchor's shape in the PopEF (batch dimension included). */
  readonly anchorShape: readonly number[];
  /** Classification labels (the output's label_filename), one per class index. */
  readonly labels?: readonly string[];
}

export type ModelState = 'READY' | 'UNAVAILABLE';

export interface Duration {
  count: number;
  ns: bigint;
}

/**
 * The counters of Triton's ModelStatistics that a server without dynamic
 * batching fills. Input and output copying is not timed apart from the run
 * (the plugin does both): those durations are reported as zero, once per
 * success.
 */
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

/** Monotonic nanoseconds, for Triton's statistics. */
function nowNs(): bigint {
  return BigInt(Math.round(performance.now() * 1e6));
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

function add(d: Duration, ns: bigint): void {
  d.count += 1;
  d.ns += ns;
}

/**
 * A queue over a fixed set of instances: a request waits until an instance
 * has room, as requests wait for a model instance in Triton's default
 * scheduler. An instance takes one run at a time unless its plugin says it
 * takes more (maxOutstandingRuns).
 */
class InstancePool {
  private readonly slots: { readonly instance: OpenedModel; readonly capacity: number; busy: number }[];
  private readonly waiting: ((instance: OpenedModel) => void)[] = [];

  constructor(instances: readonly OpenedModel[]) {
    this.slots = instances.map((instance) => ({ instance, capacity: Math.max(1, Math.floor(instance.maxOutstandingRuns ?? 1)), busy: 0 }));
  }

  acquire(): Promise<OpenedModel> {
    let best: (typeof this.slots)[number] | undefined;
    for (const s of this.slots) if (s.busy < s.capacity && (best === undefined || s.busy < best.busy)) best = s;
    if (best !== undefined) {
      best.busy += 1;
      return Promise.resolve(best.instance);
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Requests waiting for an instance. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  release(instance: OpenedModel): void {
    const next = this.waiting.shift();
    if (next !== undefined) {
      next(instance);
      return;
    }
    const slot = this.slots.find((s) => s.instance === instance);
    if (slot !== undefined) slot.busy -= 1;
  }
}

export class ServedModel implements RequestContract {
  readonly name: string;
  readonly version: string;
  readonly config: ModelConfig | undefined;
  readonly maxBatchSize: number;
  readonly inputs: readonly ServedTensor[];
  readonly outputs: readonly ServedTensor[];
  readonly stats: ModelStats = emptyStats();
  private stateValue: ModelState;
  private reasonValue: string;
  private readonly instances: readonly OpenedModel[];
  private readonly plugins: readonly ExecutionPlugin[];
  private readonly pool: InstancePool;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(init: {
    name: string;
    version: string;
    config: ModelConfig | undefined;
    inputs?: readonly ServedTensor[];
    outputs?: readonly ServedTensor[];
    instances?: readonly OpenedModel[];
    /** The plugins the instances run in, disposed on close. */
    plugins?: readonly ExecutionPlugin[];
    state: ModelState;
    reason?: string;
  }) {
    this.name = init.name;
    this.version = init.version;
    this.config = init.config;
    this.maxBatchSize = init.config?.max_batch_size ?? 0;
    this.inputs = init.inputs ?? [];
    this.outputs = init.outputs ?? [];
    this.instances = init.instances ?? [];
    this.plugins = init.plugins ?? [];
    this.pool = new InstancePool(this.instances);
    this.stateValue = init.state;
    this.reasonValue = init.reason ?? '';
  }

  get state(): ModelState {
    return this.stateValue;
  }

  get reason(): string {
    return this.reasonValue;
  }

  get ready(): boolean {
    return this.stateValue === 'READY';
  }

  /** Requests waiting for an instance (Triton's pending request count). */
  get pending(): number {
    return this.pool.waitingCount;
  }

  /** Marks the model unavailable (its plugin died): requests still queued fail as not ready. */
  markUnavailable(reason: string): void {
    this.stateValue = 'UNAVAILABLE';
    this.reasonValue = reason;
  }

  /**
   * Runs the plugin on one normalised request, waiting for a free instance,
   * and accounts for it in the statistics as Triton does.
   */
  async execute(tensors: ReadonlyMap<string, Tensor>, batch: number): Promise<Map<string, Tensor>> {
    const started = nowNs();
    this.inFlight += 1;
    try {
      const instance = await this.pool.acquire();
      const dequeued = nowNs();
      try {
        if (!this.ready) throw new RequestError('UNAVAILABLE', `Request for unknown model: '${this.name}' version ${this.version} is not at ready state`);
        const outputs = await instance.run(tensors);
        const done = nowNs();
        this.account(started, dequeued, done, Math.max(1, batch), true);
        return outputs;
      } catch (error) {
        this.account(started, dequeued, nowNs(), Math.max(1, batch), false);
        throw error;
      } finally {
        this.pool.release(instance);
      }
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  private account(started: bigint, dequeued: bigint, done: bigint, batch: number, ok: boolean): void {
    const s = this.stats;
    s.lastInference = Date.now();
    if (!ok) {
      add(s.fail, done - started);
      return;
    }
    add(s.success, done - started);
    add(s.queue, dequeued - started);
    add(s.computeInfer, done - dequeued);
    s.inferenceCount += batch;
    s.executionCount += 1;
    const b = s.batches.get(batch) ?? zero();
    add(b, done - dequeued);
    s.batches.set(batch, b);
  }

  /** Resolves once no request is running or queued. */
  idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.instances.map((i) => i.close()));
    await Promise.allSettled(this.plugins.map((p) => p.dispose()));
  }
}
