// The IPU bridge against the strict simulated SDK (fixtures/sim-sdk) in
// each release variant from 3.0 to 3.4 (POPEF_SIM_SDK_VERSION): run,
// export and import work in every one; the surface is strict (a dict
// passed to execute, an option read as an attribute, a writer on a file
// that does not exist fail as the real SDK is expected to); and an import
// that fails at any stage leaves no output.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, fixture, inTempDir, runCli } from '../helpers.js';

const PYTHON = process.env.POPEF_PYTHON ?? 'python3';
const hasNumpy = spawnSync(PYTHON, ['-c', 'import numpy']).status === 0;
// Under CI=true these run, and fail, without numpy: .ci/run installs it.
const skip = hasNumpy || process.env.CI === 'true' ? false : `${PYTHON} has no numpy (bash .ci/run installs it; set POPEF_PYTHON)`;
// -no-inferred: bindings without the inferred calls a model without feeds can do without (fixtures/sim-sdk/README.md).
const VERSIONS = ['3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.4.0', '3.2.0-no-inferred', '3.4.0-no-inferred'];

function sim(version: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...(process.env as Record<string, string>), PYTHONPATH: fixture('sim-sdk'), POPEF_SIM_SDK_VERSION: version, ...extra };
}

/** Runs Python against the simulated SDK and returns its stdout (asserting success). */
function py(code: string, version = '3.4.0'): string {
  const r = spawnSync(PYTHON, ['-c', code], { env: sim(version), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

describe('the IPU bridge in every simulated SDK release', { skip }, () => {
  for (const version of VERSIONS) {
    it(`SDK ${version}: run, export and import`, async () => {
      const env = sim(version);
      const run = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'ipu', '--random', '--json'], { env });
      assert.equal(run.code, 0, run.stderr);
      const report = JSON.parse(run.stdout) as { outputs: { name: string; shape: number[]; dtype: string }[] };
      assert.deepEqual(
        report.outputs.map((o) => [o.name, o.dtype, o.shape]),
        [['softmax/Softmax:0', 'F32', [1, 10]]],
      );
      await inTempDir(async (dir) => {
        const sdkFile = join(dir, 'sdk.popef');
        const back = join(dir, 'back.popef');
        const exported = await runCli(['export', fixture('bert/executable.popef'), '-o', sdkFile], { env });
        assert.equal(exported.code, 0, exported.stderr);
        const imported = await runCli(['import', sdkFile, '-o', back], { env });
        assert.equal(imported.code, 0, imported.stderr);
        if (version.endsWith('-no-inferred')) {
          // The getters' fallbacks: the defaults, each said.
          assert.deepEqual(
            imported.stderr.split('\n').filter((l) => l !== ''),
            ['isPOD (read as false)', 'numProcesses (read as 1)', 'seedHandle (read as "")'].map((what) => {
              const [field, read] = what.split(' (');
              return `popef: warning: this SDK (release ${version}) has no Metadata.${field ?? ''} (its Python spelling is inferred from the C++ API): ${(read ?? '').replace(/\)$/, '')}`;
            }),
          );
        } else assert.equal(imported.stderr, '');
        const dump = await runCli(['dump', back, '--json']);
        const md = (
          JSON.parse(dump.stdout) as { models: { metadata: { deviceIterations: number; engineOptions: { name: string; value: string }[] } }[] }
        ).models[0]?.metadata;
        const original = (
          JSON.parse((await runCli(['dump', fixture('bert/executable.popef'), '--json'])).stdout) as {
            models: { metadata: { deviceIterations: number; engineOptions: unknown[] } }[];
          }
        ).models[0]?.metadata;
        // Options survive everywhere (read through name()/value()); deviceIterations only where the SDK has it.
        assert.deepEqual(md?.engineOptions, original?.engineOptions);
        const modern = version >= '3.3';
        assert.equal(md?.deviceIterations, modern ? original?.deviceIterations : 1);
        if (!modern)
          assert.match(
            exported.stderr,
            /popef: warning: this SDK \(release 3\.\d\.0(-no-inferred)?\) has no Metadata.setDeviceIterations \(SDK 3.3 and later\): deviceIterations 16 is not stored/,
          );
        else assert.equal(exported.stderr, '');
      });
    });
  }

  it('exposes deviceIterations only from 3.3, and nothing the SDK-API list lacks', () => {
    assert.equal(py('import popef; print(hasattr(popef.Metadata, "deviceIterations"))', '3.2.0'), 'False');
    assert.equal(py('import popef; print(hasattr(popef.Metadata, "deviceIterations"))', '3.3.0'), 'True');
    for (const missing of ['setAnchors', 'setEngineOptions', 'setProgramsMap', 'anythingElse']) {
      assert.equal(py(`import popef; print(hasattr(popef.Metadata(), "${missing}"))`), 'False', missing);
    }
  });

  it('refuses what the real SDK is not known to accept', () => {
    const fails = (code: string, pattern: RegExp): void => {
      const r = spawnSync(PYTHON, ['-c', code], { env: sim('3.4.0'), encoding: 'utf8' });
      assert.notEqual(r.status, 0, code);
      assert.match(r.stderr, pattern);
    };
    // A file the simulated writer made, to load.
    const make = (path: string): string =>
      [
        'import popef',
        `open(${JSON.stringify(path)}, "wb").close()`,
        `w = popef.Writer(${JSON.stringify(path)})`,
        'm = popef.Metadata(); m.setExecutable("e")',
        'f = popef.ProgramFlow(); f.setMain([1]); m.setProgramFlow(f)',
        'a = popef.Anchor(); a.setName("x"); a.setType(popef.TensorType.INPUT); a.setPrograms([1])',
        't = popef.TensorInfo(); t.setDataType(popef.DataType.F32); t.setShape([2]); a.setTensorInfo(t)',
        'm.anchors().append(a)',
        'w.writeMetadata(m); w.createExecutable("e", False).write(b"x", 1); w.close()',
      ].join('\n');
    const path = join(ROOT, 'node_modules', '.popef-sim-sdk-test.popef');
    py(make(path));
    fails(
      `import model_runtime\nr = model_runtime.ModelRunner(${JSON.stringify(path)})\nr.execute({"x": None})`,
      /TypeError: execute\(\): incompatible function arguments/,
    );
    fails(
      'import model_runtime\nmodel_runtime.DeviceWaitConfig(model_runtime.DeviceWaitStrategy.WAIT_WITH_TIMEOUT, 60.0, 1.0)',
      /TypeError: .*timeout must be a datetime.timedelta/,
    );
    fails('import popef\npopef.Writer("/nonexistent-dir/x.popef")', /create the file first/);
    fails('import popef\no = popef.Option("a", "b")\nimport json\njson.dumps(o.name)', /not JSON serializable/);
    assert.equal(py('import popef\no = popef.Option("a", "b")\nprint(o.name(), o.value())'), 'a b');
    fails('import popef\npopef.Metadata().setAnchors([])', /AttributeError/);
    // Outputs are byte buffers, not arrays of values.
    assert.equal(
      py(
        `import model_runtime, numpy\nr = model_runtime.ModelRunner(${JSON.stringify(path)})\nv = model_runtime.InputMemoryView()\nv["x"] = numpy.zeros(2, dtype=numpy.float32)\nprint(type(r.execute(v)).__name__)`,
      ),
      'dict',
    );
  });
});

describe('a simulated release without the inferred calls, on a model with feeds', { skip }, () => {
  const env = sim('3.4.0-no-inferred');

  it('runs it (feeds are not written for a run) and imports a file that holds feeds', async () => {
    const run = await runCli(['run', fixture('feed/executable.popef'), '--plugin', 'ipu', '--random', '--json'], { env });
    assert.equal(run.code, 0, run.stderr);
    await inTempDir(async (dir) => {
      const sdkFile = join(dir, 'sdk.popef');
      assert.equal((await runCli(['export', fixture('feed/executable.popef'), '-o', sdkFile], { env: sim('3.4.0') })).code, 0);
      const back = join(dir, 'back.popef');
      const imported = await runCli(['import', sdkFile, '-o', back], { env });
      assert.equal(imported.code, 0, imported.stderr);
      const dump = JSON.parse((await runCli(['dump', back, '--json'])).stdout) as { blobs: { type: string }[] };
      assert.ok(
        dump.blobs.some((b) => b.type === 'DATA_FEED'),
        'the feed came through',
      );
    });
  });

  it('refuses to export it before writing anything, naming FeedDataInfo as inferred and unverified', async () => {
    await inTempDir(async (dir) => {
      const out = join(dir, 'sdk.popef');
      const r = await runCli(['export', fixture('feed/executable.popef'), '-o', out], { env });
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /this Poplar SDK \(release 3\.4\.0-no-inferred\) has no popef\.FeedDataInfo \(inferred from the C\+\+ API: its Python spelling is unverified\), popef\.FeedDataInfo\.setName .*which the bridge needs for this/,
      );
      assert.deepEqual(await readdir(dir), [], 'no output and no temporary file');
    });
  });
});

