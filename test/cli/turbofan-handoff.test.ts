// Who turns TurboFan off while validate's early worker boots
// (src/cli/turbofan-handoff.ts): the worker, once, unless the main thread has
// taken that back; and the real worker thread does it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { newTurbofanHandoff, takeTurbofanBack, turbofanOffFromWorker } from '../../src/cli/turbofan-handoff.js';
import { ROOT } from '../helpers.js';

// The cell's states, as turbofan-handoff.ts numbers them.
const WORKER_SETTING = 1;
const WORKER_SET = 2;

describe('the TurboFan handoff between validate and its early worker', () => {
  it('lets the worker set the flag once, and never after the main thread took it back', () => {
    const handoff = newTurbofanHandoff();
    const set: string[] = [];
    assert.equal(
      turbofanOffFromWorker(handoff, (f) => set.push(f)),
      true,
    );
    assert.equal(
      turbofanOffFromWorker(handoff, (f) => set.push(f)),
      false,
      'a second worker leaves it',
    );
    assert.deepEqual(set, ['--no-turbofan']);

    const taken = newTurbofanHandoff();
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
    assert.throws(() =>
      turbofanOffFromWorker(handoff, () => {
        throw new Error('refused');
      }),
    );
    assert.equal(Atomics.load(handoff, 0), WORKER_SET, 'settled: takeTurbofanBack waits only on a worker that is setting it');
  });

  it('waits for a worker in the middle of setting the flag, then takes it back', async () => {
    const handoff = newTurbofanHandoff();
    // A worker thread that claims the cell and holds it for 30 ms before it is done.
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      const { turbofanOffFromWorker } = require(workerData.module);
      turbofanOffFromWorker(workerData.handoff, () => { parentPort.postMessage('setting'); const end = Date.now() + 30; while (Date.now() < end); });
    `;
    const worker = new Worker(code, { eval: true, workerData: { handoff, module: join(ROOT, 'dist/cli/turbofan-handoff.js') } });
    await new Promise((resolve) => worker.once('message', resolve));
    assert.equal(Atomics.load(handoff, 0), WORKER_SETTING);
    takeTurbofanBack(handoff);
    assert.equal(Atomics.load(handoff, 0), WORKER_SET, 'it returned once the worker was done, not before');
    assert.equal(
      turbofanOffFromWorker(handoff, () => assert.fail('taken back')),
      false,
    );
    await new Promise((resolve) => worker.once('exit', resolve));
  });

  it("is what the built worker does: it turns TurboFan off, in the process's V8 flags", () => {
    // In a process of its own: V8's flags are the process's.
    const script = `
      const v8 = require('node:v8');
      const { Worker } = require('node:worker_threads');
      const handoff = new Int32Array(new SharedArrayBuffer(4));
      const before = v8.cachedDataVersionTag();
      v8.setFlagsFromString('--no-turbofan');
      const off = v8.cachedDataVersionTag();
      v8.setFlagsFromString('--turbofan');
      const worker = new Worker(${JSON.stringify(join(ROOT, 'dist/validate-worker.cjs'))}, { workerData: { turbofanOff: true, turbofanHandoff: handoff } });
      worker.on('online', () => setTimeout(() => {
        console.log(JSON.stringify({ state: Atomics.load(handoff, 0), flagsNowOff: v8.cachedDataVersionTag() === off, offDiffersFromDefault: before !== off }));
        worker.terminate();
      }, 200));
    `;
    const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, POPEF_NO_COMPILE_CACHE: '1' } });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { state: WORKER_SET, flagsNowOff: true, offDiffersFromDefault: true });
  });
});
