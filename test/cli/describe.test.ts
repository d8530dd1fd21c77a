// PopEF descriptions: `popef describe`, and validate, config and scaffold
// using one in place of a PopEF they cannot read. The SDK-format files are
// written by the SIMULATED SDK (fixtures/sim-sdk, its own private encoding,
// not the real SDK's); their descriptions are made on it: the file is
// imported through the bridge, described, and the SDK file's name, size and
// SHA-256 recorded, which is what describe will do itself once dump reads
// SDK files through the bridge.
import assert from 'node:assert/strict';
import { appendFile, copyFile, cp, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { describeOpenSet } from '../../src/cli/commands/describe-run.js';
import { ModelSet } from '../../src/format/model-set.js';
import { PopefFile } from '../../src/format/reader.js';
import { describeModelSet, sha256Of } from '../../src/inspect/description.js';
import { FileSource } from '../../src/io/file-source.js';
import { schemaErrors } from '../../src/json-schemas.js';
import type { ModelConfig } from '../../src/triton/model-config.js';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';
import { printPbtxt } from '../../src/triton/pbtxt-printer.js';
import { fixture, inTempDir, runCli, tempDir } from '../helpers.js';

const SIM = { ...process.env, PYTHONPATH: fixture('sim-sdk') } as Record<string, string>;

interface JsonReport {
  repositories: { models: { name: string; findings: { rule: string; severity: string; message: string }[] }[] }[];
}

const findingsOf = (stdout: string): [string, string][] =>
  ((JSON.parse(stdout) as JsonReport).repositories[0]?.models[0]?.findings ?? []).map((f) => [f.rule, f.severity]);

describe('popef describe', () => {
  it('writes FILE.json that matches its schema, with the file size and SHA-256; refuses to overwrite without --force', async () => {
    await inTempDir(async (dir) => {
      const file = join(dir, 'executable.popef');
      await copyFile(fixture('mnist/executable.popef'), file);
      const r = await runCli(['describe', file]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^wrote .*executable\.popef\.json: 1 model, 1 file described \(popef-toolkit .* open-layout reader\)\n$/);
      const written = JSON.parse(await readFile(`${file}.json`, 'utf8')) as {
        files: { name: string; size: number; sha256: string }[];
        models: { metadata: { anchors: { name: string }[] } }[];
      };
      assert.deepEqual(schemaErrors('popef-description', written), []);
      const bytes = await readFile(file);
      const { createHash } = await import('node:crypto');
      assert.deepEqual(written.files, [
        { name: 'executable.popef', size: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') },
      ]);
      // The anchors are dump --json's.
      const dump = JSON.parse((await runCli(['dump', file, '--json'])).stdout) as { models: { metadata: unknown }[] };
      assert.deepEqual(written.models[0]?.metadata, dump.models[0]?.metadata);
      const again = await runCli(['describe', file]);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /use --force/);
      assert.equal((await runCli(['describe', file, '--force', '-o', join(dir, 'other.json')])).code, 0);
      // A description under another name is still one to config, which generates the same files from it as from the PopEF.
      const fromOther = await runCli(['config', join(dir, 'other.json'), '-m', 'm']);
      assert.equal(fromOther.code, 0, fromOther.stderr);
      assert.equal(fromOther.stdout, (await runCli(['config', file, '-m', 'm'])).stdout);
      assert.equal((await runCli(['describe', file, '--force'])).code, 0);
      // A description is not a PopEF schema's stand-in for anything else: a damaged one is refused with the reason.
      assert.deepEqual(schemaErrors('popef-description', { ...written, files: [] }).length > 0, true);
    });
  });
});

describe('validate without the SDK, against the description of an SDK-format file', () => {
  let dir = '';
  let cleanup: () => Promise<void> = () => Promise.resolve();
  /** The simulated SDK's exports of the MNIST and BERT fixtures, with their descriptions. */
  const sdk: Record<'mnist' | 'bert', { file: string; description: string }> = {
    mnist: { file: '', description: '' },
    bert: { file: '', description: '' },
  };

  before(async () => {
    const temp = await tempDir();
    dir = temp.dir;
    cleanup = temp.cleanup;
    for (const name of ['mnist', 'bert'] as const) {
      const file = join(dir, `${name}.sdk.popef`);
      const e = await runCli(['export', fixture(`${name}/executable.popef`), '-o', file], { env: SIM });
      assert.equal(e.code, 0, e.stderr);
      // Made on the (simulated) SDK: read back through the bridge, described, the SDK file recorded.
      const back = join(dir, `${name}.imported.popef`);
      const i = await runCli(['import', file, '-o', back], { env: SIM });
      assert.equal(i.code, 0, i.stderr);
      const source = await FileSource.open(file);
      const set = await ModelSet.open([back]);
      try {
        const description = describeModelSet(
          set,
          [{ name: 'executable.popef', size: source.size, sha256: await sha256Of(source) }],
          'simulated Poplar SDK popef.Reader, through popef import (test)',
        );
        assert.deepEqual(schemaErrors('popef-description', description), []);
        sdk[name] = { file, description: `${JSON.stringify(description, null, 2)}\n` };
      } finally {
        await set.close();
        await source.close();
      }
    }
  });
  after(() => cleanup());

  /** A repository whose model serves the SDK-format file, its description beside it, and a config changed by `change`. */
  async function repository(name: 'mnist' | 'bert', change: (c: ModelConfig) => ModelConfig, into: string): Promise<string> {
    const repo = join(into, 'repo');
    const source = name === 'mnist' ? fixture('repos/clean') : fixture('repos/popef-max-batch-size');
    await cp(source, repo, { recursive: true });
    await copyFile(sdk[name].file, join(repo, name, '1/executable.popef'));
    await writeFile(join(repo, name, '1/executable.popef.json'), sdk[name].description);
    const path = join(repo, name, 'config.pbtxt');
    const config = parsePbtxt(await readFile(path, 'utf8')).message;
    const fixed = name === 'bert' ? { ...config, max_batch_size: 32 } : config;
    await writeFile(path, printPbtxt(change(fixed), { tritonVersion: 'latest' }));
    return repo;
  }

  it('a correct config: no findings, exit 0 (the SDK file itself is never read)', async () => {
    await inTempDir(async (temp) => {
      for (const name of ['mnist', 'bert'] as const) {
        const r = await runCli(['validate', await repository(name, (c) => c, join(temp, name)), '--format', 'json']);
        assert.deepEqual(findingsOf(r.stdout), [], `${name}: ${r.stdout}`);
        assert.equal(r.code, 0);
      }
    });
  });

  const wrong: [string, 'mnist' | 'bert', (c: ModelConfig) => ModelConfig, string][] = [
    ['wrong dims', 'mnist', (c) => ({ ...c, input: [{ ...(c.input?.[0] ?? {}), dims: [1, 28, 27] }] }), 'popef/dims'],
    ['a wrong dtype', 'mnist', (c) => ({ ...c, input: [{ ...(c.input?.[0] ?? {}), data_type: 'TYPE_FP16' }] }), 'popef/data-type'],
    ['an unserved anchor', 'mnist', (c) => ({ ...c, output: [] }), 'popef/unserved-anchor'],
    ['a max_batch_size that is no multiple of the micro-batch', 'bert', (c) => ({ ...c, max_batch_size: 31 }), 'popef/max-batch-size'],
  ];
  for (const [why, name, change, rule] of wrong) {
    it(`finds ${why} (${rule})`, async () => {
      await inTempDir(async (temp) => {
        const r = await runCli(['validate', await repository(name, change, temp), '--format', 'json']);
        assert.equal(r.code, 1);
        assert.ok(
          findingsOf(r.stdout).some(([f, s]) => f === rule && s === 'error'),
          r.stdout,
        );
        assert.ok(!findingsOf(r.stdout).some(([f]) => f === 'popef/not-cross-checked'), r.stdout);
      });
    });
  }

  it('refuses a stale description: another size always, another SHA-256 with --verify', async () => {
    await inTempDir(async (temp) => {
      const repo = await repository('mnist', (c) => c, temp);
      const file = join(repo, 'mnist/1/executable.popef');
      const same = await stat(file);
      // Same size, other bytes: only --verify sees it.
      const bytes = await readFile(file);
      bytes[bytes.byteLength - 1] = (bytes[bytes.byteLength - 1] ?? 0) ^ 0xff;
      await writeFile(file, bytes);
      assert.equal((await stat(file)).size, same.size);
      assert.deepEqual(findingsOf((await runCli(['validate', repo, '--format', 'json'])).stdout), []);
      const verified = await runCli(['validate', repo, '--format', 'json', '--verify']);
      assert.equal(verified.code, 1);
      assert.deepEqual(findingsOf(verified.stdout), [['popef/stale-description', 'error']]);
      await appendFile(file, 'x');
      const r = await runCli(['validate', repo]);
      assert.equal(r.code, 1);
      assert.match(
        r.stdout,
        /error: the PopEF description mnist\/1\/executable\.popef\.json does not describe the file beside it: it records \d+ bytes for executable\.popef, which has \d+; anchors not cross-checked \[popef\/stale-description\]/,
      );
    });
  });
});

describe('popef config and scaffold from a description', () => {
  it('generate what they generate from the PopEF; the scaffolded repository validates against the description', async () => {
    await inTempDir(async (dir) => {
      const popef = join(dir, 'executable.popef');
      await copyFile(fixture('mnist/executable.popef'), popef);
      assert.equal((await runCli(['describe', popef])).code, 0);
      const names = ['--name', 'input=digit_image', '--name', 'softmax/Softmax:0=output_labels'];
      const fromFile = await runCli(['config', popef, ...names]);
      const fromDescription = await runCli(['config', `${popef}.json`, ...names]);
      assert.equal(fromDescription.code, 0, fromDescription.stderr);
      assert.equal(fromDescription.stdout, fromFile.stdout);
      const s = await runCli(['scaffold', `${popef}.json`, '-r', join(dir, 'repo'), '-m', 'mnist', ...names]);
      assert.equal(s.code, 0, s.stderr);
      const v = await runCli(['validate', join(dir, 'repo'), '--format', 'json']);
      assert.equal(v.code, 0, v.stdout);
      assert.deepEqual(findingsOf(v.stdout), [['popef/description-only', 'info']]);
    });
  });
});

describe('describing an open model set (what scaffold places beside SDK-written files)', () => {
  it('names each model by the recorded name of its own file, when two files share a base name in different directories', async () => {
    await inTempDir(async (dir) => {
      await mkdir(join(dir, 'a'));
      await mkdir(join(dir, 'b'));
      // The executable in a/, the variables in b/, both called m.popef: scaffold places them under two names.
      await copyFile(fixture('split/executable.popef'), join(dir, 'a/m.popef'));
      await copyFile(fixture('split/variables.popef'), join(dir, 'b/m.popef'));
      const files = [
        { path: 'a/m.popef', recordedName: 'executable.popef' },
        { path: 'b/m.popef', recordedName: 'variables.popef' },
      ];
      const opened = await Promise.all(files.map((f) => FileSource.open(join(dir, f.path), f.path)));
      const set = await ModelSet.fromFiles(await Promise.all(opened.map((s) => PopefFile.open(s))));
      try {
        const io = {
          stdout: () => {},
          stderr: () => {},
          stdoutIsTTY: false,
          stderrIsTTY: false,
          env: {},
          cwd: dir,
          signal: new AbortController().signal,
        };
        const description = await describeOpenSet(set, [{ reader: 'open-layout' }, { reader: 'open-layout' }], files, io);
        assert.deepEqual(
          description.files.map((f) => f.name),
          ['executable.popef', 'variables.popef'],
        );
        assert.deepEqual(
          description.models.map((m) => m.file),
          ['executable.popef'],
          'the model comes from the executable file',
        );
      } finally {
        await set.close();
      }
    });
  });
});
