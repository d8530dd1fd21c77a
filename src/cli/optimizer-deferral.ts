import { availableParallelism } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { defaultThreads } from '../triton/repository/pool-size.js';
import { takeTurbofanBack, type TurbofanHandoff } from './turbofan-handoff.js';

/**
 * How `popef validate` runs V8 for a repository of a given size: up to
 * DEFER_UP_TO_MODELS models without V8's optimizing compiler (TurboFan) and
 * on every core, past that with TurboFan and validate's default threads.
 *
 * Why: a validate of a few hundred or a thousand models is over before
 * optimized code pays for itself. TurboFan compiles the hot functions on a
 * thread of its own, most of them after the run has stopped needing them,
 * and that thread takes the second core of a 2-core machine. Measured on
 * the 2-core CI machine, 1,000 scaffolded models, one thread: 0.50 s (CPU
 * 0.81 s) with TurboFan, 0.42 s (CPU 0.42 s) without; and without it the
 * second core is free for a worker thread (model-pool.ts): 0.35 s. At 5,000
 * models TurboFan is ahead: 1.24 s against 1.75 s, even when it is turned
 * on after the first 1,500. So the choice is made once per repository, from
 * its number of models, before any is checked (test/bench/validate.ts has
 * the figures).
 *
 * The switch is V8's own flag, set through node:v8 after the bundle has
 * been loaded: the compile cache (launch.ts) is taken only by a run with the
 * flags of the run that wrote it, so end() restores the flag, in a finally,
 * before the launcher could write one at exit. Nothing is changed when the
 * user chose V8's tiering flags themselves. When an early worker is booting
 * for the repository, it is the worker that turns TurboFan off, once booted
 * (turbofan-handoff.ts says why); this takes that back before it turns
 * TurboFan on again.
 *
 * While a repository is checked on two threads or more and they take every
 * core, V8's scavenges (the collections of the young generation, one every
 * few milliseconds of checking) run on their thread alone: a parallel
 * scavenge's helper tasks can only run on a core another thread of the run
 * needs. Measured on the 2-core machine, 12 alternating runs: 1,000 models
 * 165.3 ms against 171.2 (median), 20,000 models 1.52 s against 1.60. With
 * one thread (5,000 models on two cores) it made no difference, so a
 * repository checked on one thread keeps parallel scavenges; machines of
 * more cores were not measured, and the rule is the reasoning above. V8
 * reads this flag at each scavenge, and on Node 20 it is not among the flags
 * a code cache depends on (v8.cachedDataVersionTag does not change with
 * it), so it is set per repository; were it part of the tag on another
 * Node, the launcher would only write no cache (launch.ts). Nothing is
 * changed when Node was started with --single-threaded-gc,
 * --single-threaded, --predictable or --[no-]parallel-scavenge (Node
 * refuses these in NODE_OPTIONS).
 */

/** The largest repository checked without TurboFan. */
export const DEFER_UP_TO_MODELS = 1500;

/** Cores a pool needs while TurboFan is off: its compile thread is not taking one. */
const MIN_CORES_WITHOUT_TURBOFAN = 2;

/** V8 options that mean the user chose how code is compiled: then this leaves the flags alone. V8 also takes --no_turbofan and --noturbofan. */
const USER_CHOICE = /--(?:no-?)?(?:turbofan|opt|jitless|maglev|sparkplug|always-sparkplug)\b/;
const choosesCompiler = (options: string): boolean => USER_CHOICE.test(options.replaceAll('_', '-'));

/** V8 options that choose how collections are spread over threads (not --predictable-gc-schedule): then this leaves parallel scavenging alone. */
const USER_GC_CHOICE = /^--(?:no-?)?(?:parallel-scavenge|single-threaded-gc|single-threaded|predictable)(?:=|$)/;
const choosesGcThreads = (option: string): boolean => USER_GC_CHOICE.test(option.replaceAll('_', '-'));

