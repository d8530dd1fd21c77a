import { ErrorCode, isPopefError } from '../../errors.js';
import type { OpenedModel, Tensor } from '../../run/plugin-api.js';
import { RequestError } from '../status.js';
import type { Cancellation } from '../cancellation.js';
import type { SequenceParameters } from '../infer-request.js';
import { assembleRuns, splitOutputs, type BatchLayout } from './batch-tensors.js';
import { chooseBatch } from './dynamic-batcher.js';
import type { Instance, InstanceSet } from './instances.js';
import { monotonicNs, priorityOf, PriorityQueue, type BatcherSettings, type Queued } from './queue-policy.js';
import { recordExecution, recordFailure, recordSuccess, type ModelStats } from './model-stats.js';

/**
 * One model's scheduler: the queue its requests wait in and the loop that
 * hands them to free instances. With dynamic_batching it is Triton's
 * dynamic batcher (dynamic-batcher.ts, queue-policy.ts); without, Triton's
 * default scheduler: requests in arrival order, one per execution, any
 * free instance taking the next.
 *
 * A request leaves the queue without running when its client has gone
 * (its signal aborted: a cancelled or expired gRPC call, a closed HTTP
 * connection), when its queue policy rejects it, or when the model stops
 * serving; each such request counts as a failure in the statistics, as
 * Triton counts it.
 */

/** DynamicBatchScheduler::Enqueue's answer once the scheduler has stopped. */
export const STOPPING = 'Server is stopping, scheduler for model has stopped accepting new inference requests';

export interface ScheduledRequest {
  /** Rows of the batch dimension (0 for a model without one). */
  readonly batch: number;
  /** By anchor; `batch` rows each when the model batches. */
  readonly tensors: ReadonlyMap<string, Tensor>;
  /** The request's `priority` parameter (0: the default level). */
  readonly priority?: number;
  /** The request's `timeout` parameter, in microseconds (0: none). */
  readonly timeoutUs?: number;
  readonly signal?: Cancellation;
  /** Its sequence parameters (read by the sequence batcher only, as in Triton). */
  readonly sequence?: SequenceParameters;
  /** "[request id: …] " */
  readonly logPrefix: string;
}

/** A request in the scheduler: a class, so that its checks are methods rather than closures made per request. */
class Job implements Queued {
  readonly rows: number;
  readonly timeoutUs: number;
  readonly logPrefix: string;
  /** Set once it has left the queue (to run, or failed). */
  left = false;
  /** Removes its abort listener, when it had to wait with one. */
  unlisten: (() => void) | undefined;

  constructor(
    readonly request: ScheduledRequest,
    readonly level: number,
    readonly enqueuedNs: number,
    readonly resolve: (outputs: ReadonlyMap<string, Tensor>) => void,
    private readonly rejectWith: (error: Error) => void,
  ) {
    this.rows = Math.max(1, request.batch);
    this.timeoutUs = request.timeoutUs ?? 0;
    this.logPrefix = request.logPrefix;
  }

  cancelled(): boolean {
    return this.request.signal?.aborted === true;
  }

  reject(error: unknown): void {
    this.rejectWith(error instanceof Error ? error : new Error(String(error)));
  }
}

/** The job leaves the queue: its abort listener, if it waited with one, goes. */
function leave(job: Job): void {
  if (job.left) return;
  job.left = true;
  job.unlisten?.();
  job.unlisten = undefined;
}

/** Triton's default scheduler, in batcher terms: first come first served, one request per execution, no queue policy. */
export function defaultSchedulerSettings(): BatcherSettings {
  const policy = { timeoutAction: 'REJECT', defaultTimeoutUs: 0, allowTimeoutOverride: false, maxQueueSize: 0 } as const;
  return {
    maxBatchSize: 1,
    preferredBatchSizes: [],
    maxQueueDelayUs: 0,
    preserveOrdering: false,
    priorityLevels: 0,
    defaultPriorityLevel: 0,
    defaultPolicy: policy,
    priorityPolicies: new Map(),
  };
}

export interface SchedulerOptions {
  readonly modelName: string;
  readonly modelVersion: string;
  /** undefined: Triton's default scheduler. */
  readonly batcher: BatcherSettings | undefined;
  readonly layout: BatchLayout;
  readonly stats: ModelStats;
}

