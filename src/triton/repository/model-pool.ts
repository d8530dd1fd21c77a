import { Worker } from 'node:worker_threads';
import type { ModelConfig } from '../model-config.js';
import { FindingSink, type SinkState } from './finding-sink.js';
import { checkedFields, sinkOptionsFor, type CheckedModel, type ValidateOptions } from './model-check.js';
import { defaultThreads } from './pool-size.js';

export { LARGE_REPOSITORY_MODELS, MIN_CORES_FOR_WORKERS, PARALLEL_THRESHOLD, defaultThreads } from './pool-size.js';

/**
 * Checks the models of a repository on every core: the calling thread and
 * availableParallelism() - 1 worker threads (validate-worker.ts), each
 * taking chunks of models from one queue, so that a thread slowed by the
 * machine's other work takes fewer. Results are put back in the
 * repository's order, so the report is the same as from one thread.
 *
 * A worker cannot call the caller's readForeignPopef (a function, and the
 * Poplar SDK bridge it drives lives on this thread): a model that needs it
 * comes back unchecked and is checked here, as is every model of a worker
 * that fails to start or dies.
 */

/**
 * Models per job: large enough that messages are few, small enough that a
 * reply is not long in coming. Near the end jobs shrink, down to MIN_CHUNK,
 * so that the threads end together: the last jobs a worker holds are what
 * the calling thread waits for once it has run out of its own.
 */
const CHUNK = 32;
const MIN_CHUNK = 4;

/** Jobs a worker holds at once, so that it never waits for the next. */
const IN_FLIGHT = 2;

/** What a worker is sent: a chunk of the repository's models, from index `first`. */
export interface PoolJob {
  readonly root: string;
  readonly first: number;
  readonly names: readonly string[];
  readonly options: WorkerOptions;
}

/** ValidateOptions without its functions (a worker cannot be sent one), and whether there was a foreign reader. */
export type WorkerOptions = Omit<ValidateOptions, 'readForeignPopef' | 'threads'> & { readonly hasForeignReader: boolean };

/** One model as a worker checked it: a CheckedModel with its sink as data; null when it must be checked on the calling thread. */
export type PoolResult = {
  readonly name: string;
  readonly sink: SinkState;
  readonly config?: ModelConfig;
  readonly versions: readonly number[];
  readonly popefSkipped?: string;
} | null;

export interface PoolReply {
  readonly first: number;
  readonly results: readonly PoolResult[];
}

type Check = (root: string, model: string, options: ValidateOptions) => Promise<CheckedModel>;

/** A CheckedModel as plain data, for a worker's reply. */
export function toPoolResult(c: CheckedModel): PoolResult {
  return {
    name: c.name,
    sink: c.sink.state(),
    ...checkedFields(c),
  };
}

function fromPoolResult(r: NonNullable<PoolResult>, options: ValidateOptions): CheckedModel {
  return {
    name: r.name,
    sink: FindingSink.resume(sinkOptionsFor(r.name, options), r.sink),
    ...checkedFields(r),
  };
}

/**
 * The worker's file beside this module: validate-worker.mjs when run from
 * the sources (tsx), .js in the library's build, and dist/validate-worker.cjs
 * beside the CLI's bundle (whose import.meta.url is the bundle's), which
 * loads the worker's code from dist/validate-worker-body.cjs
 * (src/cli/validate-worker-launch.ts).
 */
export function newValidateWorker(): Worker {
  const here = import.meta.url;
  // From the sources (tsx): validate-worker.mjs registers tsx's loader in the worker first.
  const ext = here.endsWith('.ts') ? '.mjs' : here.endsWith('.cjs') ? '.cjs' : '.js';
  return new Worker(new URL(`./validate-worker${ext}`, here));
}

/** The models checked, in the order given, how many of them a worker checked, and how many a worker handed back to this thread. */
export interface PoolOutcome {
  readonly checked: CheckedModel[];
  readonly byWorkers: number;
  readonly handedBack: number;
}

/**
 * How the pool runs, for tests (and benchmarks) that need to see its
 * workers at work: a repository smaller than a chunk is otherwise checked
 * on the calling thread before a worker is online.
 */
export interface PoolOptions {
  /** false leaves every chunk to the workers (a worker that cannot start or dies still leaves its models to this thread). */
  readonly callerTakesPart?: boolean;
  /** Starts a worker in place of validate-worker's: a test's worker that dies mid-run. */
  readonly newWorker?: () => Worker;
  /** Called with what the pool did, before the outcome is returned. */
  readonly observe?: (outcome: PoolOutcome) => void;
}

