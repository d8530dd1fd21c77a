/**
 * The timeout of a plugin's steps, for many steps under one timer. A timer
 * per step (raceDeadline) costs a Timeout, its insertion into and removal
 * from Node's timer lists, and two more promises for the race: a measurable
 * part of a small model's run, which popef serve makes for every request
 * (and the batcher once per row). Every step here has the same timeout, so
 * their deadlines fall in the order they started: the oldest step's
 * deadline is the only one the timer needs to wait for.
 */

interface Step {
  readonly dueMs: number;
  readonly fail: () => void;
}

export class StepDeadlines {
  /** The steps not yet settled, oldest first (a Set keeps insertion order). */
  private readonly pending = new Set<Step>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly timeoutMs: number) {}

  /** `work`'s outcome, or `onTimeout()`'s error once timeoutMs have passed without one. */
  race<T>(work: Promise<T>, onTimeout: () => Error): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const step: Step = { dueMs: performance.now() + this.timeoutMs, fail: () => reject(onTimeout()) };
      this.pending.add(step);
      this.arm();
      work.then(
        (value) => {
          this.settled(step);
          resolve(value);
        },
        (error: unknown) => {
          this.settled(step);
          // Passed on as it is, as raceDeadline does: the guard names the plugin's own error (and keeps it as the cause).
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
          reject(error);
        },
      );
    });
  }

  private settled(step: Step): void {
    this.pending.delete(step);
    // A timer left waiting for steps that have all ended must not hold the process open; it is kept for the
    // next step (re-arming one costs what this module saves).
    if (this.pending.size === 0) this.timer?.unref();
  }

  private arm(): void {
    if (this.timer !== undefined) {
      // A step is running: the timer holds the process open, as a step's own timer did.
      this.timer.ref();
      return;
    }
    const oldest = this.pending.values().next().value;
    if (oldest === undefined) return;
    this.timer = setTimeout(() => this.expire(), Math.max(0, Math.ceil(oldest.dueMs - performance.now())));
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    for (const step of this.pending) {
      if (step.dueMs > now) break;
      this.pending.delete(step);
      step.fail();
    }
    this.arm();
  }
}
