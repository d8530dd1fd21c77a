import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ModelSet } from '../../src/index.js';
import { schemaErrors } from '../../src/json-schemas.js';
import { fromNumbers, toNumbers } from '../../src/run/tensor.js';
import { readNpy, writeNpy } from '../../src/run/tensor-io/npy.js';
import { FIXTURES, ROOT, fixture, inTempDir, runCli, tempDir } from '../helpers.js';

// The IPU bridge runs against the simulated SDK (fixtures/sim-sdk): see its README for what it computes.
const SIM = { ...process.env, PYTHONPATH: fixture('sim-sdk') } as Record<string, string>;
const NO_SDK = { ...process.env, PYTHONPATH: '' } as Record<string, string>;
const ECHO = join(ROOT, 'test/run/echo-plugin');

/** The simulation's output: s + (k + 1) * i, with s the input sum plus the stored tensors' byte sum. */
async function storedByteSum(path: string): Promise<number> {
  const set = await ModelSet.open([path]);
  let sum = 0;
  for (const t of set.tensors) for (const b of await set.fileOf(t).readPayload(t)) sum += b;
  await set.close();
  return sum;
}

interface RunJson {
  outputs: { name: string; first: number[]; shape: number[]; topK?: { index: number; value: number }[][] }[];
  timing: { runs: number; batch: number };
  comparison: { name: string; passed: boolean; minAtol: number | string; mismatches: number }[] | null;
}