describe('each operation needs only the calls it makes for the model at hand', { skip }, () => {
  it('an SDK without Writer.createFeedData: run of a model with feeds and export of one without work, export with feeds stops naming it', async () => {
    const env = sim('3.4.0', { POPEF_SIM_SDK_DROP: 'popef.Writer.createFeedData' });
    const run = await runCli(['run', fixture('feed/executable.popef'), '--plugin', 'ipu', '--random'], { env });
    assert.equal(run.code, 0, run.stderr);
    await inTempDir(async (dir) => {
      const ok = await runCli(['export', fixture('mnist/executable.popef'), '-o', join(dir, 'mnist.popef')], { env });
      assert.equal(ok.code, 0, ok.stderr);
      const refused = await runCli(['export', fixture('feed/executable.popef'), '-o', join(dir, 'feed.popef')], { env });
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /this Poplar SDK \(release 3\.4\.0\) has no popef\.Writer\.createFeedData, which the bridge needs for this/);
      assert.deepEqual(await readdir(dir), ['mnist.popef']);
    });
  });

  it('an SDK without Writer.createOpaqueBlob: a model with opaque blobs does not run, one without does', async () => {
    const env = sim('3.4.0', { POPEF_SIM_SDK_DROP: 'popef.Writer.createOpaqueBlob' });
    const without = await runCli(['run', fixture('bert/executable.popef'), '--plugin', 'ipu', '--random'], { env });
    assert.equal(without.code, 0, without.stderr);
    const withOpaque = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'ipu', '--random'], { env });
    assert.equal(withOpaque.code, 2);
    assert.match(withOpaque.stderr, /has no popef\.Writer\.createOpaqueBlob, which the bridge needs for this/);
  });
});

