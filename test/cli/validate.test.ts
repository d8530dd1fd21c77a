import assert from 'node:assert/strict';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { schemaErrors } from '../../src/json-schemas.js';
import { RULES } from '../../src/triton/repository/findings.js';
import { FIXTURES, ROOT, fixture, fixtureManifest, inTempDir, matchGolden, repositoryFixtures, runCli } from '../helpers.js';

const EXAMPLES = join(ROOT, 'fixtures/graphcore-examples');

const golden = (name: string, actual: string): Promise<void> => matchGolden('validate', name, actual);

interface JsonFinding {
  rule: string;
  severity: 'error' | 'warning' | 'info';
  message: string;
  file?: string;
  line?: number;
  hint?: string;
}
interface JsonReport {
  repositories: { findings: JsonFinding[]; models: { name: string; findings: JsonFinding[] }[] }[];
  summary: { errors: number; warnings: number; models: number };
}

const allFindings = (r: JsonReport): JsonFinding[] => r.repositories.flatMap((repo) => [...repo.findings, ...repo.models.flatMap((m) => m.findings)]);

describe('popef validate: one broken repository per rule', async () => {
  for (const repo of await repositoryFixtures()) {
    it(`${repo.path}: ${repo.expect.map((e) => e.rule).join(', ') || 'clean'}`, async () => {
      const args = ['validate', repo.path, ...(repo.args ?? [])];
      const json = await runCli([...args, '--format', 'json'], { cwd: FIXTURES });
      const report = JSON.parse(json.stdout) as JsonReport;
      assert.deepEqual(schemaErrors('validate', report), []);
      const got = allFindings(report).map((f) => ({ rule: f.rule, severity: f.severity }));
      assert.deepEqual(got, repo.expect, `findings of ${repo.path}:\n${json.stdout}`);
      assert.equal(json.code, repo.expect.some((e) => e.severity === 'error') ? 1 : 0);

      const sarif = await runCli([...args, '--format', 'sarif'], { cwd: FIXTURES });
      assert.deepEqual(schemaErrors('sarif-2.1.0-subset', JSON.parse(sarif.stdout)), []);

      const text = await runCli(args, { cwd: FIXTURES });
      await golden(`${repo.path.replace(/^repos\//, '')}.txt`, text.stdout.split(FIXTURES).join('<fixtures>'));
    });
  }
});

describe('popef validate: the broken repositories cover the rules', () => {
  it('every rule has a fixture repository that breaks it', async () => {
    const covered = new Set((await repositoryFixtures()).flatMap((r) => r.expect.map((e) => e.rule)));
    // Fixtures are plain files; the two symbolic-link rules are broken on links made in a temporary
    // directory instead (test/hostile/lost-files.test.ts).
    // config/ensemble-decoupled: an ensemble's steps name its models, which the fixture corpus renames;
    // the tritonserver differential corpus breaks it (test/triton/triton-oracle.test.ts).
    const madeByTheirTests = new Set(['layout/link-outside', 'layout/link-loop', 'config/ensemble-decoupled']);
    assert.deepEqual(
      Object.keys(RULES).filter((rule) => !covered.has(rule) && !madeByTheirTests.has(rule)),
      [],
    );
  });
});

describe("popef validate: Graphcore's example repositories", () => {
  it('finds nothing wrong in their configs and name maps; one notice per model says the anchors were not cross-checked (no PopEF is published)', async () => {
    const r = await runCli(['validate', EXAMPLES, '--format', 'json']);
    const findings = allFindings(JSON.parse(r.stdout) as JsonReport);
    assert.equal(findings.length, 4);
    assert.deepEqual([...new Set(findings.map((f) => `${f.rule} ${f.severity}`))], ['popef/not-cross-checked info']);
    assert.equal(r.code, 0);
  });
});

describe('popef validate: repositories made by popef scaffold validate clean', async () => {
  // Files with two models cannot be scaffolded (a version directory serves one model): tested in config-scaffold.test.ts.
  const models = (await fixtureManifest()).filter((f) => f.expect.ok && f.expect.models === 1);
  for (const entry of models) {
    it(entry.path, async () => {
      await inTempDir(async (dir) => {
        const files = [entry.path, ...(entry.with ?? [])].map(fixture);
        const s = await runCli(['scaffold', ...files, '-r', join(dir, 'repo'), '-m', 'model', '--parameter', 'timeout_ns=500000']);
        assert.equal(s.code, 0, s.stderr);
        const v = await runCli(['validate', join(dir, 'repo'), '--format', 'json']);
        assert.deepEqual(allFindings(JSON.parse(v.stdout) as JsonReport), []);
        assert.equal(v.code, 0);
      });
    });
  }
});

