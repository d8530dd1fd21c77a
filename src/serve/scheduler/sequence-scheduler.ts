import { uptime } from 'node:os';
import { ErrorCode, isPopefError } from '../../errors.js';
import type { Tensor } from '../../run/plugin-api.js';
import { NO_SEQUENCE } from '../infer-request.js';
import { byteLength } from '../../run/tensor.js';
import { RequestError, invalidArg } from '../status.js';
import { assembleRuns, splitOutputs, type BatchLayout } from './batch-tensors.js';
import type { Instance, InstanceSet, StartedInstance } from './instances.js';
import { defaultSchedulerSettings, runAll, STOPPING, type ScheduledRequest, type Scheduler } from './model-scheduler.js';
import { recordExecution, recordFailure, recordSuccess, type ModelStats } from './model-stats.js';
import { chooseBatch } from './dynamic-batcher.js';
import { monotonicNs, PriorityQueue, type BatcherSettings } from './queue-policy.js';
import { controlTensors, NOT_READY, type CorrelationId, type SequenceSettings } from './sequence-controls.js';
import { Candidate, directBatch, idText, keyOf, Slot, type Backlog, type Job } from './sequence-slots.js';

/**
 * Triton's sequence batcher (core r24.10, sequence_batch_scheduler.cc,
 * SequenceBatchScheduler, DirectSequenceBatch and OldestSequenceBatch):
 * each instance has slots (max(1, max_batch_size), or the oldest
 * strategy's max_candidate_sequences); a sequence's START binds it to a
 * free slot (the lowest-numbered first), and all its requests go to that
 * slot, in order, one at a time. An instance executes one batch at a time.
 * Direct: the batch is the first waiting request of each of its slots up to
 * the highest slot with one; a slot in between with nothing waiting sends a
 * not-ready row (zeros, READY false) so that the others keep their places.
 * Oldest: each slot's next request goes to the instance's dynamic batcher
 * once the previous one is done, and the batcher forms the batches
 * (dynamic-batcher.ts). A START finding no free slot waits in the
 * backlog, with the rest of its sequence, until a slot is released: by the
 * sequence's END (when that request joins a batch), or by the reaper, once
 * the sequence has sent nothing for max_sequence_idle_microseconds.
 *
 * Checks Triton makes as the request is enqueued (before any statistics)
 * throw synchronously; failures after that reject the promise and count
 * as failures, as in Triton.
 */

export interface SequenceSchedulerOptions {
  readonly modelName: string;
  readonly maxBatchSize: number;
  readonly settings: SequenceSettings;
  /** A control's anchor, from its config name (name_map.json). */
  readonly anchorOf: (name: string) => string;
  readonly layout: BatchLayout;
  readonly stats: ModelStats;
}

/** Empties the slot's queue: the requests in it (the reaper's marks dropped). */
function takeJobs(slot: Slot): Job[] {
  return slot.queue.splice(0).filter((e): e is Job => e !== 'released');
}

export class SequenceScheduler implements Scheduler {
  private readonly options: SequenceSchedulerOptions;
  private instances: InstanceSet | undefined;
  /** Per instance, its slots. */
  private slots: Slot[][] = [];
  /** Sequence key -> its slot or its backlog. */
  private readonly bySequence = new Map<string, Slot | Backlog>();
  private readonly backlogs: Backlog[] = [];
  /** Sequence key -> when its last request arrived (ns), for the reaper. */
  private readonly lastSeen = new Map<string, number>();
  private reaper: NodeJS.Timeout | undefined;
  private reaperAtNs = 0;
  private delayTimer: NodeJS.Timeout | undefined;
  private running = 0;
  private stopped: string | undefined;
  private draining = false;
  private idleWaiters: (() => void)[] = [];

  /** Oldest strategy: each instance's dynamic batcher (its queue, and the settings it batches by). */
  private readonly batchers: PriorityQueue<Candidate>[] = [];
  private readonly batching: BatcherSettings | undefined;
  /** The CORRID control, found once: every request's id is checked against it. */
  private readonly corrid: SequenceSettings['controls'][number] | undefined;

