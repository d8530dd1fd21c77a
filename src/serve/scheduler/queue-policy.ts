import type { ModelConfig } from '../../triton/model-config.js';
import { RequestError } from '../status.js';

/**
 * The dynamic batcher's settings and its priority queue, as Triton core
 * keeps them (r24.10: src/dynamic_batch_scheduler.cc and the PriorityQueue
 * of src/scheduler_utils.cc): one queue per priority level, each under its
 * level's queue policy (max_queue_size, a default timeout a request may
 * shorten, and whether an expired request is rejected or moved behind the
 * unexpired ones).
 */

export interface QueuePolicy {
  readonly timeoutAction: 'REJECT' | 'DELAY';
  readonly defaultTimeoutUs: number;
  readonly allowTimeoutOverride: boolean;
  /** 0: unbounded. */
  readonly maxQueueSize: number;
}

export interface BatcherSettings {
  /** max(1, max_batch_size), as the batcher uses it. */
  readonly maxBatchSize: number;
  /** Sorted ascending; when the config lists none, [max_batch_size] (NormalizeModelConfig). */
  readonly preferredBatchSizes: readonly number[];
  readonly maxQueueDelayUs: number;
  readonly preserveOrdering: boolean;
  readonly priorityLevels: number;
  readonly defaultPriorityLevel: number;
  readonly defaultPolicy: QueuePolicy;
  readonly priorityPolicies: ReadonlyMap<number, QueuePolicy>;
}

function num(value: number | bigint | undefined): number {
  return value === undefined ? 0 : Number(value);
}

function policyOf(p: NonNullable<NonNullable<ModelConfig['dynamic_batching']>['default_queue_policy']> | undefined): QueuePolicy {
  return {
    timeoutAction: p?.timeout_action === 'DELAY' || p?.timeout_action === 1 ? 'DELAY' : 'REJECT',
    defaultTimeoutUs: num(p?.default_timeout_microseconds),
    allowTimeoutOverride: p?.allow_timeout_override === true,
    maxQueueSize: num(p?.max_queue_size),
  };
}

/** The batcher's settings for a config with dynamic_batching; undefined for Triton's default scheduler. */
export function batcherSettings(config: ModelConfig | undefined): BatcherSettings | undefined {
  const d = config?.dynamic_batching;
  if (d === undefined) return undefined;
  const max = num(config?.max_batch_size);
  const preferred = [...new Set((d.preferred_batch_size ?? []).map(Number))].sort((a, b) => a - b);
  if (preferred.length === 0 && max > 0) preferred.push(max);
  const priorityPolicies = new Map<number, QueuePolicy>();
  for (const entry of d.priority_queue_policy ?? []) priorityPolicies.set(num(entry.key), policyOf(entry.value));
  return {
    maxBatchSize: Math.max(1, max),
    preferredBatchSizes: preferred,
    maxQueueDelayUs: num(d.max_queue_delay_microseconds),
    preserveOrdering: d.preserve_ordering === true,
    priorityLevels: num(d.priority_levels),
    defaultPriorityLevel: num(d.default_priority_level),
    defaultPolicy: policyOf(d.default_queue_policy),
    priorityPolicies,
  };
}

/** InferenceRequest::SetPriority: 0, or a level above priority_levels, means the default level. */
export function priorityOf(settings: BatcherSettings, requested: number): number {
  return requested === 0 || requested > settings.priorityLevels ? settings.defaultPriorityLevel : requested;
}

/** What the queue needs of a waiting request. */
export interface Queued {
  /** Rows, at least 1 (Triton counts a request without a batch dimension as one). */
  readonly rows: number;
  /** The request's own timeout (its `timeout` parameter), 0 when none. */
  readonly timeoutUs: number;
  /** Monotonic ns when it entered the batcher. */
  readonly enqueuedNs: number;
  readonly cancelled: () => boolean;
  /** "[request id: …] ", as Triton's messages start. */
  readonly logPrefix: string;
}

interface Waiting<T extends Queued> {
  readonly item: T;
  /** Monotonic ns after which the policy applies; 0: never. */
  readonly expiresNs: number;
}

class PolicyQueue<T extends Queued> {
  readonly waiting: Waiting<T>[] = [];
  /** Expired requests of a DELAY policy: behind every unexpired one, never expiring again. */
  readonly delayed: T[] = [];
  constructor(readonly policy: QueuePolicy) {}

  get size(): number {
    return this.waiting.length + this.delayed.length;
  }
}

export interface Skipped<T> {
  readonly rejected: readonly T[];
  readonly cancelled: readonly T[];
}

/** What a sweep that finds nothing to skip returns (most do: one runs for every request and every answer). */
const NOTHING_SKIPPED: Skipped<never> = { rejected: [], cancelled: [] };

/** Monotonic nanoseconds (as a double: exact to well below a microsecond for months). */
export function monotonicNs(): number {
  return performance.now() * 1e6;
}

