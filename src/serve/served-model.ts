import type { OpenedModel, Tensor } from '../run/plugin-api.js';
import type { ModelConfig } from '../triton/model-config.js';
import type { ProtocolDataType } from '../triton/protocol-datatypes.js';
import type { RequestContract } from './infer-request.js';
import { InstanceSet, type InstanceEvent, type StartedInstance } from './scheduler/instances.js';
import { ModelScheduler, type ScheduledRequest, type Scheduler } from './scheduler/model-scheduler.js';
import type { SequenceSettings } from './scheduler/sequence-controls.js';
import { SequenceScheduler } from './scheduler/sequence-scheduler.js';
import { emptyStats, type ModelStats } from './scheduler/model-stats.js';
import { batcherSettings } from './scheduler/queue-policy.js';

export type { Duration, ModelStats } from './scheduler/model-stats.js';
export { emptyStats } from './scheduler/model-stats.js';
export type { InstanceEvent } from './scheduler/instances.js';

/**
 * One model of a served repository: its state as Triton reports it
 * (READY, UNAVAILABLE with a reason), the client-facing tensors joined to
 * their PopEF anchors, its scheduler (src/serve/scheduler/) with the
 * instances it feeds, and Triton's statistics for it.
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
  /** An input the config marks `optional: true` (Triton then accepts a request without it). */
  readonly optional?: boolean;
}

export type ModelState = 'READY' | 'UNAVAILABLE';

export class ServedModel implements RequestContract {
  readonly name: string;
  readonly version: string;
  readonly config: ModelConfig | undefined;
  readonly maxBatchSize: number;
  readonly inputs: readonly ServedTensor[];
  readonly outputs: readonly ServedTensor[];
  readonly stats: ModelStats = emptyStats();
  /** How to mend what made the model UNAVAILABLE, for the log (the reason stays Triton's alone). */
  readonly hint: string | undefined;
  private stateValue: ModelState;
  private reasonValue: string;
  private readonly instances: InstanceSet;
  /** The model's queue and batcher: what the metrics read (pending, executing) and what an unload drains. */
  readonly scheduler: Scheduler;

  constructor(init: {
    name: string;
    version: string;
    config: ModelConfig | undefined;
    inputs?: readonly ServedTensor[];
    outputs?: readonly ServedTensor[];
    /** The instances, opened (one plugin each); closed with the model. */
    instances?: readonly StartedInstance[];
    /** Starts a replacement for an instance whose plugin failed. */
    startInstance?: () => Promise<StartedInstance>;
    onInstanceEvent?: (event: InstanceEvent) => void;
    /** For a model with sequence_batching: its settings, and each control's anchor (model-repository.ts checks them at load). */
    sequence?: { readonly settings: SequenceSettings; readonly anchorOf: (name: string) => string };
    state: ModelState;
    reason?: string;
    hint?: string;
  }) {
    this.name = init.name;
    this.version = init.version;
    this.config = init.config;
    this.maxBatchSize = init.config?.max_batch_size ?? 0;
    this.inputs = init.inputs ?? [];
    this.outputs = init.outputs ?? [];
    this.stateValue = init.state;
    this.reasonValue = init.reason ?? '';
    this.hint = init.hint;
    const started = init.instances ?? [];
    const first: OpenedModel | undefined = started[0]?.model;
    const layout = { inputs: first?.inputs ?? [], outputs: first?.outputs ?? [], batched: this.maxBatchSize > 0 };
    this.scheduler =
      init.sequence === undefined
        ? new ModelScheduler({
            modelName: this.name,
            modelVersion: this.version,
            batcher: this.maxBatchSize > 0 ? batcherSettings(init.config) : undefined,
            layout,
            stats: this.stats,
          })
        : new SequenceScheduler({ modelName: this.name, maxBatchSize: this.maxBatchSize, ...init.sequence, layout, stats: this.stats });
    const startInstance = init.startInstance ?? (() => Promise.reject(new Error('the model cannot start instances')));
    this.instances = new InstanceSet(started, {
      model: this.name,
      start: startInstance,
      onEvent: init.onInstanceEvent,
      onChange: () => this.scheduler.attach(this.instances),
      onAllDown: (reason) => this.markUnavailable(reason),
    });
    if (started.length > 0) this.scheduler.attach(this.instances);
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

  /** No instance can serve: the model is UNAVAILABLE with the reason, and its queued requests fail. */
  markUnavailable(reason: string): void {
    this.stateValue = 'UNAVAILABLE';
    this.reasonValue = reason;
    this.scheduler.stop(`Request for unknown model: '${this.name}' version ${this.version} is not at ready state`);
  }

  /** Queues one normalised request; resolves with its outputs (its rows only), by anchor. */
  execute(request: ScheduledRequest): Promise<ReadonlyMap<string, Tensor>> {
    return this.scheduler.enqueue(request);
  }

  /** Resolves once no request is running or queued. */
  idle(): Promise<void> {
    return this.scheduler.idle();
  }

  async close(): Promise<void> {
    this.scheduler.stop();
    this.scheduler.close();
    await this.instances.close();
  }
}
