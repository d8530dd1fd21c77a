import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { workerData } from 'node:worker_threads';
import { launch } from './launch.js';
import { turbofanOffFromWorker, type TurbofanHandoff } from './turbofan-handoff.js';

/**
 * The CLI's validate worker thread (dist/validate-worker.cjs): it loads the
 * worker's own bundle (dist/validate-worker-body.cjs) through the
 * launcher's code cache, as bin/popef.cjs loads the CLI's. A worker
 * compiles its code from cold: its first chunk of 32 models took 22-23 ms
 * against 7-8 ms for the next ones, and 14-15 ms from the cache (issue 26).
 *
 * V8 takes a cache only under the flags it was written with, and validate
 * turns TurboFan off for small repositories and back on for large ones
 * once the repository is listed (src/cli/optimizer-deferral.ts), which a
 * worker's compile may fall either side of. So only a worker its starter
 * knows to run with TurboFan off (WorkerLaunchData) uses the cache: its
 * first chunk is a sizeable part of a short run. Any other worker (a large
 * repository's, one the pool starts itself, or one under V8 flags of the
 * user's) loads its bundle as any module does. The cache is written after
 * the worker's first reply (validate-worker.ts, onFirstReply): a worker is
 * terminated, not exited, so it has no exit to write at.
 *
 * An early worker of a small repository turns TurboFan off itself, once
 * booted and before its bundle is compiled (turbofan-handoff.ts says why):
 * this file's imports are loaded by then, node:v8 among them, so none of
 * Node's own modules is compiled under the changed flags.
 */

/** What a worker's starter passes as workerData. */
export interface WorkerLaunchData {
  /** The worker compiles with TurboFan off (validate's deferral is on for its repository). */
  readonly turbofanOff?: boolean;
  /** With turbofanOff: the worker turns TurboFan off itself, unless the main thread has taken that back. */
  readonly turbofanHandoff?: TurbofanHandoff;
}

const body = fileURLToPath(new URL('./validate-worker-body.cjs', import.meta.url));
const data = workerData as WorkerLaunchData | null | undefined;
if (data?.turbofanOff === true) {
  if (data.turbofanHandoff !== undefined) turbofanOffFromWorker(data.turbofanHandoff, setFlagsFromString);
  const launched = launch(body, { cacheName: 'validate-worker', saveAt: 'caller' });
  const onFirstReply = launched.exports.onFirstReply;
  // saveCache writes only after a miss or a rejection, and only once.
  if (typeof onFirstReply === 'function') (onFirstReply as (callback: () => void) => void)(launched.saveCache);
} else {
  createRequire(import.meta.url)(body);
}