/** Whether a waiting request's queue timeout has passed (0: it has none). */
function expired(w: Waiting<Queued>, now: number): boolean {
  return w.expiresNs !== 0 && now > w.expiresNs;
}

/** Whether a sweep takes anything out of this level: a cancelled request, or an expired one still waiting. */
function leavesAny<T extends Queued>(queue: PolicyQueue<T>, now: number): boolean {
  for (const w of queue.waiting) if (w.item.cancelled() || expired(w, now)) return true;
  for (const item of queue.delayed) if (item.cancelled()) return true;
  return false;
}

export class PriorityQueue<T extends Queued> {
  private readonly levels = new Map<number, PolicyQueue<T>>();
  /** The levels, highest priority (lowest number) first: sorted when a level is added, not at every look. */
  private sorted: PolicyQueue<T>[] = [];
  private readonly settings: BatcherSettings;
  /**
   * Whether a request can ever expire: only under a policy with a default timeout (a request's own timeout
   * may only shorten it). Without one, nothing in the queue has a deadline to look for.
   */
  readonly canExpire: boolean;

  constructor(settings: BatcherSettings) {
    this.settings = settings;
    this.canExpire = [settings.defaultPolicy, ...settings.priorityPolicies.values()].some((p) => p.defaultTimeoutUs !== 0);
  }

  get size(): number {
    let n = 0;
    for (const q of this.levels.values()) n += q.size;
    return n;
  }

  /** PolicyQueue::Enqueue: refused (UNAVAILABLE) when the level's queue is full. */
  enqueue(level: number, item: T): void {
    let queue = this.levels.get(level);
    if (queue === undefined) {
      queue = new PolicyQueue<T>(this.settings.priorityPolicies.get(level) ?? this.settings.defaultPolicy);
      this.levels.set(level, queue);
      this.sorted = [...this.levels.entries()].sort((a, b) => a[0] - b[0]).map(([, q]) => q);
    }
    const policy = queue.policy;
    if (policy.maxQueueSize !== 0 && queue.size >= policy.maxQueueSize)
      throw new RequestError('UNAVAILABLE', `${item.logPrefix}Exceeds maximum queue size`);
    let timeoutUs = policy.defaultTimeoutUs;
    // As Triton: a request may only shorten the level's timeout, so with no default timeout its own is ignored.
    if (policy.allowTimeoutOverride && item.timeoutUs !== 0 && item.timeoutUs < timeoutUs) timeoutUs = item.timeoutUs;
    queue.waiting.push({ item, expiresNs: timeoutUs === 0 ? 0 : monotonicNs() + timeoutUs * 1000 });
  }

  /**
   * Applies each level's policy (ApplyPolicy and RejectTimeoutRequests):
   * cancelled requests leave, expired ones are rejected or delayed. Triton
   * applies it lazily, as its cursor passes a request; here every waiting
   * request is looked at, so a request leaves no later than Triton's would.
   */
  sweep(now: number): Skipped<T> {
    let skipped: { rejected: T[]; cancelled: T[] } | undefined;
    for (const queue of this.levels.values()) {
      if (!leavesAny(queue, now)) continue;
      skipped ??= { rejected: [], cancelled: [] };
      const keep: Waiting<T>[] = [];
      for (const w of queue.waiting) {
        if (w.item.cancelled()) skipped.cancelled.push(w.item);
        else if (expired(w, now)) {
          if (queue.policy.timeoutAction === 'DELAY') queue.delayed.push(w.item);
          else skipped.rejected.push(w.item);
        } else keep.push(w);
      }
      queue.waiting.splice(0, queue.waiting.length, ...keep);
      for (let i = queue.delayed.length - 1; i >= 0; i--) {
        const item = queue.delayed[i];
        if (item?.cancelled() === true) {
          skipped.cancelled.push(item);
          queue.delayed.splice(i, 1);
        }
      }
    }
    return skipped ?? NOTHING_SKIPPED;
  }

  /** Waiting requests in the order the batcher examines them: by level, then unexpired before delayed. */
  *inOrder(): Generator<{ readonly item: T; readonly expiresNs: number }> {
    for (const queue of this.sorted) {
      yield* queue.waiting;
      for (const item of queue.delayed) yield { item, expiresNs: 0 };
    }
  }

  /** Takes the first `count` requests of inOrder(). */
  take(count: number): T[] {
    const out: T[] = [];
    for (const queue of this.sorted) {
      while (out.length < count && queue.waiting.length > 0) out.push((queue.waiting.shift() as Waiting<T>).item);
      while (out.length < count && queue.delayed.length > 0) out.push(queue.delayed.shift() as T);
      if (out.length === count) break;
    }
    return out;
  }

  /** Every waiting request, removed (the model stops, or no instance is left). */
  drain(): T[] {
    const out: T[] = [];
    for (const queue of this.sorted) {
      out.push(...queue.waiting.map((w) => w.item), ...queue.delayed);
      queue.waiting.length = 0;
      queue.delayed.length = 0;
    }
    return out;
  }
}