describe('popef run with the ipu plugin (simulated SDK)', () => {
  it('opens the model through popef.Writer + ModelRunner and runs it', async () => {
    await inTempDir(async (dir) => {
      await writeFile(join(dir, 'x.json'), JSON.stringify([[1, 2, 3, 4]]));
      const r = await runCli(['run', fixture('weights/executable.popef'), '--input', `x=${join(dir, 'x.json')}`, '--json', '--iterations', '3'], {
        env: SIM,
      });
      assert.equal(r.code, 0, r.stderr);
      const report = JSON.parse(r.stdout) as RunJson;
      const s = 10 + (await storedByteSum(fixture('weights/executable.popef')));
      assert.deepEqual(report.outputs[0]?.first, [s, s + 1, s + 2]);
      assert.equal(report.timing.runs, 3);
    });
  });

  it('refuses an input of the wrong dtype or shape before running, naming input, expected and actual', async () => {
    await inTempDir(async (dir) => {
      await writeFile(join(dir, 'x.npy'), writeNpy(fromNumbers({ name: 'x', dtype: 'F64', shape: [1, 4] }, [1, 2, 3, 4])));
      const dtype = await runCli(['run', fixture('weights/executable.popef'), '--input', `x=${join(dir, 'x.npy')}`], { env: SIM });
      assert.equal(dtype.code, 2);
      assert.match(dtype.stderr, /input "x" is F64 \[1, 4\], but the model expects F32 \[1, 4\]/);
      await writeFile(join(dir, 'y.json'), JSON.stringify([[1, 2, 3]]));
      const shape = await runCli(['run', fixture('weights/executable.popef'), '--input', `x=${join(dir, 'y.json')}`], { env: SIM });
      assert.equal(shape.code, 2);
      assert.match(shape.stderr, /input "x": holds shape \[1, 3\], but the model expects \[1, 4\]/);
      const unknown = await runCli(['run', fixture('weights/executable.popef'), '--input', `nope=${join(dir, 'y.json')}`], { env: SIM });
      assert.match(unknown.stderr, /the model has no input "nope"; its inputs: "x" F32 \[1, 4\]/);
      const missing = await runCli(['run', fixture('weights/executable.popef')], { env: SIM });
      assert.match(missing.stderr, /input "x" \(F32 \[1, 4\]\) is not given/);
    });
  });

  it('refuses a --timeout or --duration that is not a positive number of seconds', async () => {
    for (const [flag, value] of [
      ['--timeout', '0'],
      ['--timeout', 'soon'],
      ['--duration', '-1'],
    ] as const) {
      const r = await runCli(['run', fixture('mnist/executable.popef'), '--random', flag, value], { env: SIM });
      assert.equal(r.code, 2, `${flag} ${value}`);
      assert.match(r.stderr, new RegExp(`${flag} "${value}" is not a positive number of seconds`));
    }
  });

  it('exits 2 naming what is missing when the SDK cannot be imported', async () => {
    const r = await runCli(['run', fixture('weights/executable.popef'), '--random'], { env: NO_SDK });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /plugin "ipu" cannot run here: the Poplar SDK's Python modules cannot be imported: popef \(No module named 'popef'\); model_runtime \(No module named 'model_runtime'\) \[E_PLUGIN_UNAVAILABLE\]\n {2}hint: enable the Poplar SDK/,
    );
  });

  it('names numpy apart from the SDK when it is numpy that does not import, with its own hint', async () => {
    await inTempDir(async (dir) => {
      // A numpy that fails to import, ahead of the simulated SDK on the path.
      await mkdir(join(dir, 'numpy'));
      await writeFile(join(dir, 'numpy/__init__.py'), 'raise ImportError("simulated: numpy is not installed")\n');
      const r = await runCli(['run', fixture('weights/executable.popef'), '--plugin', 'ipu', '--random'], {
        env: { ...SIM, PYTHONPATH: `${dir}:${fixture('sim-sdk')}` },
      });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /; numpy cannot be imported: simulated: numpy is not installed \[E_PLUGIN_UNAVAILABLE\]\n/);
      assert.match(r.stderr, /hint: [^\n]*install numpy into the interpreter that runs the bridge/);
    });
  });

  it('reports a bridge that dies mid-run, with exit 128 + the signal', async () => {
    const r = await runCli(['run', fixture('mnist/executable.popef'), '--random'], { env: { ...SIM, SIM_SDK_FAIL: 'crash-on-run' } });
    assert.equal(r.code, 128 + 11);
    assert.match(r.stderr, /plugin "ipu" died by signal SIGSEGV during run/);
  });

  it('stops a bridge that hangs, after --timeout', async () => {
    const started = Date.now();
    const r = await runCli(['run', fixture('mnist/executable.popef'), '--random', '--timeout', '1'], {
      env: { ...SIM, SIM_SDK_FAIL: 'hang-on-run' },
    });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /plugin "ipu" did not answer "run" within 1 s and was stopped \[E_TIMEOUT\]/);
    assert.ok(Date.now() - started < 15_000, 'the host must not wait for the child');
  });

  it("passes the runtime's own load error through", async () => {
    const r = await runCli(['run', fixture('mnist/executable.popef'), '--random'], { env: { ...SIM, SIM_SDK_FAIL: 'error-on-load' } });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /plugin "ipu": RuntimeError: simulated model_runtime: no IPU device is available/);
  });

  it('runs a Triton model directory with the client names of name_map.json', async () => {
    await inTempDir(async (dir) => {
      const s = await runCli([
        'scaffold',
        fixture('weights/executable.popef'),
        '-r',
        join(dir, 'repo'),
        '-m',
        'w',
        '--name',
        'x=pixels',
        '--name',
        'y=scores',
      ]);
      assert.equal(s.code, 0, s.stderr);
      await writeFile(join(dir, 'x.json'), JSON.stringify([[0, 0, 0, 1]]));
      const r = await runCli(['run', join(dir, 'repo/w'), '--input', `pixels=${join(dir, 'x.json')}`, '--json', '--top-k', '1'], { env: SIM });
      assert.equal(r.code, 0, r.stderr);
      const report = JSON.parse(r.stdout) as RunJson;
      assert.equal(report.outputs[0]?.name, 'scores');
      assert.equal(report.outputs[0].topK?.[0]?.[0]?.index, 2);
    });
  });

  it('says which --expect path is missing: the one file given, or the directory', async () => {
    await inTempDir(async (dir) => {
      const run = (expect: string) =>
        runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'cpu', '--random', '--expect', expect], { env: SIM });
      const file = await run(join(dir, 'typo.npy'));
      assert.equal(file.code, 2);
      assert.match(file.stderr, /typo\.npy: no expected values for output "softmax\/Softmax:0": the file does not exist \[E_IO\]/);
      const missingDir = await run(join(dir, 'outs'));
      assert.equal(missingDir.code, 2);
      assert.match(
        missingDir.stderr,
        /no expected values for output "softmax\/Softmax:0": [^\n]*outs is not a directory \[E_IO\]\n {2}hint: --expect takes the directory/,
      );
      const empty = await run(dir);
      assert.equal(empty.code, 2);
      assert.match(empty.stderr, /no expected values for output "softmax\/Softmax:0": softmax_Softmax_0\.npy is not in /);
    });
  });

  it('names a model of the repository when given the repository for a model directory', async () => {
    const r = await runCli(['run', 'repos/clean', '--random'], { cwd: FIXTURES, env: SIM });
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      `popef: error: ${join(FIXTURES, 'repos/clean')}: it is a model repository, not a model directory: mnist/config.pbtxt is a model's config [E_INVALID_INPUT]\n` +
        `  hint: give one of its models' directories, such as ${join(FIXTURES, 'repos/clean/mnist')}\n`,
    );
  });

  it('saves outputs as .npy, compares with --expect, and reports the smallest passing tolerance', async () => {
    await inTempDir(async (dir) => {
      const model = fixture('weights/executable.popef');
      const saved = await runCli(['run', model, '--random', '--seed', '5', '--save-outputs', join(dir, 'golden')], { env: SIM });
      assert.equal(saved.code, 0, saved.stderr);
      const golden = readNpy(await readFile(join(dir, 'golden/y.npy')), 'y.npy');
      assert.deepEqual(golden.shape, [1, 3]);
      const same = await runCli(['run', model, '--random', '--seed', '5', '--expect', join(dir, 'golden'), '--json'], { env: SIM });
      assert.equal(same.code, 0, same.stderr);
      assert.equal((JSON.parse(same.stdout) as RunJson).comparison?.[0]?.passed, true);
      // Shift the expectation by exactly 0.5: the smallest passing atol (rtol 0) is 0.5.
      const shifted = toNumbers(golden).map((v) => v + 0.5);
      await writeFile(join(dir, 'shifted.npy'), writeNpy(fromNumbers({ name: 'y', dtype: 'F32', shape: [1, 3] }, shifted)));
      const differ = await runCli(['run', model, '--random', '--seed', '5', '--expect', join(dir, 'shifted.npy'), '--rtol', '0', '--json'], {
        env: SIM,
      });
      assert.equal(differ.code, 1);
      const c = (JSON.parse(differ.stdout) as RunJson).comparison?.[0];
      assert.ok(c !== undefined);
      assert.equal(c.passed, false);
      assert.equal(c.mismatches, 3);
      assert.equal(c.minAtol, 0.5);
      const loose = await runCli(['run', model, '--random', '--seed', '5', '--expect', join(dir, 'shifted.npy'), '--rtol', '0', '--atol', 'y=0.5'], {
        env: SIM,
      });
      assert.equal(loose.code, 0, loose.stdout);
      assert.match(loose.stdout, /All outputs match\./);
      const again = await runCli(['run', model, '--random', '--seed', '5', '--save-outputs', join(dir, 'golden')], { env: SIM });
      assert.equal(again.code, 2, 'no overwrite without --force');
    });
  });
});

