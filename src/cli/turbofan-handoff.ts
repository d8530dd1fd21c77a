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
 * thread's first line instead of 31-32 ms. Measured over 25 alternating
 * runs of 1,000 models: 226.3 ms against 234.6 (median). The main thread
 * meanwhile checks its first models with TurboFan on, for the few
 * milliseconds until the worker has booted.
 *
 * Neither may change a flag while the main thread compiles its own bundle
 * (launch.ts keeps the cache only under the flags it was compiled with):
 * the cell starts at MAIN_LOADING, and bin/popef.cjs says when the bundle
 * is loaded (EarlyWorkers.bundleLoaded). One Int32 in shared memory holds
 * the state, so that the flag is set once, and the main thread can take
 * the job back (a large repository after a small one, the end of the run)
 * without a worker turning TurboFan off after that.
 */

/** The main thread is compiling its bundle: no flag may change yet. */
const MAIN_LOADING = 0;
/** Neither thread has set the flag yet; a worker may. */
const PENDING = 1;
/** A worker is setting it. */
const WORKER_SETTING = 2;
/** A worker has set it: TurboFan is off. */
const WORKER_SET = 3;
/** The main thread has taken the job back: workers leave the flags alone, which are the main thread's again. */
const TAKEN_BACK = 4;

/** The shared cell, created by the main thread and passed to the early workers in their workerData. */
export type TurbofanHandoff = Int32Array;

export function newTurbofanHandoff(): TurbofanHandoff {
  // Zero-filled: MAIN_LOADING.
  return new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
}

/** On the main thread, once its bundle is compiled: from now on a worker may turn TurboFan off. */
export function bundleLoaded(handoff: TurbofanHandoff): void {
  if (Atomics.compareExchange(handoff, 0, MAIN_LOADING, PENDING) === MAIN_LOADING) Atomics.notify(handoff, 0);
}

/**
 * How long a worker waits for the main thread's bundle before it leaves
 * the flags alone (it then loads its code without the cache); the bundle
 * takes about 10 ms to load.
 */
const MAIN_LOADING_WAIT_MS = 200;
/** How long one thread waits for another in the middle of setting the flag (a flag takes microseconds to set). */
const SETTING_WAIT_MS = 100;

/**
 * In a worker: turns TurboFan off unless the main thread is still loading
 * its bundle after MAIN_LOADING_WAIT_MS or has taken the job back, and says
 * whether TurboFan is off now (this worker or another turned it off), which
 * is when the worker's code cache, made under that flag, is of use.
 * `setFlags` is V8's own setter (node:v8, which this module does not load:
 * the early workers' bundle, loaded before anything else, takes it in
 * too), or a test's.
 */
export function turbofanOffFromWorker(handoff: TurbofanHandoff, setFlags: (flags: string) => void): boolean {
  if (Atomics.load(handoff, 0) === MAIN_LOADING) Atomics.wait(handoff, 0, MAIN_LOADING, MAIN_LOADING_WAIT_MS);
  if (Atomics.compareExchange(handoff, 0, PENDING, WORKER_SETTING) === PENDING) {
    let settled = false;
    try {
      setFlags('--no-turbofan');
    } finally {
      // Not over TAKEN_BACK: a main thread that gave up waiting (takeTurbofanBack) has the flags, and later workers must know.
      settled = Atomics.compareExchange(handoff, 0, WORKER_SETTING, WORKER_SET) === WORKER_SETTING;
      Atomics.notify(handoff, 0);
    }
    return settled;
  }
  if (Atomics.load(handoff, 0) === WORKER_SETTING) Atomics.wait(handoff, 0, WORKER_SETTING, SETTING_WAIT_MS);
  return Atomics.load(handoff, 0) === WORKER_SET;
}

/**
 * On the main thread: takes the job back, so that no worker changes the
 * flag after this returns and every later worker knows TurboFan is the
 * main thread's to set (it then sets it as it needs). A worker in the
 * middle of setting the flag is waited for; one that has not finished
 * after SETTING_WAIT_MS (a thread descheduled in those few instructions)
 * may still turn TurboFan off afterwards, which costs speed, not results.
 */
export function takeTurbofanBack(handoff: TurbofanHandoff): void {
  for (;;) {
    const state = Atomics.load(handoff, 0);
    if (state === TAKEN_BACK) return;
    if (state === WORKER_SETTING) {
      if (Atomics.wait(handoff, 0, WORKER_SETTING, SETTING_WAIT_MS) === 'timed-out') {
        Atomics.store(handoff, 0, TAKEN_BACK);
        return;
      }
      continue;
    }
    if (Atomics.compareExchange(handoff, 0, state, TAKEN_BACK) === state) {
      Atomics.notify(handoff, 0);
      return;
    }
  }
}
