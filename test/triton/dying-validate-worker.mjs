// A validate worker (src/triton/repository/validate-worker.ts) that dies
// mid-run, for test/triton/model-pool.test.ts: it answers its first jobs as
// the real worker does, and exits when it is sent job number `dieAtJob`
// (the pool sends two jobs at once, then one per reply, so with 3 at least
// one job has been answered and at least one is held when it dies).
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

const dieAt = Number(workerData?.dieAtJob ?? 3);
register();
// The real worker first: a message that comes while no listener is on the port waits for one, not for a listener added later.
await import('../../src/triton/repository/validate-worker.ts');
let jobs = 0;
// After the real worker's listener, which starts the job; its reply waits for the file reads, and this exits first.
parentPort?.on('message', () => {
  jobs += 1;
  if (jobs >= dieAt) process.exit(1);
});