  constructor(options: SequenceSchedulerOptions) {
    this.options = options;
    this.corrid = options.settings.controls.find((c) => c.kind === 'CONTROL_SEQUENCE_CORRID');
    const oldest = options.settings.oldest;
    this.batching =
      oldest === undefined
        ? undefined
        : {
            ...defaultSchedulerSettings(),
            maxBatchSize: Math.max(1, options.maxBatchSize),
            preferredBatchSizes: oldest.preferredBatchSizes,
            maxQueueDelayUs: oldest.maxQueueDelayUs,
          };
  }

  attach(instances: InstanceSet): void {
    this.instances = instances;
    const perInstance = this.options.settings.oldest?.candidates ?? Math.max(1, this.options.maxBatchSize);
    while (this.slots.length < instances.size) {
      const i = this.slots.length;
      this.slots.push(Array.from({ length: perInstance }, (_, s) => new Slot(i, s)));
      if (this.batching !== undefined) this.batchers.push(new PriorityQueue<Candidate>(this.batching));
    }
    this.pump();
  }

  get pending(): number {
    let n = 0;
    for (const slots of this.slots) for (const slot of slots) for (const e of slot.queue) if (e !== 'released') n += 1;
    for (const b of this.backlogs) n += b.jobs.length;
    for (const q of this.batchers) n += q.size;
    return n;
  }

  get executing(): number {
    return this.running;
  }

  enqueue(request: ScheduledRequest): Promise<ReadonlyMap<string, Tensor>> {
    const model = this.options.modelName;
    const sequence = request.sequence ?? NO_SEQUENCE;
    if (this.stopped !== undefined)
      throw new RequestError('UNAVAILABLE', this.stopped === STOPPING ? `${request.logPrefix}${STOPPING}` : this.stopped);
    // SequenceBatchScheduler::Enqueue, in its order.
    if (request.batch > 1)
      throw invalidArg(`inference request to model '${model}' must specify batch-size 1 due to requirements of sequence batcher`);
    if (sequence.id === 0n || sequence.id === '')
      throw invalidArg(`inference request to model '${model}' must specify a non-zero or non-empty correlation ID`);
    if (this.draining && sequence.start) throw new RequestError('UNAVAILABLE', STOPPING);
    const key = keyOf(sequence.id);
    const target = this.bySequence.get(key);
    if (!sequence.start && target === undefined)
      throw invalidArg(
        `inference request for sequence ${idText(sequence.id)} to model '${model}' must specify the START flag on the first request of the sequence`,
      );
    this.checkIdType(sequence.id, request.logPrefix);
    return new Promise((resolve, reject) => {
      const job: Job = { request, sequence, enqueuedNs: monotonicNs(), resolve, reject };
      this.lastSeen.set(key, job.enqueuedNs);
      this.place(key, job, target);
      const signal = request.signal;
      // A client that goes away takes its sequence out at the next look at its slot (Triton: a cancelled request ends its sequence).
      if (signal !== undefined && !signal.aborted) signal.addEventListener('abort', () => this.pump(), { once: true });
      this.pump();
      this.armReaper();
    });
  }

  /**
   * A CORRID control of a numeric type cannot carry a string id (Triton
   * copies the string's bytes into the control's 4 or 8 bytes; popef serve
   * refuses rather than send the plugin a cut id).
   */
  private checkIdType(id: CorrelationId, prefix: string): void {
    const control = this.corrid;
    if (control !== undefined && typeof id === 'string')
      throw invalidArg(
        `${prefix}correlation ID in request is a string, but the CONTROL_SEQUENCE_CORRID control '${control.name}' of model '${this.options.modelName}' takes an integer`,
      );
  }

  /** Enqueue's placement: the sequence's slot, its backlog, a free slot, or a new backlog. */
  private place(key: string, job: Job, target: Slot | Backlog | undefined): void {
    const end = job.sequence.end;
    if (target instanceof Slot) {
      target.queue.push(job);
      if (end) this.bySequence.delete(key);
      return;
    }
    if (target !== undefined) {
      target.jobs.push(job);
      this.noteExpiry(target, job);
      if (end) this.bySequence.delete(key);
      return;
    }
    const free = this.freeSlot();
    if (free !== undefined) {
      free.bound = key;
      free.queue.push(job);
      if (!end) this.bySequence.set(key, free);
      return;
    }
    const backlog: Backlog = { key, jobs: [job], expiresNs: 0 };
    this.noteExpiry(backlog, job);
    this.backlogs.push(backlog);
    if (!end) this.bySequence.set(key, backlog);
  }

