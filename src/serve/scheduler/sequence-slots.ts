import type { Tensor } from '../../run/plugin-api.js';
import type { SequenceParameters } from '../infer-request.js';
import type { ScheduledRequest } from './model-scheduler.js';
import { monotonicNs, type Queued } from './queue-policy.js';
import type { CorrelationId, SequenceSettings } from './sequence-controls.js';

/**
 * The sequence batcher's bookkeeping (sequence-scheduler.ts): its requests,
 * the slots sequences are bound to, the backlog of sequences waiting for a
 * slot, and the direct strategy's choice of a batch from an instance's
 * slots (DirectSequenceBatch::BatcherThread, core r24.10).
 */

export interface Job {
  readonly request: ScheduledRequest;
  readonly sequence: SequenceParameters;
  readonly enqueuedNs: number;
  readonly resolve: (outputs: ReadonlyMap<string, Tensor>) => void;
  readonly reject: (error: unknown) => void;
}

/** A slot's queue entry: a request, or the reaper's mark that the sequence went idle (Triton's null request). */
export type Entry = Job | 'released';

export class Slot {
  readonly queue: Entry[] = [];
  /** The sequence bound to it (its key), while one is. */
  bound: string | undefined;
  /** Oldest strategy: a request of this slot is in the instance's batcher or running (one at a time per sequence). */
  inFlight = false;
  constructor(
    readonly instance: number,
    readonly index: number,
  ) {}
}

/** Oldest strategy: a request handed to its instance's dynamic batcher, with the slot it came from. */
export class Candidate implements Queued {
  readonly rows = 1;
  readonly timeoutUs = 0;
  readonly enqueuedNs: number;
  readonly logPrefix: string;
  constructor(
    readonly job: Job,
    readonly slot: Slot,
  ) {
    // The batcher's delay counts from when the request reaches it (after the sequence's previous request was done), not from its arrival.
    this.enqueuedNs = monotonicNs();
    this.logPrefix = job.request.logPrefix;
  }

  cancelled(): boolean {
    return false;
  }
}

export interface Backlog {
  readonly key: string;
  readonly jobs: Job[];
  /** The earliest expiry of its requests' `timeout`s (0: none). */
  expiresNs: number;
}

/** Triton's SequenceId compares type and value: the uint64 1 and the string "1" are two sequences. */
export function keyOf(id: CorrelationId): string {
  return typeof id === 'string' ? `s${id}` : `u${id}`;
}

/** How Triton prints a SequenceId in its messages. */
export function idText(id: CorrelationId): string {
  return typeof id === 'string' ? id : id.toString();
}

/** A direct batch: its rows (undefined: a not-ready row) and the slots whose END joined it. */
export type DirectChoice = { readonly rows: (Job | undefined)[]; readonly ended: readonly Slot[] } | { readonly waitNs: number };

/**
 * The direct strategy's batch: the first waiting request of each slot up to
 * the last slot with one, taken from their queues; undefined when no slot
 * has one. With max_queue_delay_microseconds and minimum_slot_utilization
 * both set, a batch whose share of ready slots is below the utilization
 * waits until its oldest request has waited the delay.
 */
export function directBatch(
  slots: readonly Slot[],
  settings: Pick<SequenceSettings, 'maxQueueDelayUs' | 'minimumSlotUtilization'>,
  maxBatchSize: number,
  now: number,
): DirectChoice | undefined {
  let last = -1;
  let ready = 0;
  let earliest = Infinity;
  slots.forEach((slot, s) => {
    const front = slot.queue[0];
    if (front === undefined || front === 'released') return;
    last = s;
    ready += 1;
    earliest = Math.min(earliest, front.enqueuedNs);
  });
  if (last === -1) return undefined;
  const delayNs = settings.maxQueueDelayUs * 1000;
  if (delayNs > 0 && settings.minimumSlotUtilization > 0) {
    const waitedNs = now - earliest;
    if (waitedNs <= delayNs && ready / Math.max(1, maxBatchSize) < settings.minimumSlotUtilization) return { waitNs: delayNs - waitedNs };
  }
  const rows: (Job | undefined)[] = [];
  const ended: Slot[] = [];
  for (const slot of slots.slice(0, last + 1)) {
    const front = slot.queue[0];
    if (front === undefined || front === 'released') {
      rows.push(undefined);
      continue;
    }
    slot.queue.shift();
    rows.push(front);
    if (front.sequence.end) ended.push(slot);
  }
  return { rows, ended };
}