/** Whether the user chose V8's tiering flags themselves, on Node's command line or in NODE_OPTIONS: then nothing is deferred. */
export function userChoseCompiler(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  return execArgv.some(choosesCompiler) || choosesCompiler(nodeOptions);
}

/** Whether Node was started with a flag that chooses how V8 spreads its collections over threads: then scavenges keep their threads. */
export function userChoseGcThreads(execArgv: readonly string[] = process.execArgv): boolean {
  return execArgv.some(choosesGcThreads);
}

/**
 * The threads validate checks a first repository of `models` models on:
 * what deferOptimizingCompiler's threadsFor gives, before anything is
 * deferred (the early workers are started on it: early-workers.ts).
 */
export function plannedThreads(models: number, cores: number, compilerChosen: boolean): number {
  return defersFor(models, compilerChosen) ? defaultThreads(models, cores, MIN_CORES_WITHOUT_TURBOFAN) : defaultThreads(models, cores);
}

/** Whether validate checks a first repository of `models` models with TurboFan off (the V8 flags its worker threads then compile under). */
export function defersFor(models: number, compilerChosen: boolean): boolean {
  return !compilerChosen && models <= DEFER_UP_TO_MODELS;
}

export interface OptimizerDeferral {
  /**
   * validate's `threads`: the threads for a repository of `models` models,
   * turning TurboFan back on for a large one, and parallel scavenging off
   * while two threads or more take every core.
   */
  readonly threadsFor: (models: number) => number;
  /** Restores the flags this changed, for good: threadsFor changes none after it (idempotent). */
  readonly end: () => void;
}

export interface DeferralContext {
  readonly execArgv?: readonly string[];
  readonly nodeOptions?: string;
  /** Where flags go: V8's own setter, or a test's recorder. */
  readonly setFlags?: (flags: string) => void;
  readonly cores?: number;
  /** The early workers' handoff: one of them turns TurboFan off (early-workers.ts), not this. */
  readonly turbofanHandoff?: TurbofanHandoff;
}

export function deferOptimizingCompiler(context: DeferralContext = {}): OptimizerDeferral {
  const { execArgv = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? '', setFlags = setFlagsFromString } = context;
  const cores = context.cores ?? availableParallelism();
  const scavenges = scavengeThreading(setFlags, !userChoseGcThreads(execArgv), cores);
  if (userChoseCompiler(execArgv, nodeOptions)) {
    return { threadsFor: (models) => scavenges.threads(defaultThreads(models, cores)), end: scavenges.end };
  }
  const { turbofanHandoff } = context;
  if (turbofanHandoff === undefined) setFlags('--no-turbofan');
  let off = true;
  const turbofanOn = (): void => {
    if (!off) return;
    off = false;
    // After this no worker turns it off; whether one had or not, --turbofan leaves the flag as V8's default.
    if (turbofanHandoff !== undefined) takeTurbofanBack(turbofanHandoff);
    setFlags('--turbofan');
  };
  return {
    threadsFor: (models) => {
      if (models > DEFER_UP_TO_MODELS) turbofanOn();
      return scavenges.threads(off ? defaultThreads(models, cores, MIN_CORES_WITHOUT_TURBOFAN) : defaultThreads(models, cores));
    },
    end: () => {
      scavenges.end();
      turbofanOn();
    },
  };
}

/**
 * Parallel scavenging, off while two threads or more take every core (see
 * above); `threads` passes the count through, and after `end` leaves the
 * flag as it is.
 */
function scavengeThreading(
  setFlags: (flags: string) => void,
  allowed: boolean,
  cores: number,
): { readonly threads: (threads: number) => number; readonly end: () => void } {
  let off = false;
  let ended = !allowed;
  const set = (wanted: boolean): void => {
    if (wanted === off) return;
    off = wanted;
    setFlags(off ? '--no-parallel-scavenge' : '--parallel-scavenge');
  };
  return {
    threads: (threads) => {
      if (!ended) set(threads >= 2 && threads >= cores);
      return threads;
    },
    end: () => {
      set(false);
      ended = true;
    },
  };
}
