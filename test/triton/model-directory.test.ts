import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { describe, it } from 'node:test';
import { PopefError } from '../../src/errors.js';
import { resolveTarget } from '../../src/run/model-target.js';
import type { ExecutionPlugin } from '../../src/run/plugin-api.js';
import { ModelRepository } from '../../src/serve/model-repository.js';
import type { ModelConfig } from '../../src/triton/model-config.js';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';
import { printPbtxt } from '../../src/triton/pbtxt-printer.js';
import { readModelDirectory, selectVersions, sortPopefFiles, versionVerdict } from '../../src/triton/repository/model-directory.js';
import { validateRepository } from '../../src/triton/repository/validate.js';
import { FIXTURES, inTempDir } from '../helpers.js';

describe('model-directory: version directories as Triton reads them', () => {
  it('gives each name its verdict (std::stoll reads a numeric prefix; leading zeros are ignored)', () => {
    assert.deepEqual(['1', '0', '01', 'abc', '3rc', '-2'].map(versionVerdict), [
      { dir: '1', verdict: 'version', version: 1 },
      { dir: '0', verdict: 'version', version: 0 },
      { dir: '01', verdict: 'leading-zeros' },
      { dir: 'abc', verdict: 'not-a-number' },
      { dir: '3rc', verdict: 'numeric-prefix', version: 3 },
      { dir: '-2', verdict: 'numeric-prefix', version: -2 },
    ]);
  });

  it('selects latest N (1 without a policy), all, or the specific versions present, highest first', () => {
    const candidates = ['2', '10', '1', 'x'].map(versionVerdict);
    const dirs = (policy: Parameters<typeof selectVersions>[1]): string[] => selectVersions(candidates, policy).map((c) => c.dir);
    assert.deepEqual(dirs(undefined), ['10']);
    assert.deepEqual(dirs({ latest: { num_versions: 2 } }), ['10', '2']);
    assert.deepEqual(dirs({ latest: {} }), []);
    assert.deepEqual(dirs({ all: {} }), ['10', '2', '1']);
    assert.deepEqual(dirs({ specific: { versions: [1, 7] } }), ['1']);
  });

  it('orders PopEF files executable.popef first, then by name, and leaves other files out', () => {
    assert.deepEqual(sortPopefFiles(['b.popef', 'name_map.json', 'a.popef', 'executable.popef']), ['executable.popef', 'a.popef', 'b.popef']);
  });

  it('lists the model directory by the path as given, which the kernel resolves: a ".." after a missing directory is not skipped', async () => {
    await inTempDir(async (dir) => {
      await cp(join(FIXTURES, 'repos/clean/mnist'), join(dir, 'mnist'), { recursive: true });
      // Not join: it would take "missing/.." out lexically.
      for (const given of [`${dir}/missing/../mnist`, `${dir}/missing//`]) {
        await assert.rejects(readModelDirectory(given, 'mnist'), (e: unknown) => e instanceof PopefError && e.file === given, given);
      }
      assert.equal((await readModelDirectory(`${dir}//mnist/`, 'mnist')).selected[0]?.dir, '1');
    });
  });
});

/** The clean fixture with a second version directory and the given version policy. */
async function twoVersions(dir: string, policy: ModelConfig['version_policy']): Promise<string> {
  const repo = join(dir, 'repo');
  await cp(join(FIXTURES, 'repos/clean'), repo, { recursive: true });
  await cp(join(repo, 'mnist/1'), join(repo, 'mnist/2'), { recursive: true });
  const path = join(repo, 'mnist/config.pbtxt');
  const config = parsePbtxt(await readFile(path, 'utf8')).message;
  await writeFile(path, printPbtxt({ ...config, version_policy: policy }, { tritonVersion: 'latest' }));
  return repo;
}

/** A plugin double that records the files each opened model was given. */
function recordingPlugin(opened: string[][]): ExecutionPlugin {
  return {
    name: 'recorder',
    probe: () => Promise.resolve({ available: true }),
    dispose: () => Promise.resolve(),
    open: (request) => {
      opened.push([...request.files]);
      return Promise.resolve({
        inputs: [{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }],
        outputs: [{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] }],
        run: () => Promise.resolve(new Map()),
        close: () => Promise.resolve(),
      });
    },
  };
}

describe('validate, run and serve agree on the versions a policy selects', () => {
  it('specific: { versions: [1] } with 1/ and 2/ present: validated, resolved and served as version 1', async () => {
    await inTempDir(async (dir) => {
      const repo = await twoVersions(dir, { specific: { versions: [1] } });
      assert.deepEqual(
        (await readModelDirectory(join(repo, 'mnist'), 'mnist')).selected.map((v) => v.version),
        [1],
      );
      const report = await validateRepository(repo);
      assert.deepEqual(report.models[0]?.findings, []);
      assert.deepEqual(report.models[0].versions, [1]);
      const target = await resolveTarget([join(repo, 'mnist')], dir);
      assert.equal(target.version, 1);
      assert.ok(
        target.files.every((f) => f.includes(`${sep}1${sep}`)),
        target.files.join(),
      );
      // Asked for by number, a version the policy leaves out still runs.
      assert.equal((await resolveTarget([join(repo, 'mnist')], dir, 2)).version, 2);
      const opened: string[][] = [];
      const served = new ModelRepository();
      await served.load([repo], { createPlugin: () => Promise.resolve(recordingPlugin(opened)) });
      try {
        assert.deepEqual(
          served.list().map((m) => [m.name, m.version, m.state]),
          [['mnist', '1', 'READY']],
        );
        assert.equal(served.get('mnist', '').version, '1');
        assert.ok(
          opened.flat().every((f) => f.includes(`${sep}1${sep}`)),
          opened.flat().join(),
        );
      } finally {
        await served.close();
      }
    });
  });

  it('all: {}: every version served; no version is the highest ready one, and -1 is refused as Triton refuses it', async () => {
    await inTempDir(async (dir) => {
      const repo = await twoVersions(dir, { all: {} });
      assert.deepEqual((await validateRepository(repo)).models[0]?.versions, [2, 1]);
      assert.equal((await resolveTarget([join(repo, 'mnist')], dir)).version, 2);
      const served = new ModelRepository();
      await served.load([repo], { createPlugin: () => Promise.resolve(recordingPlugin([])) });
      try {
        assert.deepEqual(
          served.list().map((m) => [m.version, m.state]),
          [
            ['1', 'READY'],
            ['2', 'READY'],
          ],
        );
        assert.equal(served.get('mnist', '').version, '2');
        // Triton's frontends refuse an explicit -1 (common.cc GetModelVersionFromString: negative versions); only an empty one is the latest.
        assert.throws(() => served.get('mnist', '-1'), /invalid model version specified '-1' , version should be an integral value > 0/);
        assert.equal(served.get('mnist', '1').version, '1');
        assert.throws(() => served.get('mnist', '3'), /Request for unknown model: 'mnist' version 3 is not found/);
      } finally {
        await served.close();
      }
    });
  });
});