  private noteExpiry(backlog: Backlog, job: Job): void {
    const timeout = job.request.timeoutUs ?? 0;
    if (timeout === 0) return;
    // Triton adds the timeout to now_us (steady_clock: microseconds since boot) in uint64: a sum past 2^64 wraps to a
    // time already gone, so the backlog expires at once (a timeout of 2^64 - 1 is no wait at all). Only a timeout past
    // 2^63 can wrap. The boot clock is read to the system's uptime (hundredths of a second): the boundary moves by a
    // microsecond each microsecond, so no client can aim at it more closely than that.
    const wraps = timeout >= 2 ** 63 && uptime() * 1e6 + timeout >= 2 ** 64;
    const at = wraps ? job.enqueuedNs : job.enqueuedNs + timeout * 1000;
    backlog.expiresNs = backlog.expiresNs === 0 ? at : Math.min(backlog.expiresNs, at);
  }

  /** The free slot of lowest number (Triton's ready-slot queue), on an instance that serves. */
  private freeSlot(): Slot | undefined {
    let best: Slot | undefined;
    for (const slots of this.slots)
      for (const slot of slots)
        if (slot.bound === undefined && slot.queue.length === 0 && this.serves(slot) && (best === undefined || slot.index < best.index)) best = slot;
    return best;
  }

  /**
   * Whether the slot's instance serves, or will after its restart: a
   * given-up instance's slots take no new sequence (as Triton erases the
   * slots of a removed instance).
   */
  private serves(slot: Slot): boolean {
    return this.instances?.list[slot.instance]?.state !== 'given-up';
  }

  /** ReleaseSequenceSlot: the slot takes the oldest backlogged sequence, or becomes free. */
  private release(slot: Slot): void {
    if (slot.bound !== undefined && this.bySequence.get(slot.bound) === slot) {
      this.bySequence.delete(slot.bound);
      this.lastSeen.delete(slot.bound);
    }
    slot.bound = undefined;
    // What is left in the slot after its sequence ended was cancelled with it.
    this.fail(takeJobs(slot), new RequestError('CANCELLED', 'Request was cancelled'));
    while (this.backlogs.length > 0 && this.serves(slot)) {
      const backlog = this.backlogs.shift() as Backlog;
      if (backlog.jobs.some((j) => j.request.signal?.aborted === true)) {
        if (this.bySequence.get(backlog.key) === backlog) this.bySequence.delete(backlog.key);
        this.fail(backlog.jobs, new RequestError('CANCELLED', 'Request was cancelled'));
        continue;
      }
      slot.bound = backlog.key;
      slot.queue.push(...backlog.jobs);
      if (this.bySequence.get(backlog.key) === backlog) this.bySequence.set(backlog.key, slot);
      return;
    }
  }

  /** Counts the jobs as failures and rejects them with the error (a RequestError of the scheduler's, or the plugin's own). */
  private fail(jobs: readonly Job[], error: unknown): void {
    const now = monotonicNs();
    for (const job of jobs) {
      recordFailure(this.options.stats, job.enqueuedNs, now);
      job.reject(error);
    }
  }

  /** Releases the slots whose sequence went idle or was cancelled, then starts a batch on each free instance. */
  private pump(): void {
    if (this.delayTimer !== undefined) clearTimeout(this.delayTimer);
    this.delayTimer = undefined;
    const instances = this.instances?.list ?? [];
    for (const slots of this.slots)
      for (const slot of slots) {
        // A slot with a request in flight looks at its queue when that request is done (CompleteAndNext).
        if (slot.inFlight) continue;
        const front = slot.queue[0];
        if (front === 'released') {
          slot.queue.shift();
          this.release(slot);
        } else if (front?.request.signal?.aborted === true) this.release(slot);
        if (this.batching !== undefined) this.dispatch(slot);
      }
    this.expireBacklogs(monotonicNs());
    instances.forEach((instance, i) => {
      const current = instance.current;
      if (instance.state !== 'ready' || instance.busy > 0 || current === undefined) return;
      if (this.batching === undefined) {
        const batch = this.formBatch(this.slots[i] ?? []);
        if (batch !== undefined) void this.execute(instance, current, batch);
        return;
      }
      const taken = this.oldestBatch(i);
      // Each slot may send its next request once this one is done.
      if (taken !== undefined)
        void this.execute(
          instance,
          current,
          taken.map((c) => c.job),
          () => {
            for (const c of taken) c.slot.inFlight = false;
          },
        );
    });
    this.notifyIdle();
  }

