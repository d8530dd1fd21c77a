import assert from 'node:assert/strict';
import { chmod, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PopefWriter, emptyMetadata } from '../../src/index.js';
import { parseNameMap } from '../../src/triton/name-map.js';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';
import { ROOT, fixture, inTempDir, runCli } from '../helpers.js';
import { spawnPopef } from '../hostile/spawn-popef.js';

const EXAMPLES = join(ROOT, 'fixtures/graphcore-examples');
const SEED_NAMES = ['--name', 'input=digit_image', '--name', 'softmax/Softmax:0=output_labels'];

async function listTree(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String).sort();
}

describe('popef scaffold: the seed acceptance', () => {
  it("produces the seed's repository: name_map.json and config.pbtxt", async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['scaffold', fixture('mnist/executable.popef'), '--repository', join(dir, 'OUT'), '--model', 'mnist', ...SEED_NAMES]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await listTree(join(dir, 'OUT')), [
        'mnist',
        'mnist/1',
        'mnist/1/executable.popef',
        'mnist/1/name_map.json',
        'mnist/config.pbtxt',
      ]);
      assert.deepEqual(JSON.parse(await readFile(join(dir, 'OUT/mnist/1/name_map.json'), 'utf8')), {
        input: 'digit_image',
        'softmax/Softmax:0': 'output_labels',
      });
      const config = parsePbtxt(await readFile(join(dir, 'OUT/mnist/config.pbtxt'), 'utf8')).message;
      assert.equal(config.name, 'mnist');
      assert.equal(config.backend, 'poplar');
      assert.equal(config.max_batch_size, 1);
      assert.deepEqual(config.input, [{ name: 'digit_image', data_type: 'TYPE_FP32', dims: [1, 28, 28] }]);
      assert.deepEqual(config.output, [{ name: 'output_labels', data_type: 'TYPE_FP32', dims: [10] }]);
      assert.ok((await readFile(join(dir, 'OUT/mnist/1/executable.popef'))).equals(await readFile(fixture('mnist/executable.popef'))));
      assert.match(r.stdout, /tritonserver --model-repository .*OUT --backend-directory <backends>/);
      assert.match(r.stdout, /\n {2}popef serve \S*OUT\n/);
      assert.match(r.stdout, /<backends>\/poplar\/libtriton_poplar\.so/);
    });
  });
});

describe('popef scaffold: the closing hint', () => {
  it('names popef serve as it is for a model with its ONNX graph, and with --model and --reference for one without', async () => {
    await inTempDir(async (dir) => {
      // fixtures/resnet50 carries no opaque blob named "onnx": the cpu plugin has no graph of its own to run.
      const r = await runCli(['scaffold', fixture('resnet50/executable.popef'), '-r', join(dir, 'OUT'), '-m', 'res net']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /the model carries no ONNX graph \(no opaque blob named "onnx"\)/);
      assert.match(r.stdout, /\n {2}popef serve \S*OUT --model 'res net' --reference model\.onnx\n/);
      assert.doesNotMatch(r.stdout, /\n {2}popef serve \S*OUT\n/);
    });
  });
});

describe('popef scaffold and validate: names that clients handle badly', () => {
  it('scaffold warns before writing, validate warns on the result; both exit 0', async () => {
    await inTempDir(async (dir) => {
      const r = await runCli([
        'scaffold',
        fixture('mnist/executable.popef'),
        '--repository',
        join(dir, 'OUT'),
        '--model',
        'my model',
        '--name',
        'input=digit image',
        '--name',
        'softmax/Softmax:0=labels:0',
      ]);
      assert.equal(r.code, 0, r.stderr);
      const warnings = r.stderr.split('\n').filter((l) => l.startsWith('popef: warning:'));
      assert.deepEqual(
        warnings.map((w) => /\[([a-z/]+)\]$/.exec(w)?.[1]),
        ['names/model', 'names/tensor', 'names/tensor'],
      );
      assert.match(warnings[1] ?? '', /input 'digit image' of my model has ' ' \(space\)/);
      assert.match(warnings[2] ?? '', /output 'labels:0' of my model has ':'/);
      const v = await runCli(['validate', join(dir, 'OUT'), '--format', 'json']);
      assert.equal(v.code, 0, v.stderr);
      const report = JSON.parse(v.stdout) as { repositories: { models: { findings: { rule: string; severity: string }[] }[] }[] };
      assert.deepEqual(
        report.repositories.flatMap((r) => r.models.flatMap((m) => m.findings.map((f) => `${f.severity} ${f.rule}`))),
        ['warning names/model', 'warning names/tensor', 'warning names/tensor'],
      );
      const strict = await runCli(['validate', join(dir, 'OUT'), '--strict']);
      assert.equal(strict.code, 1);
    });
  });

  it("the seed's names pass without a warning", async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['scaffold', fixture('mnist/executable.popef'), '--repository', join(dir, 'OUT'), '--model', 'mnist', ...SEED_NAMES]);
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /warning/);
    });
  });
});

