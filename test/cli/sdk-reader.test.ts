// Files not in the open layout, read with the Poplar SDK's own popef.Reader
// through the IPU bridge (here the simulated SDK of fixtures/sim-sdk, whose
// writer makes the "SDK-written" file): dump in every view and format,
// config, scaffold and diff give what they give for the same model in the
// open layout, and say which reader read it; without the SDK the error
// stays the open layout's, with a hint naming popef doctor; a damaged
// open-layout file never goes to the SDK.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { schemaErrors } from '../../src/json-schemas.js';
import { fixture, inTempDir, runCli } from '../helpers.js';
import { SEED_REPORT } from './seed-report.js';

const PYTHON = process.env.POPEF_PYTHON ?? 'python3';
const hasNumpy = spawnSync(PYTHON, ['-c', 'import numpy']).status === 0;
// Under CI=true these run, and fail, without numpy: .ci/run installs it.
const skip = hasNumpy || process.env.CI === 'true' ? false : `${PYTHON} has no numpy (bash .ci/run installs it; set POPEF_PYTHON)`;

function env(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  // TMPDIR of the test's own: the SDK reader's temporary copies are checked to be gone.
  return { ...(process.env as Record<string, string>), POPEF_PYTHON: PYTHON, PYTHONPATH: fixture('sim-sdk'), TMPDIR: join(dir, 'tmp'), ...extra };
}

/** fixtures/mnist written with the simulated SDK's popef.Writer, as DIR/sdk/executable.popef. */
async function sdkMnist(dir: string): Promise<string> {
  await mkdir(join(dir, 'sdk'));
  await mkdir(join(dir, 'tmp'));
  const out = join(dir, 'sdk', 'executable.popef');
  const r = await runCli(['export', fixture('mnist/executable.popef'), '-o', out], { env: env(dir) });
  assert.equal(r.code, 0, r.stderr);
  assert.equal((await readFile(out)).subarray(0, 16).toString('latin1'), 'SIMULATED-POPEF\n', 'the simulated SDK wrote it');
  return out;
}

/** The lines of a report without the ones that name the file or its reader. */
const body = (text: string): string[] => text.split('\n').filter((l) => !l.startsWith('PopEF file:') && !l.startsWith('  Read with:'));