  /** The direct strategy's batch for an instance's slots (sequence-slots.ts), or a wake-up when its queue delay holds it back. */
  private formBatch(slots: readonly Slot[]): (Job | undefined)[] | undefined {
    const choice = directBatch(slots, this.options.settings, this.options.maxBatchSize, monotonicNs());
    if (choice === undefined) return undefined;
    if ('waitNs' in choice) {
      this.delayTimer ??= setTimeout(() => this.pump(), choice.waitNs / 1e6 + 1);
      return undefined;
    }
    // An END's slot is released as it joins the batch: the next sequence may take it in the next batch.
    for (const slot of choice.ended) this.release(slot);
    return choice.rows;
  }

  /**
   * Oldest strategy: the slot's next request goes to its instance's dynamic
   * batcher, unless one of its requests is already there or running; an
   * END releases the slot as it goes (the next sequence's requests wait
   * until it is done).
   */
  private dispatch(slot: Slot): void {
    const front = slot.queue[0];
    if (slot.inFlight || front === undefined || front === 'released') return;
    slot.queue.shift();
    slot.inFlight = true;
    this.batchers[slot.instance]?.enqueue(0, new Candidate(front, slot));
    if (front.sequence.end) this.release(slot);
  }

  /** Oldest strategy: the dynamic batcher's choice for a free instance (dynamic-batcher.ts), or a wake-up when it waits. */
  private oldestBatch(instance: number): Candidate[] | undefined {
    const queue = this.batchers[instance];
    if (queue === undefined || this.batching === undefined || queue.size === 0) return undefined;
    const choice = chooseBatch(queue, this.batching, monotonicNs());
    if ('waitUs' in choice) {
      this.delayTimer ??= setTimeout(() => this.pump(), choice.waitUs / 1000);
      return undefined;
    }
    if (choice.take === 0) return undefined;
    return queue.take(choice.take);
  }

  /** The plugin's tensors for one row of the batch: the request's own and its controls, or zeros and not-ready controls. */
  private rowTensors(job: Job | undefined): ReadonlyMap<string, Tensor> {
    const { settings, anchorOf, layout } = this.options;
    const batched = layout.batched;
    if (job === undefined) {
      const row = controlTensors(settings.controls, anchorOf, NOT_READY, 0n, batched);
      // Every other input is one row of zeros (Triton's null request: its data means nothing when READY is false).
      for (const spec of layout.inputs) {
        if (row.has(spec.name)) continue;
        const shape = [1, ...spec.shape.slice(1)];
        row.set(spec.name, { name: spec.name, dtype: spec.dtype, shape, data: new Uint8Array(byteLength({ dtype: spec.dtype, shape })) });
      }
      return row;
    }
    const { start, end, id } = job.sequence;
    const controls = controlTensors(settings.controls, anchorOf, { start, end, ready: true }, typeof id === 'bigint' ? id : 0n, batched);
    if (controls.size === 0) return job.request.tensors;
    return new Map([...job.request.tensors, ...controls]);
  }

  /**
   * Runs the batch on the instance's current plugin model (pump hands it over
   * from the instance it found ready); `done` is called once it has been
   * answered, before the next look at the queues.
   */
  private async execute(instance: Instance, current: StartedInstance, batch: readonly (Job | undefined)[], done?: () => void): Promise<void> {
    const jobs = batch.filter((j): j is Job => j !== undefined);
    instance.busy += 1;
    this.running += 1;
    const rows = batch.map(() => 1);
    const computeStart = monotonicNs();
    try {
      const runs = assembleRuns(
        this.options.layout,
        batch.map((j) => this.rowTensors(j)),
        rows,
      );
      const results = await runAll(current.model, runs, instance.capacity);
      const computeEnd = monotonicNs();
      const outputs = splitOutputs(this.options.layout, results, rows);
      recordExecution(this.options.stats, batch.length, computeStart, computeEnd);
      batch.forEach((job, i) => {
        if (job === undefined) return;
        recordSuccess(this.options.stats, 1, job.enqueuedNs, computeStart, computeEnd);
        job.resolve(outputs[i] ?? new Map<string, Tensor>());
      });
    } catch (error) {
      if (isPopefError(error) && (error.code === ErrorCode.Plugin || error.code === ErrorCode.Timeout)) this.instances?.fail(instance, error.message);
      this.fail(jobs, error);
    } finally {
      instance.busy -= 1;
      this.running -= 1;
      done?.();
      this.pump();
    }
  }