/** Checks `names` with `check` here and in workers. */
export async function checkModelsInParallel(
  root: string,
  names: readonly string[],
  options: ValidateOptions,
  check: Check,
  { callerTakesPart = true, newWorker = newValidateWorker, observe }: PoolOptions = {},
): Promise<PoolOutcome> {
  // Functions cannot be posted to a worker: the caller's threads choice is made here, and its foreign reader runs here (see above).
  const { readForeignPopef, threads: threadsOption, ...rest } = options;
  const asked = typeof threadsOption === 'function' ? threadsOption(names.length) : threadsOption;
  const threads = Math.max(1, Math.floor(asked ?? defaultThreads(names.length)));
  const out = new Array<CheckedModel>(names.length);
  const checkHere = async (first: number, count: number): Promise<void> => {
    for (let i = first; i < first + count; i++) out[i] = await check(root, names[i] ?? '', options);
  };
  const outcome = (o: PoolOutcome): PoolOutcome => {
    observe?.(o);
    return o;
  };
  if (threads === 1 || names.length === 0) {
    await checkHere(0, names.length);
    return outcome({ checked: out, byWorkers: 0, handedBack: 0 });
  }
  let byWorkers = 0;
  let handedBack = 0;
  /** The first model no thread has taken yet. */
  let next = 0;
  const takeJob = (): { first: number; count: number } | undefined => {
    const remaining = names.length - next;
    if (remaining <= 0) return undefined;
    const count = Math.min(remaining, Math.max(MIN_CHUNK, Math.min(CHUNK, Math.ceil(remaining / (2 * threads)))));
    const job = { first: next, count };
    next += count;
    return job;
  };
  const workerOptions: WorkerOptions = { ...rest, hasForeignReader: readForeignPopef !== undefined };
  /** Models a worker handed back, and chunks of workers that failed: checked here. */
  const redo: number[] = [];
  const workers = Array.from({ length: threads - 1 }, () => startWorker());

  function startWorker(): Promise<void> {
    return new Promise<void>((resolve) => {
      let worker: Worker;
      try {
        worker = newWorker();
      } catch {
        resolve();
        return;
      }
      // One started before the pool (src/cli/early-workers.ts) was unref'd while it waited: see below.
      worker.ref();
      // Not unref'd: while the calling thread waits for the workers, a worker is all that keeps the event loop alive, and
      // an unref'd one that died took its 'exit' event with it (the run ended with the report unmade). finish() ends it.
      const held = new Map<number, number>();
      const feed = (): void => {
        while (held.size < IN_FLIGHT) {
          const job = takeJob();
          if (job === undefined) break;
          held.set(job.first, job.count);
          const message: PoolJob = { root, first: job.first, names: names.slice(job.first, job.first + job.count), options: workerOptions };
          worker.postMessage(message);
        }
        if (held.size === 0) finish();
      };
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        // Whatever it still held is checked here.
        for (const [first, count] of held) for (let i = first; i < first + count; i++) redo.push(i);
        held.clear();
        void worker.terminate();
        resolve();
      };
      worker.on('message', (reply: PoolReply) => {
        // A reply that comes after the worker failed is dropped: finish() put what it held in redo, and
        // feeding a dead worker would lose the chunks it was sent.
        if (done) return;
        held.delete(reply.first);
        reply.results.forEach((r, k) => {
          const index = reply.first + k;
          if (r === null) {
            redo.push(index);
            handedBack += 1;
          } else {
            out[index] = fromPoolResult(r, options);
            byWorkers += 1;
          }
        });
        feed();
      });
      worker.on('error', finish);
      worker.on('exit', finish);
      // Its first jobs go now, not when it is online: they wait in its port, and it starts on them as soon as it can,
      // rather than when this thread, busy with its own share, next takes in the 'online' event.
      feed();
    });
  }

  // This thread takes its share too, a chunk at a time, yielding between chunks so that replies are taken in and workers fed.
  for (let job = callerTakesPart ? takeJob() : undefined; job !== undefined; job = takeJob()) {
    await checkHere(job.first, job.count);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(workers);
  // Chunks no worker took, because every worker failed or died while the calling thread left the queue to them.
  for (; next < names.length; next++) redo.push(next);
  for (const index of redo.sort((a, b) => a - b)) out[index] = await check(root, names[index] ?? '', options);
  return outcome({ checked: out, byWorkers, handedBack });
}
