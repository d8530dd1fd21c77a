import type { BatcherSettings, PriorityQueue, Queued } from './queue-policy.js';

/**
 * The dynamic batcher's choice, ported in behaviour from Triton core's
 * DynamicBatchScheduler::GetDynamicBatch (r24.10,
 * src/dynamic_batch_scheduler.cc), made when an instance is free (Triton's
 * batcher waits for a payload slot before it looks at the queue): walk the
 * queue in priority order, growing the batch until it would exceed
 * max_batch_size; remember the largest preferred size reached, or where the
 * batch outgrew the largest preferred size; then
 *
 * - a preferred size was reached and the oldest request has not waited
 *   max_queue_delay_microseconds: send the batch of that size;
 * - the batch cannot grow (max_batch_size or the largest preferred size is
 *   reached), the delay is over, or there is no delay: send all of it;
 * - else wait for the rest of the delay, or until the nearest request
 *   timeout, whichever is first.
 *
 * Triton also lets a batch handed to a busy instance keep growing until
 * the instance takes it; here a batch is formed only for a free instance,
 * so what would have grown is simply still in the queue.
 */

export type BatchChoice = { readonly take: number } | { readonly waitUs: number };

export function chooseBatch<T extends Queued>(queue: PriorityQueue<T>, settings: BatcherSettings, now: number): BatchChoice {
  // A few sizes at most: a look through the list costs less than a Set made at every choice.
  const preferred = settings.preferredBatchSizes;
  const maxPreferred = settings.preferredBatchSizes.at(-1) ?? 0;
  let count = 0;
  let rows = 0;
  let best = 0;
  let sendNow = false;
  let oldest = Number.POSITIVE_INFINITY;
  let closestTimeout = 0;
  for (const { item, expiresNs } of queue.inOrder()) {
    if (count > 0) {
      if (rows + item.rows > maxPreferred && best === 0) best = count;
      if (rows + item.rows > settings.maxBatchSize) {
        sendNow = true;
        break;
      }
    }
    count += 1;
    rows += item.rows;
    oldest = Math.min(oldest, item.enqueuedNs);
    if (expiresNs !== 0) closestTimeout = closestTimeout === 0 ? expiresNs : Math.min(closestTimeout, expiresNs);
    if (preferred.includes(rows)) best = count;
  }
  if (count === 0) return { take: 0 };
  const delayNs = settings.maxQueueDelayUs * 1000;
  const waited = now - oldest;
  const delayExceeded = delayNs !== 0 && waited >= delayNs;
  if (best !== 0 && !delayExceeded) return { take: best };
  if (sendNow || rows >= maxPreferred || delayExceeded || delayNs === 0) return { take: count };
  let waitNs = delayNs - waited;
  if (closestTimeout !== 0) waitNs = now <= closestTimeout ? Math.min(closestTimeout - now, waitNs) : 1000;
  return { waitUs: Math.max(1, Math.ceil(waitNs / 1000)) };
}