  /** Backlogged sequences past a request's `timeout` are refused, as Triton's reaper refuses them. */
  private expireBacklogs(now: number): void {
    for (let i = this.backlogs.length - 1; i >= 0; i--) {
      const backlog = this.backlogs[i] as Backlog;
      if (backlog.expiresNs === 0 || backlog.expiresNs > now) continue;
      this.backlogs.splice(i, 1);
      if (this.bySequence.get(backlog.key) === backlog) this.bySequence.delete(backlog.key);
      this.fail(backlog.jobs, new RequestError('UNAVAILABLE', 'timeout of the corresponding sequence has been expired'));
    }
  }

  /**
   * The reaper: a sequence bound to a slot that has sent nothing for
   * max_sequence_idle_microseconds is released (its slot gets the mark, so
   * that what it already queued runs first); one still in the backlog is
   * looked at again later.
   */
  private reap(): void {
    this.reaper = undefined;
    const now = monotonicNs();
    const idleNs = this.options.settings.idleUs * 1000;
    for (const [key, seen] of this.lastSeen) {
      if (now - seen < idleNs) continue;
      const target = this.bySequence.get(key);
      if (target instanceof Slot) {
        this.bySequence.delete(key);
        this.lastSeen.delete(key);
        target.queue.push('released');
      } else if (target === undefined) this.lastSeen.delete(key);
    }
    this.pump();
    this.armReaper();
  }

  /** Sets the reaper for the earliest idle deadline or backlog expiry, when that is sooner than its current wake-up. */
  private armReaper(): void {
    if (this.stopped !== undefined) return;
    const now = monotonicNs();
    const idleNs = this.options.settings.idleUs * 1000;
    let next = Infinity;
    // A backlogged sequence is not released when idle: looked at again every 50 ms, as Triton's reaper does.
    for (const [key, seen] of this.lastSeen)
      next = Math.min(next, this.bySequence.get(key) instanceof Slot ? seen + idleNs : Math.max(seen + idleNs, now + 50e6));
    for (const b of this.backlogs) if (b.expiresNs !== 0) next = Math.min(next, b.expiresNs);
    if (next === Infinity || (this.reaper !== undefined && this.reaperAtNs <= next)) return;
    if (this.reaper !== undefined) clearTimeout(this.reaper);
    this.reaperAtNs = next;
    this.reaper = setTimeout(() => this.reap(), Math.max(0, (next - now) / 1e6) + 1);
    // Only a waiting request keeps the process alive for it: releasing idle slots alone need not.
    if (this.backlogs.length === 0) this.reaper.unref();
  }

  stop(message = STOPPING): void {
    this.stopped ??= message;
    const error = new RequestError('UNAVAILABLE', message);
    for (const slots of this.slots)
      for (const slot of slots) {
        this.fail(takeJobs(slot), error);
        slot.bound = undefined;
      }
    for (const b of this.backlogs.splice(0)) this.fail(b.jobs, error);
    for (const q of this.batchers)
      this.fail(
        q.drain().map((c) => c.job),
        error,
      );
    this.bySequence.clear();
    this.lastSeen.clear();
    this.notifyIdle();
  }

  /** New sequences are refused; resolves once what is queued and running has been answered. */
  async drain(): Promise<void> {
    this.draining = true;
    await this.idle();
  }

  idle(): Promise<void> {
    if (this.pending === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private notifyIdle(): void {
    // pending walks every slot, backlog and batcher queue: counted only when someone waits (pump calls this for every request and answer).
    if (this.idleWaiters.length === 0) return;
    if (this.pending === 0 && this.running === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  close(): void {
    for (const timer of [this.reaper, this.delayTimer]) if (timer !== undefined) clearTimeout(timer);
    this.reaper = undefined;
    this.delayTimer = undefined;
  }
}
