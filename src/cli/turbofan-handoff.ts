/**
 * Who turns V8's optimizing compiler (TurboFan) off for a small repository
 * whose early worker is booting: the worker, once it has booted, not the
 * main thread (optimizer-deferral.ts says why it is turned off at all).
 *
 * Why the worker: V8's flags are the process's, and changing one changes
 * the flag hash every code cache is checked against, Node's cache of its
 * own JavaScript included. A worker thread compiles that JavaScript as it
 * boots (about 25 ms on the 2-core CI machine): when the main thread set
 * --no-turbofan as it began checking, the rest of the worker's boot
 * compiled from source, and its first line ran 44-47 ms after the main
 * thread's first line instead of 31-32 ms. Measured over 31 alternating
 * runs of 1,000 models: 219.7 ms against 224.5 (median). The main thread
 * meanwhile checks its first models with TurboFan on, for the few
 * milliseconds until the worker has booted.
 *
 * One Int32 in shared memory holds the state, so that each flag is set
 * once and the main thread can take the job back (a large repository
 * after a small one, the end of the run) without the worker turning
 * TurboFan off after that.
 */

/** Neither thread has set the flag yet; the worker may. */
const PENDING = 0;
/** The worker is setting it. */
const WORKER_SETTING = 1;
/** The worker has set it. */
const WORKER_SET = 2;
/** The main thread has taken the job back: the worker leaves the flags alone. */
const TAKEN_BACK = 3;

/** The shared cell, created by the main thread and passed to the early workers in their workerData. */
export type TurbofanHandoff = Int32Array;

export function newTurbofanHandoff(): TurbofanHandoff {
  return new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
}

/**
 * In the worker: turns TurboFan off unless the main thread has taken the
 * job back; whether it did. `setFlags` is V8's own setter (node:v8, which
 * this module does not load: the early workers' bundle, loaded before
 * anything else, takes it in too), or a test's.
 */
export function turbofanOffFromWorker(handoff: TurbofanHandoff, setFlags: (flags: string) => void): boolean {
  if (Atomics.compareExchange(handoff, 0, PENDING, WORKER_SETTING) !== PENDING) return false;
  try {
    setFlags('--no-turbofan');
  } finally {
    Atomics.store(handoff, 0, WORKER_SET);
    Atomics.notify(handoff, 0);
  }
  return true;
}

/** How long the main thread waits for a worker in the middle of setting the flag (a flag takes microseconds to set). */
const SETTING_WAIT_MS = 100;

/**
 * On the main thread: takes the job back, so that no worker changes the
 * flag after this returns (the main thread then sets TurboFan as it needs).
 */
export function takeTurbofanBack(handoff: TurbofanHandoff): void {
  // A worker in the middle of setting the flag is waited for (bounded: a worker is stopped only by its end).
  if (Atomics.compareExchange(handoff, 0, PENDING, TAKEN_BACK) === WORKER_SETTING) Atomics.wait(handoff, 0, WORKER_SETTING, SETTING_WAIT_MS);
}
