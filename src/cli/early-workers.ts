import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { defersFor, plannedThreads, userChoseCompiler } from './optimizer-deferral.js';
import { bundleLoaded, newTurbofanHandoff, type TurbofanHandoff } from './turbofan-handoff.js';
import type { WorkerLaunchData } from './validate-worker-launch.js';

/**
 * validate's worker threads, started by bin/popef.cjs as the process
 * starts, before the CLI's bundle is loaded (this module is bundled on its
 * own, as dist/early-workers.cjs, so that loading it costs next to nothing).
 *
 * Why: a worker thread takes 40-60 ms to boot and load its code on the
 * 2-core CI machine. Started by the pool, once the repository is listed, it
 * began checking models about 100 ms into a 280 ms run of 1,000 models;
 * started here, it boots while the main thread loads the bundle and lists
 * the repository. Measured over 12 alternating runs: 354 ms against 318 ms
 * (issue 26; test/bench/validate.ts has the figures).
 *
 * The pool takes these workers first (PoolOptions.newWorker) and starts
 * its own only when they are used up. The choice is made from the first
 * repository's entries, with the pool's own rule (plannedThreads), so a
 * small repository, the one CI checks most, starts none. A worker that is
 * not taken is unref'd, so that it never holds the process, and ended by
 * dispose(). A worker that exits before it is taken is never handed out.
 */
export interface EarlyWorkers {
  /** A started worker, live as far as is known, or undefined when there is none left. */
  readonly take: () => Worker | undefined;
  /** Ends the workers not taken. */
  readonly dispose: () => void;
  /** The main thread has compiled its bundle: a worker may now change V8's flags (turbofan-handoff.ts). bin/popef.cjs calls it. */
  readonly bundleLoaded: () => void;
  /** When the workers compile with TurboFan off: who turns it off (turbofan-handoff.ts), for validate's deferral. */
  readonly turbofanHandoff?: TurbofanHandoff;
}

/**
 * validate's options that take a value, as its command defines them
 * (commands/validate.ts): their values are not repositories.
 * test/cli/early-workers.test.ts checks the list against the command.
 */
export const VALUE_OPTIONS: readonly string[] = ['--format', '--triton-version', '--model', '--backend-directory', '--max-findings-per-rule'];

export interface EarlyContext {
  readonly cores?: number;
  readonly execArgv?: readonly string[];
  readonly nodeOptions?: string;
  /** Starts a worker: the validate worker's file, or a test's. */
  readonly newWorker?: (file: string, workerData: WorkerLaunchData) => Worker;
}

/** The repositories a validate command line names, in its order (what follows the command word). */
export function repositoriesOf(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') {
      out.push(...args.slice(i + 1));
      break;
    }
    if (arg.startsWith('-')) {
      if (VALUE_OPTIONS.includes(arg)) i += 1;
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** Starts validate's workers for the command line `args` (after the word validate), or none. Never throws. */
export function startEarlyWorkers(args: readonly string[], workerFile: string, context: EarlyContext = {}): EarlyWorkers {
  const none: EarlyWorkers = { take: () => undefined, dispose: () => undefined, bundleLoaded: () => undefined };
  // --model checks a few models; --help and --version check none.
  if (args.some((a) => a === '--model' || a.startsWith('--model=') || a === '-h' || a === '--help')) return none;
  const first = repositoriesOf(args)[0];
  if (first === undefined) return none;
  let entries: number;
  try {
    // An upper bound on its models (files and hidden entries are not models): listing names only is what this can afford here.
    entries = readdirSync(first).filter((name) => !name.startsWith('.')).length;
  } catch {
    // validate reports it, with its own message.
    return none;
  }
  const cores = context.cores ?? availableParallelism();
  const compilerChosen = userChoseCompiler(context.execArgv, context.nodeOptions);
  const count = plannedThreads(entries, cores, compilerChosen) - 1;
  // Whether the worker will compile with TurboFan off, for its code cache (validate-worker-launch.ts); then it turns it off.
  const turbofanOff = defersFor(entries, compilerChosen);
  const turbofanHandoff = turbofanOff && count > 0 ? newTurbofanHandoff() : undefined;
  const workerData: WorkerLaunchData = turbofanHandoff === undefined ? { turbofanOff } : { turbofanOff, turbofanHandoff };
  const start = context.newWorker ?? ((file: string, data: WorkerLaunchData) => new Worker(file, { workerData: data }));
  const workers: { worker: Worker; exited: boolean }[] = [];
  for (let i = 0; i < count; i++) {
    try {
      const worker = start(workerFile, workerData);
      const held = { worker, exited: false };
      // Until the pool takes it: its failure is the pool's to meet (it falls back on its own), not an uncaught error here.
      worker.on('error', () => undefined);
      worker.once('exit', () => (held.exited = true));
      worker.unref();
      workers.push(held);
    } catch {
      break;
    }
  }
  return {
    take: () => {
      for (let held = workers.shift(); held !== undefined; held = workers.shift()) if (!held.exited) return held.worker;
      return undefined;
    },
    dispose: () => {
      for (const { worker } of workers.splice(0)) void worker.terminate();
    },
    bundleLoaded: () => {
      if (turbofanHandoff !== undefined) bundleLoaded(turbofanHandoff);
    },
    // None started: no worker turns TurboFan off, the deferral does.
    ...(turbofanHandoff === undefined || workers.length === 0 ? {} : { turbofanHandoff }),
  };
}