describe("popef config: Graphcore's example repositories", () => {
  const params = ['--parameter', 'synchronous_execution=1', '--parameter', 'timeout_ns=500000'];
  for (const [fixtureName, example, extra] of [
    ['bert', 'bert', []],
    ['bert', 'bert', ['--device-iterations', '16']],
    ['resnet50', 'resnet50', ['--device-iterations', '128']],
  ] as const) {
    it(`${fixtureName} ${extra.join(' ')} has the shape of examples/${example}`, async () => {
      const r = await runCli(['config', fixture(`${fixtureName}/executable.popef`), '--model', example, ...params, ...extra]);
      assert.equal(r.code, 0, r.stderr);
      const ours = parsePbtxt(r.stdout).message;
      const theirs = parsePbtxt(await readFile(join(EXAMPLES, example, 'config.pbtxt'), 'utf8')).message;
      assert.deepEqual(ours, theirs);
      await inTempDir(async (dir) => {
        const out = await runCli(['config', fixture(`${fixtureName}/executable.popef`), '--output', dir, '-m', example, ...params, ...extra]);
        assert.equal(out.code, 0, out.stderr);
        const ourMap = parseNameMap(await readFile(join(dir, example, '1/name_map.json'), 'utf8')).entries.map((e) => [e.anchor, e.name]);
        const theirMap = parseNameMap(await readFile(join(EXAMPLES, example, '1/name_map.json'), 'utf8')).entries.map((e) => [e.anchor, e.name]);
        assert.deepEqual(ourMap, theirMap);
      });
    });
  }

  it('strips the replica and micro-batch dimensions of a replicated model', async () => {
    const r = await runCli(['config', fixture('replicated/executable.popef')]);
    assert.equal(r.code, 0, r.stderr);
    const config = parsePbtxt(r.stdout).message;
    assert.equal(config.max_batch_size, 32);
    assert.deepEqual(config.input?.[0]?.dims, [16]);
    assert.match(r.stderr, /micro-batch 8 x device iterations 1 x replication factor 4/);
  });

  it('--batching none keeps full shapes with max_batch_size 0', async () => {
    const r = await runCli(['config', fixture('mnist/executable.popef'), '--batching', 'none']);
    const config = parsePbtxt(r.stdout).message;
    assert.equal(config.max_batch_size, undefined, 'max_batch_size 0 is the default and is not printed');
    assert.deepEqual(config.input?.[0]?.dims, [1, 1, 28, 28]);
  });

  it('adds dynamic batching with preferred sizes, and checks them', async () => {
    const ok = await runCli([
      'config',
      fixture('bert/executable.popef'),
      '--dynamic-batching',
      '--preferred-batch-size',
      '16',
      '--preferred-batch-size',
      '32',
      '--max-queue-delay-us',
      '100',
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(parsePbtxt(ok.stdout).message.dynamic_batching, { preferred_batch_size: [16, 32], max_queue_delay_microseconds: 100 });
    const tooBig = await runCli(['config', fixture('bert/executable.popef'), '--dynamic-batching', '--preferred-batch-size', '64']);
    assert.equal(tooBig.code, 2);
    assert.match(tooBig.stderr, /preferred batch size 64 is outside 1\.\.32/);
    const noBatch = await runCli(['config', fixture('bert/executable.popef'), '--dynamic-batching', '--batching', 'none']);
    assert.equal(noBatch.code, 2);
    assert.match(noBatch.stderr, /dynamic batching needs a batching model/);
  });

  it('uses the model of a split set, and asks which model when a file holds two', async () => {
    assert.equal((await runCli(['config', fixture('split/executable.popef'), fixture('split/variables.popef')])).code, 0);
    const two = await runCli(['config', fixture('two-models/models.popef')]);
    assert.equal(two.code, 2);
    assert.match(two.stderr, /these files hold 2 models \("encoder", "decoder"\)[\s\S]*--executable NAME/);
    const chosen = await runCli(['config', fixture('two-models/models.popef'), '--executable', 'decoder']);
    assert.equal(parsePbtxt(chosen.stdout).message.input?.[0]?.data_type, 'TYPE_FP16');
  });

  it('refuses fields newer than --triton-version', async () => {
    const r = await runCli(['config', fixture('mnist/executable.popef'), '--triton-version', 'x']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /Triton version "x" is not YY\.MM/);
  });
});

describe('popef config / scaffold: bad input exits 2 and writes nothing', () => {
  async function expectRefusal(
    args: (dir: string) => string[] | Promise<string[]>,
    pattern: RegExp,
    prepare?: (dir: string) => Promise<void>,
  ): Promise<void> {
    await inTempDir(async (dir) => {
      if (prepare) await prepare(dir);
      const before = await listTree(dir);
      const r = await runCli(await args(dir));
      assert.equal(r.code, 2, r.stdout);
      assert.match(r.stderr, pattern);
      assert.deepEqual(await listTree(dir), before, 'nothing may be written');
    });
  }

  it('an unmappable dtype (F8)', async () => {
    await expectRefusal(
      (dir) => ['scaffold', join(dir, 'f8.popef'), '--repository', join(dir, 'repo'), '--model', 'm'],
      /anchor "x" has dtype F8, which Triton has no data type for/,
      async (dir) => {
        const w = await PopefWriter.create(join(dir, 'f8.popef'));
        await w.writeExecutable('e', new Uint8Array(4));
        await w.writeMetadata({
          ...emptyMetadata('e'),
          programFlow: { load: [], main: [5], save: [] },
          anchors: [{ name: 'x', handle: 'h2d_x', tensorInfo: { dtype: 'F8', shape: [1, 4] }, isPerReplica: false, type: 'INPUT', programs: [5] }],
        });
        await w.close();
      },
    );
  });

  it('a name collision after mapping', async () => {
    await expectRefusal(
      (dir) => [
        'scaffold',
        fixture('mnist/executable.popef'),
        '-r',
        join(dir, 'repo'),
        '-m',
        'm',
        '--name',
        'input=x',
        '--name',
        'softmax/Softmax:0=x',
      ],
      /anchors "input" and "softmax\/Softmax:0" would both be called "x"/,
    );
    await expectRefusal(
      (dir) => ['scaffold', fixture('bert/executable.popef'), '-r', join(dir, 'repo'), '-m', 'm', '--name', 'input/2=input_0'],
      /would both be called "input_0"/,
    );
  });

  it('a --name for an anchor that does not exist', async () => {
    await expectRefusal(
      (dir) => ['scaffold', fixture('mnist/executable.popef'), '-r', join(dir, 'repo'), '-m', 'm', '--name', 'nope=x'],
      /--name names anchor "nope", which is not a user-provided anchor of "5230962391836378370" \(those are: "input", "softmax\/Softmax:0"\)/,
    );
  });

  it('a target that exists', async () => {
    await expectRefusal(
      (dir) => ['scaffold', fixture('mnist/executable.popef'), '-r', join(dir, 'repo'), '-m', 'mnist'],
      /mnist\/config\.pbtxt already exists[\s\S]*--force/,
      async (dir) => {
        await mkdir(join(dir, 'repo/mnist'), { recursive: true });
        await writeFile(join(dir, 'repo/mnist/config.pbtxt'), 'mine');
      },
    );
    await expectRefusal(
      (dir) => ['config', fixture('mnist/executable.popef'), '--output', dir, '-m', 'mnist'],
      /config\.pbtxt: file already exists/,
      async (dir) => {
        await mkdir(join(dir, 'mnist'));
        await writeFile(join(dir, 'mnist/config.pbtxt'), 'mine');
      },
    );
  });

  it('a file holding two models', async () => {
    await expectRefusal(
      (dir) => ['scaffold', fixture('two-models/models.popef'), '-r', join(dir, 'repo'), '-m', 'm', '--executable', 'encoder'],
      /the files hold 2 models; a version directory of the Poplar backend serves one/,
    );
  });

  it('a model name with / or ..', async () => {
    for (const name of ['a/b', '..', 'x..y', '.hidden']) {
      await expectRefusal(
        (dir) => ['scaffold', fixture('mnist/executable.popef'), '-r', join(dir, 'repo'), '-m', name],
        /model name .* (contains a path separator|contains "\.\."|starts with ".")/,
      );
    }
  });

  it('a read-only destination', async () => {
    await inTempDir(async (dir) => {
      // Root ignores permission bits, so as root use a filesystem that refuses writes to everyone.
      const asRoot = process.getuid?.() === 0;
      const target = asRoot ? '/sys/popef-toolkit-test-repo' : join(dir, 'ro', 'repo');
      if (!asRoot) {
        await mkdir(join(dir, 'ro'));
        await chmod(join(dir, 'ro'), 0o555);
      }
      const r = await runCli(['scaffold', fixture('mnist/executable.popef'), '-r', target, '-m', 'mnist']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /cannot create the repository directory: E(ACCES|PERM|ROFS)/);
      await assert.rejects(stat(target));
      if (!asRoot) await chmod(join(dir, 'ro'), 0o755);
    });
  });
});

describe('popef scaffold: options', () => {
  it('--dry-run prints the plan and writes nothing', async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['scaffold', fixture('mnist/executable.popef'), '-r', join(dir, 'repo'), '-m', 'mnist', '--dry-run']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /would create model "mnist" \(nothing written\)/);
      assert.deepEqual(await readdir(dir), []);
    });
  });

  it('places every file of a split model, and --link hard-links them', async () => {
    await inTempDir(async (dir) => {
      const r = await runCli([
        'scaffold',
        fixture('split/variables.popef'),
        fixture('split/executable.popef'),
        '-r',
        join(dir, 'repo'),
        '-m',
        'split',
        '--link',
        '--version',
        '3',
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await listTree(join(dir, 'repo/split/3')), ['executable.popef', 'name_map.json', 'variables.popef']);
      assert.equal((await stat(join(dir, 'repo/split/3/executable.popef'))).ino, (await stat(fixture('split/executable.popef'))).ino);
    });
  });

  it('--force replaces config.pbtxt and the version, keeping other versions', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(['scaffold', fixture('mnist/executable.popef'), '-r', repo, '-m', 'mnist'])).code, 0);
      // Other names: config.pbtxt no longer fits, so it is replaced only with --force.
      const renamed = ['scaffold', fixture('mnist/executable.popef'), '-r', repo, '-m', 'mnist', '--version', '2', ...SEED_NAMES];
      assert.equal((await runCli(renamed)).code, 2);
      assert.equal((await runCli([...renamed, '--force'])).code, 0);
      await writeFile(join(repo, 'mnist/1/notes.txt'), 'keep');
      const again = await runCli([
        'scaffold',
        fixture('mnist/executable.popef'),
        '-r',
        repo,
        '-m',
        'mnist',
        '--version',
        '2',
        '--force',
        ...SEED_NAMES,
      ]);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(await listTree(join(repo, 'mnist')), [
        '1',
        '1/executable.popef',
        '1/name_map.json',
        '1/notes.txt',
        '2',
        '2/executable.popef',
        '2/name_map.json',
        'config.pbtxt',
      ]);
      assert.match(await readFile(join(repo, 'mnist/config.pbtxt'), 'utf8'), /digit_image/);
      assert.deepEqual((await readdir(repo)).sort(), ['mnist'], 'no staging leftovers');
    });
  });
});

