import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as V8 from 'node:v8';
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
 * this file's imports, and node:v8, are loaded by then, so none of Node's
 * own modules is compiled under the changed flags. When it does not (the
 * main thread took the job back, or was still loading its own bundle), it
 * loads its code as any module does, since the cache would be refused.
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
// node:v8 is loaded only here, and before the flag changes (Node's modules compile under the flags of their load).
const v8 = (): typeof V8 => createRequire(import.meta.url)('node:v8') as typeof V8;
// The cache was made with TurboFan off: it serves only a worker that runs so (see turbofan-handoff.ts).
if (data?.turbofanOff === true && (data.turbofanHandoff === undefined || turbofanOffFromWorker(data.turbofanHandoff, v8().setFlagsFromString))) {
  const launched = launch(body, { cacheName: 'validate-worker', saveAt: 'caller' });
  const onFirstReply = launched.exports.onFirstReply;
  // saveCache writes only after a miss or a rejection, and only once.
  if (typeof onFirstReply === 'function') (onFirstReply as (callback: () => void) => void)(launched.saveCache);
} else {
  createRequire(import.meta.url)(body);
}
