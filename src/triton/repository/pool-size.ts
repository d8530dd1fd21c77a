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
 * pool's wall time was no better at any size (issue 26). Machines with more
 * cores were not measured, so they keep the pool. Without TurboFan the
 * second core is free: the CLI checks repositories of up to 1,500 models
 * so, and asks for the pool on 2 cores then (src/cli/optimizer-deferral.ts).
 */
export const MIN_CORES_FOR_WORKERS = 3;

/** How many threads check `models` models when the caller does not say (or, with `minCores`, says the cores a pool needs). */
export function defaultThreads(models: number, cores = availableParallelism(), minCores = MIN_CORES_FOR_WORKERS): number {
  return models < PARALLEL_THRESHOLD || cores < minCores ? 1 : cores;
}