describe('popef scaffold: a new version beside others', () => {
  const MNIST = fixture('mnist/executable.popef');
  const add = (repo: string, ...more: string[]): string[] => ['scaffold', MNIST, '-r', repo, '-m', 'mnist', ...more];

  /** Bytes, inode and mtime: a config left alone keeps all three. */
  async function snapshot(path: string): Promise<{ bytes: Buffer; ino: number; mtimeMs: number }> {
    const info = await stat(path);
    return { bytes: await readFile(path), ino: info.ino, mtimeMs: info.mtimeMs };
  }

  it('adds MODEL/2/ beside MODEL/1/ without --force and leaves config.pbtxt as it is; validate passes', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(add(repo))).code, 0);
      const config = join(repo, 'mnist/config.pbtxt');
      const before = await snapshot(config);
      const r = await runCli(add(repo, '--version', '2'));
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        /^added version 2 to model "mnist":\n {2}keep {2}\S*repo\/mnist\/config\.pbtxt \(unchanged: it already describes this PopEF\)\n/,
      );
      assert.doesNotMatch(r.stdout, /write \S*config\.pbtxt/);
      assert.equal(r.stderr, '');
      assert.deepEqual(await snapshot(config), before);
      assert.deepEqual(await listTree(join(repo, 'mnist')), [
        '1',
        '1/executable.popef',
        '1/name_map.json',
        '2',
        '2/executable.popef',
        '2/name_map.json',
        'config.pbtxt',
      ]);
      assert.deepEqual((await readdir(repo)).sort(), ['mnist'], 'no staging leftovers');
      const validate = await spawnPopef(['validate', repo]);
      assert.equal(validate.code, 0, validate.stdout + validate.stderr);
    });
  });

  it('compares the parsed configs: comments, layout, order, defaults and the user’s own fields do not count', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(add(repo))).code, 0);
      const config = join(repo, 'mnist/config.pbtxt');
      await writeFile(
        config,
        [
          '# tuned by hand',
          'instance_group { kind: KIND_CPU count: 2 }',
          'output [ { dims: [10] name: "output_0" data_type: TYPE_FP32 label_filename: "labels.txt" } ]',
          'input { name: "input_0" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] optional: false }',
          'max_batch_size: 1 backend: "poplar"',
          'version_policy { all { } }',
          '',
        ].join('\n'),
      );
      const before = await snapshot(config);
      const r = await runCli(add(repo, '--version', '2'));
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await snapshot(config), before);
    });
  });

  it('refuses a config.pbtxt that differs, naming each field (existing against needed); nothing is written', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(add(repo))).code, 0);
      const config = join(repo, 'mnist/config.pbtxt');
      await writeFile(config, (await readFile(config, 'utf8')).replace('data_type: TYPE_FP32', 'data_type: TYPE_FP16'));
      const before = await snapshot(config);
      const tree = await listTree(repo);
      const r = await runCli(add(repo, '--version', '2', '--max-batch-size', '4'));
      assert.equal(r.code, 2, r.stdout);
      assert.match(
        r.stderr,
        /^popef: error: \S*repo\/mnist: \S*repo\/mnist\/config\.pbtxt already exists and does not match what the new PopEF needs: max_batch_size: existing 1, needed 4; input "input_0" data_type: existing TYPE_FP16, needed TYPE_FP32 \[E_EXISTS\]\n/,
      );
      assert.match(
        r.stderr,
        /\n {2}hint: edit config\.pbtxt to match \(popef config, given the same files and options, prints the one needed\), or pass --force to replace config\.pbtxt/,
      );
      assert.deepEqual(await snapshot(config), before);
      assert.deepEqual(await listTree(repo), tree, 'nothing may be written');
    });
  });

  it('names inputs and outputs the two configs do not share', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(add(repo))).code, 0);
      const r = await runCli(add(repo, '--version', '2', ...SEED_NAMES));
      assert.equal(r.code, 2, r.stdout);
      assert.match(r.stderr, /input "digit_image": existing \(none\), needed \{ name: "digit_image" data_type: TYPE_FP32 dims: \[ 1, 28, 28 \] \}/);
      assert.match(r.stderr, /input "input_0": existing \{ name: "input_0" data_type: TYPE_FP32 dims: \[ 1, 28, 28 \] \}, needed \(none\)/);
      assert.match(r.stderr, /output "output_labels": existing \(none\)/);
    });
  });

  it('refuses a config.pbtxt that does not parse, and --force replaces it', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(add(repo))).code, 0);
      await writeFile(join(repo, 'mnist/config.pbtxt'), 'mine {\n');
      const r = await runCli(add(repo, '--version', '2'));
      assert.equal(r.code, 2, r.stdout);
      assert.match(
        r.stderr,
        /config\.pbtxt already exists and cannot be read as a config \(.*config\.pbtxt:1:\d+: .*\), so whether it serves the new PopEF cannot be told/,
      );
      assert.equal((await runCli(add(repo, '--version', '2', '--force'))).code, 0);
      assert.equal(parsePbtxt(await readFile(join(repo, 'mnist/config.pbtxt'), 'utf8')).message.backend, 'poplar');
    });
  });

  it('refuses a config.pbtxt that cannot be read as a file, saying why, and changes nothing', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      await mkdir(join(repo, 'mnist/config.pbtxt'), { recursive: true });
      const before = await readdir(join(repo, 'mnist'));
      const r = await runCli(add(repo, '--version', '2'));
      assert.equal(r.code, 2, r.stdout);
      assert.match(r.stderr, /config\.pbtxt already exists and cannot be read as a config \(.*it is a directory, not a regular file\)/);
      assert.deepEqual(await readdir(join(repo, 'mnist')), before, 'nothing may be written');
    });
  });

  it('--force still replaces a config.pbtxt that differs, keeps version 1 and says it now serves it', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(add(repo))).code, 0);
      const v1 = await snapshot(join(repo, 'mnist/1/executable.popef'));
      const r = await runCli(add(repo, '--version', '2', '--max-batch-size', '4', '--force'));
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^created model "mnist":\n {2}write \S*repo\/mnist\/config\.pbtxt\n/);
      assert.match(
        r.stderr,
        /^popef: note: \S*repo\/mnist\/config\.pbtxt: it is replaced by the one version 2 needs, and version 1 beside it is served with it too\n {2}hint: check that version 1 still fits it with popef validate\n$/,
      );
      assert.equal(parsePbtxt(await readFile(join(repo, 'mnist/config.pbtxt'), 'utf8')).message.max_batch_size, 4);
      assert.deepEqual(await snapshot(join(repo, 'mnist/1/executable.popef')), v1);
      assert.deepEqual((await readdir(join(repo, 'mnist'))).sort(), ['1', '2', 'config.pbtxt']);
    });
  });

  it('still refuses an existing version directory without --force; with it replaces only that directory', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(add(repo))).code, 0);
      assert.equal((await runCli(add(repo, '--version', '2'))).code, 0);
      const config = join(repo, 'mnist/config.pbtxt');
      await writeFile(config, `# mine\n${await readFile(config, 'utf8')}`);
      await writeFile(join(repo, 'mnist/2/notes.txt'), 'old');
      const before = await snapshot(config);
      const refused = await runCli(add(repo, '--version', '2'));
      assert.equal(refused.code, 2, refused.stdout);
      assert.match(
        refused.stderr,
        /popef: error: \S*repo\/mnist: \S*repo\/mnist\/2 already exists \[E_EXISTS\]\n {2}hint: use --force to replace it/,
      );
      assert.deepEqual(await snapshot(config), before);
      const forced = await runCli(add(repo, '--version', '2', '--force'));
      assert.equal(forced.code, 0, forced.stderr);
      assert.match(forced.stdout, /^replaced version 2 of model "mnist":\n {2}keep /);
      assert.deepEqual(await snapshot(config), before);
      assert.deepEqual(await listTree(join(repo, 'mnist/2')), ['executable.popef', 'name_map.json']);
    });
  });

  it('notes a version_policy that will not serve the new version (specific, latest), and succeeds', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      assert.equal((await runCli(add(repo))).code, 0);
      const config = join(repo, 'mnist/config.pbtxt');
      const generated = await readFile(config, 'utf8');
      await writeFile(config, `${generated}version_policy { specific { versions: [ 1 ] } }\n`);
      const specific = await runCli(add(repo, '--version', '2'));
      assert.equal(specific.code, 0, specific.stderr);
      assert.equal(
        specific.stderr,
        `popef: note: ${join(repo, 'mnist/config.pbtxt')}: its version_policy serves only version 1 (specific), so Triton will not load version 2\n` +
          '  hint: add 2 to version_policy { specific { versions: [ ... ] } } in config.pbtxt when version 2 is to be served\n',
      );
      // No policy: Triton's default serves the latest version only, so a lower one is not loaded.
      await writeFile(config, generated);
      const lower = await runCli(add(repo, '--version', '3', '--dry-run'));
      assert.equal(lower.stderr, '', 'the highest version is served');
      await rm(join(repo, 'mnist/1'), { recursive: true });
      const below = await runCli(add(repo, '--version', '1'));
      assert.equal(below.code, 0, below.stderr);
      assert.match(below.stderr, /it has no version_policy, so Triton serves only the latest version, here version 2, and will not load version 1\n/);
    });
  });
});
