import { parentPort } from 'node:worker_threads';
import { checkModel, type ValidateOptions } from './model-check.js';
import { toPoolResult, type PoolJob, type PoolReply, type PoolResult } from './model-pool.js';

/**
 * A worker thread of validate's model pool (model-pool.ts): checks the
 * chunks of models it is sent and replies with each one's result as data.
 * A model whose PopEF needs the caller's foreign reader, or whose check
 * throws, comes back as null, to be checked (and to throw) on the calling
 * thread, where the report is the same as if no worker had been used.
 */

/** Thrown in place of the caller's foreign reader, which stays on its thread. */
class NeedsCallerThread extends Error {}

async function run(job: PoolJob): Promise<PoolReply> {
  const { hasForeignReader, ...options } = job.options;
  const here: ValidateOptions = hasForeignReader
    ? {
        ...options,
        readForeignPopef: () => {
          throw new NeedsCallerThread('the foreign PopEF reader runs on the calling thread');
        },
      }
    : options;
  const results: PoolResult[] = [];
  for (const name of job.names) {
    try {
      results.push(toPoolResult(await checkModel(job.root, name, here)));
    } catch {
      results.push(null);
    }
  }
  return { first: job.first, results };
}

let afterFirstReply: (() => void) | undefined;

/**
 * Calls `callback` once, after this worker has posted its first reply: by
 * then it has compiled what checking a model takes. The CLI's worker
 * launcher (src/cli/validate-worker-launch.ts) writes its code cache then,
 * as a terminated worker has no exit to write it at.
 */
export function onFirstReply(callback: () => void): void {
  afterFirstReply = callback;
}

parentPort?.on('message', (job: PoolJob) => {
  void run(job).then((reply) => {
    parentPort?.postMessage(reply);
    const callback = afterFirstReply;
    afterFirstReply = undefined;
    callback?.();
  });
});
