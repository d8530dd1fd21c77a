import { availableParallelism } from 'node:os';

/**
 * How many threads validate's model pool (model-pool.ts) uses by default:
 * apart from the pool, and importing nothing of it, so that the CLI can
 * make the same choice before the pool's code is loaded (src/cli/early-workers.ts
 * starts the workers as the process starts).
 */

/** Below this many models (threads not given), everything is checked on the calling thread: starting a worker costs more than it saves. */
export const PARALLEL_THRESHOLD = 256;

/**
 * Cores a machine needs before validate starts workers by default. On this
 * project's 2-core machine (shared, load average 4 to 8), one thread
 * already keeps about 1.6 cores busy: V8 compiles and collects garbage on
 * threads of its own, and before its code is optimised that is much of the
 * work. A worker then has no core to itself, and warms its own copy of the
 * code from cold. Measured with the CLI bundle, one thread against the
 * pool: 1,000 models 810-930 ms of CPU against 890-1,060 ms; 5,000 models
 * 2.1 s against 2.9-3.1 s; 20,000 models 4.3-4.9 s against 5.5-6.3 s; the
 * pool's wall time was no better at any of these sizes at that load (issue 26; LARGE_REPOSITORY_MODELS has the figures on a quiet machine). Machines with more
 * cores were not measured, so they keep the pool. Without TurboFan the
 * second core is free: the CLI checks repositories of up to 1,500 models
 * so, and asks for the pool on 2 cores then (src/cli/optimizer-deferral.ts).
 */
export const MIN_CORES_FOR_WORKERS = 3;

/**
 * From this many models a 2-core machine uses the pool all the same: the
 * worker's cold start and TurboFan's compile thread are paid once, and the
 * per-model work, about half of it system calls, goes on for seconds.
 * Measured on the quiet 2-core machine (load average under 2), CLI bundle
 * with TurboFan, two threads against one: 5,000 models 1.29-1.40 s against
 * 1.03-1.15 s; 10,000 models 1.71-1.84 s against 1.77-1.86 s; 20,000
 * models 2.84-3.52 s against 3.66-3.71 s; 100,000 models 13.9 s against
 * 22.2 s (test/bench/validate.ts, BENCH_VALIDATE_LARGE). MIN_CORES_FOR_WORKERS'
 * figures were taken at load average 4 to 8, where a worker had no core of
 * its own; this rule was not measured under such load.
 */
export const LARGE_REPOSITORY_MODELS = 10_000;

/** Cores a large repository's pool needs (LARGE_REPOSITORY_MODELS). */
const MIN_CORES_FOR_LARGE = 2;

/** How many threads check `models` models when the caller does not say (or, with `minCores`, says the cores a pool needs). */
export function defaultThreads(models: number, cores = availableParallelism(), minCores = MIN_CORES_FOR_WORKERS): number {
  if (models < PARALLEL_THRESHOLD) return 1;
  const needed = models >= LARGE_REPOSITORY_MODELS ? Math.min(minCores, MIN_CORES_FOR_LARGE) : minCores;
  return cores < needed ? 1 : cores;
}