describe('popef run --json', () => {
  it('fits schemas/run.schema.json: without a comparison, with one that fails, and with values JSON cannot hold', async () => {
    await inTempDir(async (dir) => {
      const reports: unknown[] = [];
      const json = async (args: string[], env?: Record<string, string>): Promise<Record<string, unknown>> => {
        const r = await runCli([...args, '--json'], { cwd: dir, ...(env === undefined ? {} : { env }) });
        assert.ok(r.code === 0 || r.code === 1, r.stderr);
        const report = JSON.parse(r.stdout) as Record<string, unknown>;
        assert.deepEqual(schemaErrors('run', report), []);
        reports.push(report);
        return report;
      };
      const model = fixture('weights/executable.popef');
      await json(['run', model, '--random', '--top-k', '2', '--iterations', '3', '--warmup', '1'], SIM);
      await runCli(['run', model, '--random', '--seed', '1', '--save-outputs', join(dir, 'golden')], { env: SIM });
      const failed = await json(['run', model, '--random', '--seed', '2', '--expect', join(dir, 'golden'), '--rtol', '0'], SIM);
      assert.equal((failed.comparison as { passed: boolean }[])[0]?.passed, false);
      // An in-process plugin whose output holds NaN and infinities, compared with saved zeros.
      await writeFile(
        join(dir, 'odd.mjs'),
        `export default { name: 'odd', probe: async () => ({ available: true }), dispose: async () => {},
  open: async () => ({ inputs: [{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }], outputs: [{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] }], close: async () => {},
    run: async () => new Map([['softmax/Softmax:0', { name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10], data: new Uint8Array(new Float32Array([NaN, Infinity, -Infinity, 0, 0, 0, 0, 0, 0, 0]).buffer) }]]) }) };\n`,
      );
      await writeFile(join(dir, 'zeros.npy'), writeNpy(fromNumbers({ name: 'y', dtype: 'F32', shape: [1, 10] }, new Float64Array(10))));
      const odd = await json(['run', fixture('mnist/executable.popef'), '--plugin', './odd.mjs', '--random', '--expect', join(dir, 'zeros.npy')]);
      const outputs = odd.outputs as { first: unknown[] }[];
      assert.deepEqual(outputs[0]?.first.slice(0, 3), ['NaN', 'Infinity', '-Infinity']);
      // The schema is not vacuous: a report with a field it does not know fails it.
      assert.notDeepEqual(schemaErrors('run', { ...odd, extra: 1 }), []);
      assert.equal(reports.length, 3);
    });
  });
});