describe('popef import leaves nothing when the SDK fails at any stage', { skip }, () => {
  for (const stage of ['metadata', 'executable', 'tensor', 'feed', 'opaque']) {
    it(`the SDK's reader fails on the ${stage}`, async () => {
      await inTempDir(async (dir) => {
        const sdkFile = join(dir, 'sdk.popef');
        // A model with every kind of blob.
        const source = fixture(
          stage === 'feed' ? 'feed/executable.popef' : stage === 'opaque' || stage === 'tensor' ? 'mnist/executable.popef' : 'bert/executable.popef',
        );
        const exported = await runCli(['export', source, '-o', sdkFile], { env: sim('3.4.0') });
        assert.equal(exported.code, 0, exported.stderr);
        const before = await readdir(dir);
        const r = await runCli(['import', sdkFile, '-o', join(dir, 'out.popef')], { env: sim('3.4.0', { SIM_SDK_FAIL: `error-on-read:${stage}` }) });
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, new RegExp(`the ${stage} blob cannot be read`));
        assert.deepEqual(await readdir(dir), before, 'no output and no temporary file left');
      });
    });
  }
});

describe('the IPU bridge receiving large inputs', { skip }, () => {
  it("reuses a large input's receive buffer from run to run without mixing runs up, and takes lent output buffers", async () => {
    const { PopefWriter } = await import('../../src/format/writer.js');
    const { emptyMetadata } = await import('../../src/schema/model.js');
    const { ipuPlugin } = await import('../../src/run/load-plugin.js');
    await inTempDir(async (dir) => {
      const path = join(dir, 'big-input.popef');
      const w = await PopefWriter.create(path);
      await w.writeExecutable('e', new Uint8Array(16));
      const shape = [1, 1024, 1024];
      await w.writeMetadata({
        ...emptyMetadata('e'),
        programFlow: { load: [], main: [5], save: [] },
        anchors: [
          { name: 'x', handle: 'h2d_x', tensorInfo: { dtype: 'F32', shape }, isPerReplica: false, type: 'INPUT', programs: [5] },
          {
            name: 'y',
            handle: 'anchor_d2h_y',
            tensorInfo: { dtype: 'F32', shape: [2, 1024, 1024] },
            isPerReplica: false,
            type: 'OUTPUT',
            programs: [5],
          },
        ],
      });
      await w.close();
      const plugin = ipuPlugin({ cwd: ROOT, env: sim('3.4.0') });
      try {
        const model = await plugin.open({ files: [path], executable: 'e', options: {} });
        let lent: Map<string, Uint8Array> | undefined;
        for (const v of [1, 2, 3]) {
          const data = new Uint8Array(new Float32Array(1 << 20).fill(v).buffer);
          const out = await model.run(new Map([['x', { name: 'x', dtype: 'F32', shape, data }]]), lent === undefined ? undefined : { into: lent });
          const y = out.get('y');
          assert.ok(y !== undefined);
          if (lent !== undefined) assert.equal(y.data.buffer, lent.get('y')?.buffer, 'the output was not received into the lent buffer');
          // The simulated runtime's output element i is the sum of the inputs plus i.
          const values = new Float32Array(y.data.buffer, y.data.byteOffset, y.data.byteLength / 4);
          assert.deepEqual([values[0], values[5]], [v * (1 << 20), v * (1 << 20) + 5], `run ${v} saw another run's input`);
          lent = new Map([['y', y.data]]);
        }
        await model.close();
      } finally {
        await plugin.dispose();
      }
    });
  });
});
