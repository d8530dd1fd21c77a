// The guard every plugin is wrapped in (src/run/guarded-plugin.ts): when the
// caller passes the model's tensors (ModelRequest.tensors, as popef run and
// popef serve do), the plugin is checked against them and the files are not
// read again; without them, the guard reads the files.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { guardPlugin } from '../../src/run/guarded-plugin.js';
import type { ExecutionPlugin, ModelTensors, TensorSpec } from '../../src/run/plugin-api.js';
import { fixture } from '../helpers.js';

const INPUT: TensorSpec = { name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] };
const OUTPUT: TensorSpec = { name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] };

/** A plugin that declares `declared` and opens anything, files or none. */
function declaring(declared: ModelTensors): ExecutionPlugin {
  return {
    name: 'declaring',
    probe: () => Promise.resolve({ available: true }),
    open: () => Promise.resolve({ ...declared, run: () => Promise.resolve(new Map()), close: () => Promise.resolve() }),
    dispose: () => Promise.resolve(),
  };
}

describe('the plugin guard', () => {
  it('checks the plugin against the tensors the caller read, without reading the files', async () => {
    const tensors = { inputs: [INPUT], outputs: [OUTPUT] };
    const opened = await guardPlugin(declaring(tensors)).open({ files: ['/no/such/file.popef'], executable: 'x', options: {}, tensors });
    assert.deepEqual(opened.inputs, [INPUT]);
    await assert.rejects(
      guardPlugin(declaring({ inputs: [{ ...INPUT, dtype: 'S8' }], outputs: [OUTPUT] })).open({
        files: ['/no/such/file.popef'],
        executable: 'x',
        options: {},
        tensors,
      }),
      /plugin "declaring" declares input "input" as S8 \[1, 1, 28, 28\], but the model's anchor is F32 \[1, 1, 28, 28\]/,
    );
  });

  it('reads the files for the tensors when the caller gives none', async () => {
    const files = [fixture('mnist/executable.popef')];
    const opened = await guardPlugin(declaring({ inputs: [INPUT], outputs: [OUTPUT] })).open({
      files,
      executable: '5230962391836378370',
      options: {},
    });
    assert.deepEqual(opened.outputs, [OUTPUT]);
    await assert.rejects(
      guardPlugin(declaring({ inputs: [INPUT], outputs: [] })).open({ files, executable: '5230962391836378370', options: {} }),
      /does not declare the model's outputs "softmax\/Softmax:0"/,
    );
    await assert.rejects(
      guardPlugin(declaring({ inputs: [INPUT], outputs: [OUTPUT] })).open({ files: ['/no/such/file.popef'], executable: 'x', options: {} }),
      /ENOENT/,
    );
  });
});