describe('popef run with other plugins', () => {
  it('loads an in-process ES module plugin', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      await writeFile(
        join(dir, 'plugin.mjs'),
        `export default {
  name: 'fixed',
  async probe() { return { available: true }; },
  async open() {
    return {
      inputs: [{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }],
      outputs: [{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] }],
      async run() {
        const data = new Float32Array(10); data[3] = 0.9; data[8] = 0.1;
        return new Map([['softmax/Softmax:0', { name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10], data: new Uint8Array(data.buffer) }]]);
      },
      async close() {},
    };
  },
  async dispose() {},
};
`,
      );
      const r = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', './plugin.mjs', '--random', '--top-k', '2'], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /Top 2 of softmax\/Softmax:0: 3 \(0\.9\), 8 \(0\.1\)/);
    } finally {
      await cleanup();
    }
  });

  it("refuses an out-of-process plugin whose outputs are not the model's, and saves those of one whose are", async () => {
    await inTempDir(async (dir) => {
      // The echo plugin's default answer names its outputs after the inputs: not the model's anchors.
      const echo = await runCli(['run', fixture('bert/executable.popef'), '--plugin', ECHO, '--random', '--save-outputs', dir], {
        env: process.env as Record<string, string>,
      });
      assert.equal(echo.code, 2);
      assert.match(echo.stderr, /plugin "[^"]*echo-plugin" declares an output "input:echo" that the model does not have \[E_PLUGIN\]/);
      assert.deepEqual(await readdir(dir), []);
      const zeros = await runCli(['run', fixture('bert/executable.popef'), '--plugin', ECHO, '--random', '--seed', '9', '--save-outputs', dir], {
        env: { ...(process.env as Record<string, string>), ECHO_PLUGIN_MODE: 'zeros' },
      });
      assert.equal(zeros.code, 0, zeros.stderr);
      const saved = (await readdir(dir)).sort();
      assert.ok(saved.length > 0 && saved.every((f) => f.endsWith('.npy')), saved.join());
      for (const f of saved) assert.ok(toNumbers(readNpy(await readFile(join(dir, f)), f)).every((v) => v === 0));
    });
  });

  it('reports a plugin that breaks the protocol or speaks another version', async () => {
    const garbage = await runCli(['run', fixture('bert/executable.popef'), '--plugin', ECHO, '--random'], {
      env: { ...process.env, ECHO_PLUGIN_MODE: 'garbage' },
    });
    assert.equal(garbage.code, 2);
    assert.match(garbage.stderr, /broke the protocol: expected a JSON frame/);
    const old = await runCli(['run', fixture('bert/executable.popef'), '--plugin', ECHO, '--random'], {
      env: { ...process.env, ECHO_PLUGIN_MODE: 'old' },
    });
    assert.match(old.stderr, /speaks "popef-plugin\/0", not popef-plugin\/1/);
  });

  it('refuses plugin paths that do not exist', async () => {
    const nope = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', './nope.js', '--random'], { cwd: FIXTURES });
    assert.match(nope.stderr, /plugin \.\/nope\.js does not exist/);
  });
});

describe('plugin host', () => {
  it('leaves no listener on the abort signal behind, however many requests it makes', async () => {
    const { EventEmitter } = await import('node:events');
    const { ipuPlugin } = await import('../../src/run/load-plugin.js');
    const controller = new AbortController();
    const plugin = ipuPlugin({ cwd: ROOT, env: SIM, signal: controller.signal });
    try {
      const model = await plugin.open({ files: [fixture('mnist/executable.popef')], executable: '5230962391836378370', options: {} });
      const baseline = EventEmitter.getEventListeners(controller.signal, 'abort').length;
      const input = fromNumbers({ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }, new Float64Array(784));
      for (let i = 0; i < 20; i++) await model.run(new Map([['input', input]]));
      assert.equal(EventEmitter.getEventListeners(controller.signal, 'abort').length, baseline);
    } finally {
      await plugin.dispose();
    }
  });

  it('stops the child and rejects at once when aborted (Ctrl-C)', async () => {
    const { ipuPlugin } = await import('../../src/run/load-plugin.js');
    const controller = new AbortController();
    const plugin = ipuPlugin({ cwd: ROOT, env: { ...SIM, SIM_SDK_FAIL: 'hang-on-run' }, signal: controller.signal });
    try {
      const model = await plugin.open({ files: [fixture('mnist/executable.popef')], executable: '5230962391836378370', options: {} });
      const started = Date.now();
      setTimeout(() => controller.abort(), 200);
      const input = fromNumbers({ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }, new Float64Array(784));
      await assert.rejects(model.run(new Map([['input', input]])), /interrupted; the plugin was stopped/);
      assert.ok(Date.now() - started < 5000);
    } finally {
      await plugin.dispose();
    }
  });
});
