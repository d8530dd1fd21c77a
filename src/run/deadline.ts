/**
 * A step raced against a timeout and an interrupt, with every timer and
 * listener removed when it settles: the plugin host takes thousands of
 * steps in a timed run or a long import, and must leave nothing behind.
 */
export interface Deadline {
  readonly timeoutMs?: number;
  /**
   * The time that counts against `timeoutMs` so far (default: all of it).
   * When the timer fires early by this measure, it is set again for what is left.
   */
  readonly spentMs?: () => number;
  /** The error when the time is up; may act first (stop a child). */
  readonly onTimeout: () => Error;
  readonly signal?: AbortSignal;
  /** The error when the signal aborts. */
  readonly onAbort: () => Error;
}

export async function raceDeadline<T>(work: Promise<T>, deadline: Deadline, others: readonly Promise<never>[] = []): Promise<T> {
  const { timeoutMs, signal } = deadline;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  // The losers of the race must not surface as unhandled rejections.
  work.catch(() => undefined);
  const racers: Promise<T>[] = [work, ...others];
  if (timeoutMs !== undefined) {
    const { spentMs } = deadline;
    const start = spentMs?.() ?? 0;
    racers.push(
      new Promise<never>((_, reject) => {
        const arm = (ms: number): void => {
          timer = setTimeout(() => {
            const left = spentMs === undefined ? 0 : timeoutMs - (spentMs() - start);
            if (left > 0) arm(left);
            else reject(deadline.onTimeout());
          }, ms);
        };
        arm(timeoutMs);
      }),
    );
  }
  if (signal !== undefined) {
    racers.push(
      new Promise<never>((_, reject) => {
        onAbort = (): void => reject(deadline.onAbort());
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }),
    );
  }
  try {
    return await Promise.race(racers);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }
}