describe('popef validate: formats and options', () => {
  it('lists 100 findings of one rule per model and counts the rest in one closing finding; --max-findings-per-rule changes that', async () => {
    await inTempDir(async (dir) => {
      const { copyFile, mkdir, writeFile } = await import('node:fs/promises');
      const model = join(dir, 'repo', 'many');
      await mkdir(join(model, '1'), { recursive: true });
      await copyFile(fixture('mnist/executable.popef'), join(model, '1', 'executable.popef'));
      await writeFile(join(model, '1', 'name_map.json'), '{}');
      const inputs = Array.from({ length: 150 }, (_, i) => `input { name: "in_${i}" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] }`).join('\n');
      await writeFile(
        join(model, 'config.pbtxt'),
        `name: "many"\nbackend: "poplar"\nmax_batch_size: 1\n${inputs}\noutput { name: "softmax/Softmax:0" data_type: TYPE_FP32 dims: [ 10 ] }\n`,
      );
      const missing = async (extra: string[]): Promise<JsonFinding[]> => {
        const r = await runCli(['validate', join(dir, 'repo'), '--format', 'json', ...extra]);
        assert.equal(r.code, 1, r.stderr);
        const report = JSON.parse(r.stdout) as { repositories: { models: { findings: JsonFinding[] }[] }[] };
        return (report.repositories[0]?.models[0]?.findings ?? []).filter((f) => f.rule === 'popef/missing-anchor');
      };
      const capped = await missing([]);
      assert.equal(capped.length, 101);
      assert.match(capped[100]?.message ?? '', /^50 more finding\(s\) of this rule in model 'many' are not listed \(150 in all\)$/);
      assert.match(capped[99]?.message ?? '', /config input "in_99"/);
      assert.equal((await missing(['--max-findings-per-rule', 'all'])).length, 150);
      assert.equal((await missing(['--max-findings-per-rule', '10'])).length, 11);
      const bad = await runCli(['validate', join(dir, 'repo'), '--max-findings-per-rule', '0']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /--max-findings-per-rule "0" is not a positive whole number or all/);
    });
  });

  it('--strict turns warnings into errors', async () => {
    const plain = await runCli(['validate', 'repos/version-name'], { cwd: FIXTURES });
    assert.equal(plain.code, 0);
    const strict = await runCli(['validate', 'repos/version-name', '--strict', '--format', 'json'], { cwd: FIXTURES });
    assert.equal(strict.code, 1);
    assert.equal(allFindings(JSON.parse(strict.stdout) as JsonReport)[0]?.severity, 'error');
  });

  it('writes GitHub annotations with file, line and column', async () => {
    const r = await runCli(['validate', 'repos/io-dims', '--format', 'github'], { cwd: FIXTURES });
    assert.match(
      r.stdout,
      /^::error file=repos\/io-dims\/mnist\/config\.pbtxt,line=\d+,col=\d+,title=popef validate io\/dims::model input 'digit_image' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for mnist%0Ahint: /m,
    );
  });

  it('writes JUnit with one test case per model and rule', async () => {
    const r = await runCli(['validate', 'repos/popef-dims', '--format', 'junit'], { cwd: FIXTURES });
    assert.match(
      r.stdout,
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="popef validate" tests="\d+" failures="1" errors="0" skipped="0">/,
    );
    assert.match(
      r.stdout,
      /<testcase classname="repos\/popef-dims\/mnist" name="popef\/dims">\n {6}<failure type="error" message="config input &quot;digit_image&quot; has dims/,
    );
    assert.match(r.stdout, /<testcase classname="repos\/popef-dims\/mnist" name="io\/dims"\/>/);
  });

  it('points findings at the line and column of the offending field', async () => {
    const r = await runCli(['validate', 'repos/popef-data-type', '--format', 'json'], { cwd: FIXTURES });
    const f = allFindings(JSON.parse(r.stdout) as JsonReport)[0];
    const text = await readFile(fixture('repos/popef-data-type/mnist/config.pbtxt'), 'utf8');
    const line = text.split('\n')[(f?.line ?? 0) - 1] ?? '';
    assert.match(line, /^\s*data_type: TYPE_FP16$/);
  });

  it('--model restricts the check, and an unknown model or repository is a usage error (exit 2)', async () => {
    const r = await runCli(['validate', 'repos/hidden-directory', '--model', 'mnist', '--format', 'json'], { cwd: FIXTURES });
    assert.deepEqual(allFindings(JSON.parse(r.stdout) as JsonReport), []);
    const unknown = await runCli(['validate', 'repos/clean', '--model', 'nope'], { cwd: FIXTURES });
    assert.equal(unknown.code, 2);
    assert.match(
      unknown.stderr,
      /no model directory named "nope"[^\n]*\n {2}hint: check --model against the repository's model directories: mnist\n/,
    );
    const missing = await runCli(['validate', 'repos/does-not-exist'], { cwd: FIXTURES });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot open the model repository: ENOENT/);
  });

  it('warns of a path with no model directories, and names a version directory given for its repository', async () => {
    await inTempDir(async (dir) => {
      await mkdir(join(dir, 'models/mnist/1'), { recursive: true });
      await copyFile(fixture('mnist/executable.popef'), join(dir, 'models/mnist/1/executable.popef'));
      const version = await runCli(['validate', 'models/mnist/1', '--format', 'json'], { cwd: dir });
      assert.equal(version.code, 0, version.stderr);
      const findings = allFindings(JSON.parse(version.stdout) as JsonReport);
      assert.deepEqual(
        findings.map((f) => f.rule),
        ['layout/no-models'],
      );
      const finding = findings[0] as JsonFinding;
      assert.match(finding.message, /^1 holds PopEF or name_map\.json files and no model directories: it is a version directory/);
      assert.match(finding.hint ?? '', /holds its model: .*models$/);
      // A CI gate that passes --strict fails on a wrong path.
      const strict = await runCli(['validate', 'models/mnist/1', '--strict'], { cwd: dir });
      assert.equal(strict.code, 1);
    });
  });

  it('refuses a malformed --triton-version', async () => {
    const r = await runCli(['validate', 'repos/clean', '--triton-version', '21'], { cwd: FIXTURES });
    assert.equal(r.code, 2);
  });

  it('documents the exit codes in --help', async () => {
    const r = await runCli(['validate', '--help']);
    assert.match(r.stdout, /Exit codes: 0 no errors \(warnings allowed unless --strict\), 1 findings,\n2 usage or I\/O errors\./);
  });
});