describe('SDK-written files read through the SDK', { skip }, () => {
  it('dump --user-anchors of the SDK-written MNIST model prints the seed report exactly, and leaves no temporary file', async () => {
    await inTempDir(async (dir) => {
      await sdkMnist(dir);
      const r = await runCli(['dump', '--user-anchors', 'executable.popef'], { cwd: join(dir, 'sdk'), env: env(dir) });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, SEED_REPORT);
      assert.equal(r.stderr, '');
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
    });
  });

  it("dump in every view and format gives the open layout's report, and says the SDK read it", async () => {
    await inTempDir(async (dir) => {
      const file = await sdkMnist(dir);
      for (const view of [[], ['--metadata'], ['--all'], ['--blobs'], ['--markdown']]) {
        const sdk = await runCli(['dump', ...view, file], { env: env(dir) });
        const open = await runCli(['dump', ...view, fixture('mnist/executable.popef')]);
        assert.equal(sdk.code, 0, sdk.stderr);
        if (view.includes('--markdown')) {
          assert.match(sdk.stdout, /: Read with: the Poplar SDK's popef\.Reader \(release 3\.4\.0\), through the IPU bridge/);
          assert.deepEqual(
            sdk.stdout.split('\n').filter((l) => l.startsWith('| `input`')),
            open.stdout.split('\n').filter((l) => l.startsWith('| `input`')),
          );
          continue;
        }
        assert.match(
          sdk.stdout,
          /^ {2}Read with: the Poplar SDK's popef\.Reader \(release 3\.4\.0\), through the IPU bridge; offsets and sizes are those of its open-layout copy$/m,
          view.join(' '),
        );
        // The copy is written as the open-layout fixture was: even its blob table is the same.
        assert.deepEqual(body(sdk.stdout), body(open.stdout), view.join(' '));
      }
      const json = await runCli(['dump', '--json', file], { env: env(dir) });
      assert.equal(json.code, 0, json.stderr);
      const report = JSON.parse(json.stdout) as { files: { readBy?: unknown }[]; models: unknown[]; tensors: unknown[] };
      assert.deepEqual(schemaErrors('dump', report), []);
      assert.deepEqual(report.files[0]?.readBy, { reader: 'poplar-sdk', sdkVersion: '3.4.0' });
      const open = JSON.parse((await runCli(['dump', '--json', fixture('mnist/executable.popef')])).stdout) as {
        files: { readBy?: unknown }[];
        models: unknown[];
      };
      assert.equal(open.files[0]?.readBy, undefined);
      // The same models, but for the file each part is in.
      const withoutFiles = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (k, x: unknown) => (k === 'file' ? undefined : x)));
      assert.deepEqual(withoutFiles(report.models), withoutFiles(open.models));
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
    });
  });

  it('config, scaffold and diff work on it as on the open-layout file', async () => {
    await inTempDir(async (dir) => {
      const file = await sdkMnist(dir);
      const names = ['--name', 'input=digit_image', '--name', 'softmax/Softmax:0=output_labels'];
      const sdk = await runCli(['config', file, '-m', 'mnist', ...names], { env: env(dir) });
      const open = await runCli(['config', fixture('mnist/executable.popef'), '-m', 'mnist', ...names]);
      assert.equal(sdk.code, 0, sdk.stderr);
      assert.equal(sdk.stdout, open.stdout);
      assert.match(sdk.stdout, /name: "digit_image"/);

      const scaffold = await runCli(['scaffold', file, '-r', join(dir, 'repo'), '-m', 'mnist', ...names], { env: env(dir) });
      assert.equal(scaffold.code, 0, scaffold.stderr);
      assert.ok((await readFile(join(dir, 'repo/mnist/1/executable.popef'))).equals(await readFile(file)), 'the SDK file itself is placed');
      assert.match(await readFile(join(dir, 'repo/mnist/config.pbtxt'), 'utf8'), /backend: "poplar"/);

      const diff = await runCli(['diff', file, fixture('mnist/executable.popef')], { env: env(dir) });
      assert.equal(diff.code, 0, diff.stdout + diff.stderr);
      const changed = await runCli(['diff', file, fixture('bert/executable.popef')], { env: env(dir) });
      assert.equal(changed.code, 1, changed.stderr);
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
    });
  });

  it('validate cross-checks an SDK-written file through the SDK, and popef describe records the SDK file itself', async () => {
    await inTempDir(async (dir) => {
      const file = await sdkMnist(dir);
      const repo = join(dir, 'repo');
      const made = await runCli(
        ['scaffold', file, '-r', repo, '-m', 'mnist', '--name', 'input=digit_image', '--name', 'softmax/Softmax:0=output_labels'],
        { env: env(dir) },
      );
      assert.equal(made.code, 0, made.stderr);
      // Scaffold wrote a description of the SDK file it placed, naming it as placed, for machines without the SDK.
      assert.match(made.stdout, /write \S*repo\/mnist\/1\/executable\.popef\.json/);
      const placedDescription = join(repo, 'mnist', '1', 'executable.popef.json');
      const placed = JSON.parse(await readFile(placedDescription, 'utf8')) as {
        reader: string;
        files: { name: string; size: number; sha256: string }[];
        models: { file: string }[];
      };
      const sdkBytes = await readFile(file);
      assert.deepEqual(placed.files, [
        { name: 'executable.popef', size: sdkBytes.byteLength, sha256: createHash('sha256').update(sdkBytes).digest('hex') },
      ]);
      assert.deepEqual(
        placed.models.map((m) => m.file),
        ['executable.popef'],
      );
      assert.match(placed.reader, /Poplar SDK/);
      const rules = async (e: Record<string, string>): Promise<string[]> => {
        const r = await runCli(['validate', repo, '--format', 'json'], { env: e });
        return (JSON.parse(r.stdout) as { repositories: { models: { findings: { rule: string }[] }[] }[] }).repositories.flatMap((x) =>
          x.models.flatMap((m) => m.findings.map((f) => f.rule)),
        );
      };
      // With the SDK: read through it; without it: cross-checked against the description scaffold wrote.
      const noSdk = env(dir, { PYTHONPATH: join(dir, 'tmp') });
      assert.deepEqual(await rules(env(dir)), []);
      assert.deepEqual(await rules(noSdk), []);
      const config = join(repo, 'mnist', 'config.pbtxt');
      await writeFile(config, (await readFile(config, 'utf8')).replace('dims: [ 1, 28, 28 ]', 'dims: [ 1, 28, 29 ]'));
      assert.ok((await rules(env(dir))).includes('popef/dims'));
      assert.ok((await rules(noSdk)).includes('popef/dims'));
      // Without the description and without the SDK, nothing to cross-check against: the notice.
      await rm(placedDescription);
      assert.deepEqual(await rules(noSdk), ['popef/not-cross-checked']);

      const described = await runCli(['describe', file], { env: env(dir) });
      assert.equal(described.code, 0, described.stderr);
      const description = JSON.parse(await readFile(`${file}.json`, 'utf8')) as { reader: string; files: { size: number; sha256: string }[] };
      const bytes = await readFile(file);
      assert.deepEqual(
        description.files.map((f) => [f.size, f.sha256]),
        [[bytes.byteLength, createHash('sha256').update(bytes).digest('hex')]],
      );
      assert.match(description.reader, /Poplar SDK/);
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
    });
  });

  it('scaffold of an SDK-written file reads it through the SDK once, for the config and the description both', async () => {
    await inTempDir(async (dir) => {
      const file = await sdkMnist(dir);
      // Each Python interpreter the bridge starts runs sitecustomize.py, which leaves a line.
      const hook = join(dir, 'hook');
      await mkdir(hook);
      const starts = join(dir, 'starts.txt');
      await writeFile(join(hook, 'sitecustomize.py'), `with open(${JSON.stringify(starts)}, "a") as f:\n    f.write("start\\n")\n`);
      const made = await runCli(['scaffold', file, '-r', join(dir, 'repo'), '-m', 'mnist'], {
        env: env(dir, { PYTHONPATH: `${fixture('sim-sdk')}:${hook}` }),
      });
      assert.equal(made.code, 0, made.stderr);
      assert.ok(existsSync(join(dir, 'repo', 'mnist', '1', 'executable.popef.json')), 'the description is placed');
      // popef serve's cpu plugin reads the open layout only: the hint converts the export first, it does not promise serve.
      assert.match(made.stdout, /the cpu plugin reads the PopEF open layout only[^\n]*\n {2}popef import \S+ -o export\.open\.popef\n/);
      assert.doesNotMatch(made.stdout, /\n {2}popef serve /);
      assert.equal((await readFile(starts, 'utf8')).split('\n').filter(Boolean).length, 1);
    });
  });

  it('validate of several SDK-written models starts one bridge for all of them', async () => {
    await inTempDir(async (dir) => {
      const file = await sdkMnist(dir);
      const repo = join(dir, 'repo');
      for (const model of ['a', 'b', 'c']) {
        const made = await runCli(['scaffold', file, '-r', repo, '-m', model], { env: env(dir) });
        assert.equal(made.code, 0, made.stderr);
      }
      // Each Python interpreter the bridge starts runs sitecustomize.py, which leaves a line.
      const hook = join(dir, 'hook');
      await mkdir(hook);
      const starts = join(dir, 'starts.txt');
      await writeFile(join(hook, 'sitecustomize.py'), `with open(${JSON.stringify(starts)}, "a") as f:\n    f.write("start\\n")\n`);
      const r = await runCli(['validate', repo, '--format', 'json'], { env: env(dir, { PYTHONPATH: `${fixture('sim-sdk')}:${hook}` }) });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal((await readFile(starts, 'utf8')).split('\n').filter(Boolean).length, 1);
    });
  });

  it("without the SDK: the open layout's error, with a hint that names popef doctor", async () => {
    await inTempDir(async (dir) => {
      const file = await sdkMnist(dir);
      for (const args of [
        ['dump', file],
        ['config', file],
        ['diff', file, fixture('mnist/executable.popef')],
      ]) {
        const r = await runCli(args, { env: env(dir, { PYTHONPATH: '' }) });
        assert.equal(r.code, 2, args.join(' '));
        assert.match(r.stderr, /not a PopEF open-layout file: the blob signature is missing \[E_NOT_POPEF\]/);
        assert.match(
          r.stderr,
          /hint: if the Poplar SDK wrote it, popef reads it with the SDK's own popef\.Reader where the SDK is enabled, and it is not here \(run "popef doctor" to see why\)/,
        );
      }
    });
  });

  it('a damaged open-layout file is never handed to the SDK', async () => {
    await inTempDir(async (dir) => {
      await mkdir(join(dir, 'tmp'));
      for (const damaged of ['malformed/truncated-metadata.popef', 'malformed/size-past-end.popef']) {
        const r = await runCli(['dump', fixture(damaged)], { env: env(dir) });
        assert.equal(r.code, 2);
        assert.doesNotMatch(r.stderr, /E_NOT_POPEF|popef\.Reader|doctor/, damaged);
      }
    });
  });

  it('a file neither reader can read: says both failed', async () => {
    await inTempDir(async (dir) => {
      await mkdir(join(dir, 'tmp'));
      const junk = join(dir, 'junk.popef');
      await copyFile(fixture('malformed/not-popef.bin'), junk);
      const r = await runCli(['dump', junk], { env: env(dir) });
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /not a PopEF open-layout file, and the Poplar SDK's popef\.Reader cannot read it either: .*is not a simulated PopEF file/,
      );
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
    });
  });
});
