// Who turns TurboFan off while validate's early worker boots
// (src/cli/turbofan-handoff.ts): a worker, once, after the main thread has
// compiled its bundle, unless the main thread has taken that back; and the
// real worker thread does it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { bundleLoaded, newTurbofanHandoff, takeTurbofanBack, turbofanOffFromWorker } from '../../src/cli/turbofan-handoff.js';
import { ROOT } from '../helpers.js';

// The cell's states, as turbofan-handoff.ts numbers them.
const MAIN_LOADING = 0;
const WORKER_SETTING = 2;
const WORKER_SET = 3;
const TAKEN_BACK = 4;

/** A worker thread running `body` with the built handoff module as `handoff` and the cell as `cell`. */
function handoffWorker(cell: Int32Array, body: string): Worker {
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    const handoff = require(workerData.module);
    const cell = workerData.cell;
    ${body}
  `;
  return new Worker(code, { eval: true, workerData: { cell, module: join(ROOT, 'dist/cli/turbofan-handoff.js') } });
}

describe('the TurboFan handoff between validate and its early worker', () => {
  it('lets a worker set the flag once the bundle is loaded, once, and never after the main thread took it back', () => {
    const handoff = newTurbofanHandoff();
    bundleLoaded(handoff);
    const set: string[] = [];
    assert.equal(
      turbofanOffFromWorker(handoff, (f) => set.push(f)),
      true,
    );
    assert.equal(
      turbofanOffFromWorker(handoff, (f) => set.push(f)),
      true,
      'a second worker leaves it, and knows TurboFan is off',
    );
    assert.deepEqual(set, ['--no-turbofan']);
    takeTurbofanBack(handoff);
    assert.equal(Atomics.load(handoff, 0), TAKEN_BACK, 'taken back, though a worker had set it: later workers know');
    assert.equal(
      turbofanOffFromWorker(handoff, (f) => set.push(f)),
      false,
      'a later worker does not take TurboFan for off, nor use the cache made so',
    );

    const taken = newTurbofanHandoff();
    bundleLoaded(taken);
    takeTurbofanBack(taken);
    takeTurbofanBack(taken);
    assert.equal(
      turbofanOffFromWorker(taken, (f) => set.push(f)),
      false,
    );
    assert.deepEqual(set, ['--no-turbofan']);
  });

  it('leaves the cell settled when the setter throws, so the main thread never waits on it', () => {
    const handoff = newTurbofanHandoff();
    bundleLoaded(handoff);
    assert.throws(() =>
      turbofanOffFromWorker(handoff, () => {
        throw new Error('refused');
      }),
    );
    assert.equal(Atomics.load(handoff, 0), WORKER_SET, 'settled: takeTurbofanBack waits only on a worker that is setting it');
  });

  it('keeps a worker from changing the flag while the main thread loads its bundle, and lets it once loaded', async () => {
    const handoff = newTurbofanHandoff();
    // The worker reports when it starts waiting, and then what it did.
    const worker = handoffWorker(
      handoff,
      `parentPort.postMessage('waiting');
       const off = handoff.turbofanOffFromWorker(cell, (f) => parentPort.postMessage(f));
       parentPort.postMessage(off);`,
    );
    const messages: unknown[] = [];
    worker.on('message', (m) => messages.push(m));
    await new Promise<void>((resolve) => worker.once('message', () => resolve()));
    assert.equal(Atomics.load(handoff, 0), MAIN_LOADING);
    assert.deepEqual(messages, ['waiting'], 'nothing set while the main thread loads');
    bundleLoaded(handoff);
    await new Promise((resolve) => worker.once('exit', resolve));
    assert.deepEqual(messages, ['waiting', '--no-turbofan', true]);
  });

  it('has a worker give up, changing nothing, when the bundle takes too long', () => {
    const handoff = newTurbofanHandoff();
    assert.equal(
      turbofanOffFromWorker(handoff, () => assert.fail('no flag while the main thread loads')),
      false,
    );
    assert.equal(Atomics.load(handoff, 0), MAIN_LOADING);
  });

  it('waits for a worker in the middle of setting the flag, then takes it back', async () => {
    const handoff = newTurbofanHandoff();
    bundleLoaded(handoff);
    // A worker thread that claims the cell and holds it for 30 ms before it is done.
    const worker = handoffWorker(
      handoff,
      `handoff.turbofanOffFromWorker(cell, () => { parentPort.postMessage('setting'); const end = Date.now() + 30; while (Date.now() < end); });`,
    );
    await new Promise((resolve) => worker.once('message', resolve));
    assert.equal(Atomics.load(handoff, 0), WORKER_SETTING);
    takeTurbofanBack(handoff);
    assert.equal(Atomics.load(handoff, 0), TAKEN_BACK, 'it returned once the worker was done, and took the job back');
    assert.equal(
      turbofanOffFromWorker(handoff, () => assert.fail('taken back')),
      false,
    );
    await new Promise((resolve) => worker.once('exit', resolve));
  });

  it('lets the main thread give up on a worker stuck setting the flag, and that worker then leaves the cell as taken back', async () => {
    const handoff = newTurbofanHandoff();
    bundleLoaded(handoff);
    // Held in WORKER_SETTING for 300 ms, past the main thread's 100 ms wait.
    const worker = handoffWorker(
      handoff,
      `const off = handoff.turbofanOffFromWorker(cell, () => { parentPort.postMessage('setting'); const end = Date.now() + 300; while (Date.now() < end); });
       parentPort.postMessage(off);`,
    );
    const messages: unknown[] = [];
    worker.on('message', (m) => messages.push(m));
    await new Promise<void>((resolve) => worker.once('message', () => resolve()));
    takeTurbofanBack(handoff);
    assert.equal(Atomics.load(handoff, 0), TAKEN_BACK, 'given up after the wait');
    await new Promise((resolve) => worker.once('exit', resolve));
    assert.equal(Atomics.load(handoff, 0), TAKEN_BACK, 'the late worker did not write over it');
    assert.deepEqual(messages, ['setting', false], 'nor takes TurboFan for off');
  });

  it("is what the built worker does: it turns TurboFan off, in the process's V8 flags, once the bundle is loaded", () => {
    // In a process of its own: V8's flags are the process's.
    const script = `
      const v8 = require('node:v8');
      const { Worker } = require('node:worker_threads');
      const { bundleLoaded } = require(${JSON.stringify(join(ROOT, 'dist/cli/turbofan-handoff.js'))});
      const handoff = new Int32Array(new SharedArrayBuffer(4));
      const before = v8.cachedDataVersionTag();
      v8.setFlagsFromString('--no-turbofan');
      const off = v8.cachedDataVersionTag();
      v8.setFlagsFromString('--turbofan');
      const worker = new Worker(${JSON.stringify(join(ROOT, 'dist/validate-worker.cjs'))}, { workerData: { turbofanOff: true, turbofanHandoff: handoff } });
      bundleLoaded(handoff);
      // Until the worker has settled the cell, or 10 s.
      const deadline = Date.now() + 10000;
      const poll = () => {
        if (Atomics.load(handoff, 0) !== ${WORKER_SET} && Date.now() < deadline) return setTimeout(poll, 5);
        console.log(JSON.stringify({ state: Atomics.load(handoff, 0), flagsNowOff: v8.cachedDataVersionTag() === off, offDiffersFromDefault: before !== off }));
        worker.terminate();
      };
      poll();
    `;
    const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, POPEF_NO_COMPILE_CACHE: '1' } });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { state: WORKER_SET, flagsNowOff: true, offDiffersFromDefault: true });
  });
});
