// The package as a user installs it: .ci/run packs it and installs the
// tarball into an empty project (.install-test/project) with
// ONNXRUNTIME_NODE_INSTALL=skip; here the installed `popef` runs the seed's
// workflow: dump, scaffold, and the cpu plugin on the MNIST images. Skipped
// where that install was not made, except under CI=true.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, fixture, inTempDir } from '../helpers.js';

const PROJECT = join(ROOT, '.install-test', 'project');
const BIN = join(PROJECT, 'node_modules', '.bin', 'popef');
const missing = existsSync(BIN) ? undefined : 'the packed package is not installed (.ci/run installs it into .install-test/)';

function popef(args: readonly string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(BIN, [...args], { cwd, encoding: 'utf8', timeout: 120_000, env: { ...process.env, NO_COLOR: '1' } });
}

describe('the installed package', { skip: process.env.CI === 'true' ? false : missing }, () => {
  it('runs the seed workflow, the cpu plugin included, from its own node_modules', async () => {
    await inTempDir((dir) => {
      const dump = popef(['dump', '--user-anchors', fixture('mnist/executable.popef')], dir);
      assert.equal(dump.status, 0, dump.stderr);
      assert.match(dump.stdout, /Name: "softmax\/Softmax:0"/);
      const scaffold = popef(
        [
          'scaffold',
          fixture('mnist/executable.popef'),
          '-r',
          'models',
          '-m',
          'mnist',
          '--name',
          'input=digit_image',
          '--name',
          'softmax/Softmax:0=output_labels',
        ],
        dir,
      );
      assert.equal(scaffold.status, 0, scaffold.stderr);
      for (let n = 0; n < 10; n++) {
        const run = popef(
          ['run', 'models/mnist', '--plugin', 'cpu', '--input', `digit_image=${fixture(`mnist/img/${n}.png`)}`, '--top-k', '1', '--json'],
          dir,
        );
        assert.equal(run.status, 0, run.stderr);
        const report = JSON.parse(run.stdout) as { outputs: { topK: { index: number }[][] }[] };
        assert.equal(report.outputs[0]?.topK[0]?.[0]?.index, n);
      }
      // The onnxruntime-node it uses is the installed project's, not this repository's.
      const which = spawnSync(process.execPath, ['-e', "console.log(require.resolve('onnxruntime-node'))"], { cwd: PROJECT, encoding: 'utf8' });
      assert.match(which.stdout, new RegExp(`^${PROJECT.replace(/[/.]/g, '\\$&')}/node_modules/onnxruntime-node/`));
      return Promise.resolve();
    });
  });
});