/** What a served model asks of its scheduler, whichever Triton scheduler it is (this one, or sequence-scheduler.ts). */
export interface Scheduler {
  /** The instances to feed (set again when one restarts). */
  attach(instances: InstanceSet): void;
  /** Requests waiting. */
  readonly pending: number;
  /** Batches being executed. */
  readonly executing: number;
  enqueue(request: ScheduledRequest): Promise<ReadonlyMap<string, Tensor>>;
  stop(message?: string): void;
  drain(): Promise<void>;
  idle(): Promise<void>;
  close(): void;
}

/** The runs of one batch, as many at once as the plugin takes; results in run order. */
export async function runAll(model: OpenedModel, runs: readonly ReadonlyMap<string, Tensor>[], capacity: number): Promise<Map<string, Tensor>[]> {
  if (runs.length === 1 && runs[0] !== undefined) return [await model.run(runs[0])];
  const results: Map<string, Tensor>[] = new Array<Map<string, Tensor>>(runs.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < runs.length) {
      const i = next++;
      results[i] = await model.run(runs[i] as ReadonlyMap<string, Tensor>);
    }
  };
  await Promise.all(Array.from({ length: Math.min(capacity, runs.length) }, lane));
  return results;
}

export class ModelScheduler implements Scheduler {
  private readonly settings: BatcherSettings;
  private readonly queue: PriorityQueue<Job>;
  private readonly options: SchedulerOptions;
  private instances: InstanceSet | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running = 0;
  private stopped: string | undefined;
  private idleWaiters: (() => void)[] = [];
  /** preserve_ordering: the batches' jobs in the order they left the queue, answered in that order. */
  private readonly inOrder: { job: Job; outcome?: { ok: true; value: ReadonlyMap<string, Tensor> } | { ok: false; error: unknown } }[] = [];

  constructor(options: SchedulerOptions) {
    this.options = options;
    this.settings = options.batcher ?? defaultSchedulerSettings();
    this.queue = new PriorityQueue<Job>(this.settings);
  }

  /** The instances to feed (set once they are opened). */
  attach(instances: InstanceSet): void {
    this.instances = instances;
    this.pump();
  }

  /** Requests waiting in the queue. */
  get pending(): number {
    return this.queue.size;
  }

  /** Batches being executed. */
  get executing(): number {
    return this.running;
  }

  enqueue(request: ScheduledRequest): Promise<ReadonlyMap<string, Tensor>> {
    if (this.stopped !== undefined)
      return Promise.reject(new RequestError('UNAVAILABLE', this.stopped === STOPPING ? `${request.logPrefix}${STOPPING}` : this.stopped));
    const started = monotonicNs();
    const level = this.options.batcher === undefined ? 0 : priorityOf(this.settings, request.priority ?? 0);
    return new Promise((resolve, reject) => {
      const signal = request.signal;
      const job = new Job(request, level, started, resolve, reject);
      if (signal?.aborted === true) {
        this.fail([job], new RequestError('CANCELLED', `${request.logPrefix}Request was cancelled`));
        return;
      }
      this.queue.enqueue(job.level, job);
      this.pump();
      // A client that goes away takes its request out of the queue at once (Triton drops it when its cursor passes).
      // Most requests leave the queue in the pump above: only one still waiting needs to hear of its client.
      if (signal !== undefined && !job.left) {
        const onAbort = (): void => this.pump();
        signal.addEventListener('abort', onAbort, { once: true });
        job.unlisten = () => signal.removeEventListener('abort', onAbort);
      }
    });
  }

  private fail(jobs: readonly Job[], error: RequestError): void {
    const now = monotonicNs();
    for (const job of jobs) {
      leave(job);
      recordFailure(this.options.stats, job.enqueuedNs, now);
      job.reject(error);
    }
  }

  /** Forms batches while an instance is free, or sets a timer for the batcher's wait. */
  private pump(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const now = monotonicNs();
    const skipped = this.queue.sweep(now);
    // An Error records a stack when made: made only for requests that leave (pump runs for every request and answer).
    if (skipped.rejected.length > 0) this.fail(skipped.rejected, new RequestError('UNAVAILABLE', 'Request timeout expired'));
    if (skipped.cancelled.length > 0) this.fail(skipped.cancelled, new RequestError('CANCELLED', 'Request was cancelled'));
    const instances = this.instances;
    if (instances === undefined) return;
    for (;;) {
      if (this.queue.size === 0) break;
      const instance = instances.free(this.options.batcher !== undefined);
      if (instance === undefined) {
        // Busy: expired requests must still leave on time (Triton checks them while it waits for a slot).
        this.armTimeoutCheck(now);
        break;
      }
      const choice = chooseBatch(this.queue, this.settings, now);
      if ('waitUs' in choice) {
        this.timer = setTimeout(() => this.pump(), choice.waitUs / 1000);
        break;
      }
      if (choice.take === 0) break;
      void this.execute(instance, this.queue.take(choice.take));
    }
    this.notifyIdle();
  }

  private armTimeoutCheck(now: number): void {
    if (!this.queue.canExpire) return;
    let closest = 0;
    for (const { expiresNs } of this.queue.inOrder()) if (expiresNs !== 0 && (closest === 0 || expiresNs < closest)) closest = expiresNs;
    if (closest !== 0) this.timer = setTimeout(() => this.pump(), Math.max(0, (closest - now) / 1e6) + 1);
  }

  private async execute(instance: Instance, jobs: Job[]): Promise<void> {
    for (const job of jobs) leave(job);
    const current = instance.current;
    if (current === undefined) return;
    instance.busy += 1;
    this.running += 1;
    const ordered = this.settings.preserveOrdering ? jobs.map((job): (typeof this.inOrder)[number] => ({ job })) : undefined;
    if (ordered !== undefined) this.inOrder.push(...ordered);
    const rows = jobs.map((j) => j.request.batch);
    const computeStart = monotonicNs();
    try {
      const runs = assembleRuns(
        this.options.layout,
        jobs.map((j) => j.request.tensors),
        rows,
      );
      const results = await runAll(current.model, runs, instance.capacity);
      const computeEnd = monotonicNs();
      const outputs = splitOutputs(this.options.layout, results, rows);
      recordExecution(
        this.options.stats,
        jobs.reduce((n, j) => n + j.rows, 0),
        computeStart,
        computeEnd,
      );
      jobs.forEach((job, i) => {
        recordSuccess(this.options.stats, job.rows, job.enqueuedNs, computeStart, computeEnd);
        this.settle(job, ordered?.[i], { ok: true, value: outputs[i] ?? new Map<string, Tensor>() });
      });
    } catch (error) {
      const now = monotonicNs();
      // A plugin that failed or stopped answering is replaced; the requests of this batch get the error.
      if (isPopefError(error) && (error.code === ErrorCode.Plugin || error.code === ErrorCode.Timeout)) this.instances?.fail(instance, error.message);
      jobs.forEach((job, i) => {
        recordFailure(this.options.stats, job.enqueuedNs, now);
        this.settle(job, ordered?.[i], { ok: false, error });
      });
    } finally {
      instance.busy -= 1;
      this.running -= 1;
      this.pump();
    }
  }

  private settle(job: Job, slot: (typeof this.inOrder)[number] | undefined, outcome: NonNullable<(typeof this.inOrder)[number]['outcome']>): void {
    if (slot === undefined) {
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.error);
      return;
    }
    slot.outcome = outcome;
    // Answer, in the order the requests left the queue, every request whose batch (and all before it) has finished.
    while (this.inOrder[0]?.outcome !== undefined) {
      const done = this.inOrder.shift() as Required<(typeof this.inOrder)[number]>;
      if (done.outcome.ok) done.job.resolve(done.outcome.value);
      else done.job.reject(done.outcome.error);
    }
  }

  /** Stops at once: queued requests fail (UNAVAILABLE) with this message, as do new ones. */
  stop(message = STOPPING): void {
    this.stopped ??= message;
    this.fail(this.queue.drain(), new RequestError('UNAVAILABLE', message));
  }

  /** Refuses new requests; resolves once the queued and running ones have been answered. */
  async drain(): Promise<void> {
    this.stopped ??= STOPPING;
    await this.idle();
  }

  /** Resolves once nothing is queued or running. */
  idle(): Promise<void> {
    if (this.queue.size === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private notifyIdle(): void {
    if (this.queue.size === 0 && this.running === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
