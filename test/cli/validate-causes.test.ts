import assert from 'node:assert/strict';
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { schemaErrors } from '../../src/json-schemas.js';
import { FIXTURES, fixture, inTempDir, matchGolden, runCli } from '../helpers.js';

// Findings by cause (issue 26, item 3): a defect that makes others follow is reported once, with what
// follows from it folded in. repos/name-map-missing is the issue's case: the seed's config (digit_image,
// output_labels) with no name_map.json, so each tensor fails the cross-check by its config name.

interface JsonFinding {
  rule: string;
  severity: string;
  message: string;
  file?: string;
  line?: number;
  unusable?: string[];
  consequences?: JsonFinding[];
}
interface JsonReport {
  repositories: { findings: JsonFinding[]; models: { name: string; findings: JsonFinding[] }[] }[];
  summary: { errors: number; warnings: number; folded: number; models: number };
}

const CASE = 'repos/name-map-missing';
const validate = (...args: string[]): ReturnType<typeof runCli> => runCli(['validate', CASE, ...args], { cwd: FIXTURES });
const FOLLOWERS = ['popef/missing-anchor', 'popef/missing-anchor', 'popef/unserved-anchor', 'popef/unserved-anchor'];

describe('popef validate: findings by cause', () => {
  it('one missing name map gives one error with its consequences folded in', async () => {
    const r = await validate('--format', 'json');
    const report = JSON.parse(r.stdout) as JsonReport;
    assert.deepEqual(schemaErrors('validate', report), []);
    const findings = report.repositories[0]?.models[0]?.findings ?? [];
    assert.deepEqual(
      findings.map((f) => [f.rule, f.severity, f.unusable]),
      [['layout/name-map-missing', 'error', ['name-map']]],
    );
    const consequences = findings[0]?.consequences ?? [];
    assert.deepEqual(
      consequences.map((c) => c.rule),
      FOLLOWERS,
    );
    // Each keeps its own message and position, in the config that names the tensor.
    assert.match(consequences[0]?.message ?? '', /^config input "digit_image" is not a user-provided input anchor/);
    assert.equal(consequences[0]?.file, 'mnist/config.pbtxt');
    assert.ok(Number.isInteger(consequences[0].line));
    assert.ok(consequences.every((c) => c.consequences === undefined && c.unusable === undefined));
    assert.deepEqual([report.summary.errors, report.summary.warnings, report.summary.folded], [1, 0, 4]);
    // A folded error is still an error: the exit code is that of its cause.
    assert.equal(r.code, 1);
  });

  it('text: the cause says how many follow from it, and the summary counts causes', async () => {
    const r = await validate();
    assert.match(
      r.stdout,
      /holds no name_map\.json \[layout\/name-map-missing\]\n {6}hint: .*\n {6}and 4 findings that follow from it \(--verbose lists them\)\n/,
    );
    assert.doesNotMatch(r.stdout, /popef\/missing-anchor/);
    assert.match(r.stdout, /\n1 error, 0 warnings in 1 model \(4 more folded\)\n$/);
    assert.equal(r.code, 1);
  });

  it('--verbose lists the consequences under their cause', async () => {
    const r = await validate('--verbose');
    assert.match(
      r.stdout,
      /\n {6}and 4 findings that follow from it:\n {8}repos\/name-map-missing\/mnist\/config\.pbtxt:\d+:\d+: error: config input "digit_image"/,
    );
    assert.equal(r.stdout.match(/^ {8}\S.*\[popef\/(missing|unserved)-anchor\]$/gm)?.length, 4);
    assert.equal(r.stdout.match(/^ {10}hint: /gm)?.length, 4);
    await matchGolden('validate', 'name-map-missing--verbose.txt', r.stdout);
    assert.equal(r.code, 1);
  });

  it('JUnit: one failure, and the rules that read the missing map skipped with the reason', async () => {
    const r = await validate('--format', 'junit');
    const suite =
      /<testsuite name="repos\/name-map-missing\/mnist" tests="(\d+)" failures="(\d+)" errors="0" skipped="(\d+)">([^]*?)<\/testsuite>/.exec(
        r.stdout,
      );
    assert.ok(suite !== null, r.stdout);
    assert.equal(suite[2], '1');
    const body = suite[4] ?? '';
    const reason =
      "not run: the name map is not usable (version directory mnist/1 of poplar model 'mnist' holds no name_map.json [layout/name-map-missing])";
    const skipped = [...body.matchAll(/<testcase classname="[^"]*" name="([^"]+)">\n {6}<skipped message="([^"]*)"\/>/g)];
    assert.deepEqual(
      skipped.map((m) => m[1]),
      [
        'name-map/unknown-tensor',
        'name-map/unmapped-tensor',
        'popef/missing-anchor',
        'popef/data-type',
        'popef/dims',
        'popef/max-batch-size',
        'popef/unserved-anchor',
      ],
    );
    assert.ok(
      skipped.every((m) => m[2] === reason),
      skipped.map((m) => m[2]).join('\n'),
    );
    assert.equal(suite[3], String(skipped.length));
    // What the skipped rules found anyway is shown beside the skip, and listed in the cause's failure.
    assert.match(body, /name="popef\/missing-anchor">\n {6}<skipped [^\n]*\n {6}<system-out>follows from \[layout\/name-map-missing\]: error: /);
    assert.match(body, /name="layout\/name-map-missing">\n {6}<failure type="error" [^>]*>[^<]*\nand 4 findings that follow from it:\n {2}error: /);
    assert.doesNotMatch(body, /name="popef\/[a-z-]+">\n {6}<failure/);
    assert.equal(r.code, 1);
  });

  it('SARIF: one result, its consequences as related locations', async () => {
    const r = await validate('--format', 'sarif');
    const sarif = JSON.parse(r.stdout) as {
      runs: {
        results: {
          ruleId: string;
          message: { text: string };
          relatedLocations?: { id: number; message: { text: string }; physicalLocation?: unknown }[];
        }[];
      }[];
    };
    assert.deepEqual(schemaErrors('sarif-2.1.0-subset', sarif), []);
    const results = sarif.runs[0]?.results ?? [];
    assert.deepEqual(
      results.map((x) => x.ruleId),
      ['layout/name-map-missing'],
    );
    assert.match(results[0]?.message.text ?? '', /and 4 findings that follow from it, listed as its related locations/);
    const related = results[0]?.relatedLocations ?? [];
    assert.deepEqual(
      related.map((l) => [l.id, /\[(popef\/[a-z-]+)\]$/.exec(l.message.text)?.[1]]),
      FOLLOWERS.map((rule, i) => [i, rule]),
    );
    assert.ok(related.every((l) => l.physicalLocation !== undefined));
  });

  it('GitHub: only the cause annotates, and says how many follow', async () => {
    const r = await validate('--format', 'github');
    const annotations = r.stdout.split('\n').filter((l) => l.startsWith('::'));
    assert.equal(annotations.length, 1);
    assert.match(
      annotations[0] ?? '',
      /^::error file=repos\/name-map-missing\/mnist\/1,title=popef validate layout\/name-map-missing::.*%0Aand 4 findings that follow from it \(popef validate --verbose lists them\)$/,
    );
  });

  it('HTML: the consequences are folded under their cause', async () => {
    const r = await validate('--format', 'html');
    assert.match(r.stdout, /<h4 class="error">1 error<\/h4>/);
    const details = /<details class="follows"><summary>and 4 findings that follow from it<\/summary><ul>(.*?)<\/ul><\/details>/.exec(r.stdout);
    assert.ok(details !== null);
    assert.equal(details[1]?.match(/<li><span class="error">error<\/span> /g)?.length, 4);
    assert.match(r.stdout, /1 error, 0 warnings in 1 model \(4 more folded into their causes\)/);
  });

  it('a cause in one version folds only what that version gives', async () => {
    await inTempDir(async (dir) => {
      // Version 1 has no name map; version 2 has one, and a config whose dims are wrong for its PopEF.
      const repo = join(dir, 'repo');
      await cp(fixture('repos/clean'), repo, { recursive: true });
      await cp(join(repo, 'mnist/1'), join(repo, 'mnist/2'), { recursive: true });
      await rm(join(repo, 'mnist/1/name_map.json'));
      const config = await readFile(join(repo, 'mnist/config.pbtxt'), 'utf8');
      await writeFile(join(repo, 'mnist/config.pbtxt'), `${config.replace('dims: [ 1, 28, 28 ]', 'dims: [ 1, 28, 27 ]')}version_policy { all {} }\n`);
      const r = await runCli(['validate', repo, '--format', 'json']);
      const findings = (JSON.parse(r.stdout) as JsonReport).repositories[0]?.models[0]?.findings ?? [];
      // Version 2 (checked first: highest first) finds the wrong dims itself; version 1's are folded into its missing map.
      assert.deepEqual(
        findings.map((f) => [f.rule, (f.consequences ?? []).map((c) => c.rule)]),
        [
          ['popef/dims', []],
          ['layout/name-map-missing', FOLLOWERS],
        ],
      );
    });
  });

  it("never folds a rule that mirrors Triton: the server's own message stands beside the cause", async () => {
    const r = await runCli(['validate', 'repos/config-missing', '--format', 'json'], { cwd: FIXTURES });
    const findings = (JSON.parse(r.stdout) as JsonReport).repositories[0]?.models[0]?.findings ?? [];
    assert.deepEqual(
      findings.map((f) => [f.rule, f.unusable, f.consequences]),
      [
        ['layout/config-missing', ['config'], undefined],
        ['config/no-backend', undefined, undefined],
      ],
    );
  });

  it('JUnit: a config that does not parse skips the rules that read the config, with the reason', async () => {
    const r = await runCli(['validate', 'repos/parse', '--format', 'junit'], { cwd: FIXTURES });
    assert.match(
      r.stdout,
      /name="io\/dims">\n {6}<skipped message="not run: the config is not usable \(failed to read text proto from [^"]*\[config\/parse\]\)"\/>/,
    );
    assert.match(r.stdout, /name="layout\/version-name"\/>/);
    assert.match(r.stdout, /name="config\/parse">\n {6}<failure /);
  });

  it("JUnit: the repository's suite lists the repository's rules, a model's suite no rule only a repository can break", async () => {
    const r = await runCli(['validate', 'repos/clean', '--format', 'junit'], { cwd: FIXTURES });
    const suite = (name: string): string[] => {
      const body = new RegExp(`<testsuite name="repos/clean/${name.replace(/[()]/g, '\\$&')}" tests="(\\d+)"[^>]*>([^]*?)</testsuite>`).exec(
        r.stdout,
      );
      assert.ok(body !== null, r.stdout.slice(0, 400));
      const names = [...(body[2] ?? '').matchAll(/ name="([^"]+)"/g)].map((m) => m[1] ?? '');
      assert.equal(Number(body[1]), names.length);
      return names;
    };
    assert.deepEqual(suite('(repository)').sort(), ['layout/hidden-directory', 'layout/link-loop', 'layout/model-directory', 'layout/no-models']);
    const model = suite('mnist');
    assert.ok(model.includes('layout/link-loop') && model.includes('config/parse'));
    assert.ok(!model.includes('layout/no-models') && !model.includes('layout/hidden-directory') && !model.includes('layout/model-directory'));
  });

  it('JUnit: with --require-popef and no PopEF, the cross-check notice is skipped with the reason, not passed', async () => {
    await inTempDir(async (dir) => {
      await cp(fixture('repos/clean'), join(dir, 'repo'), { recursive: true });
      await rm(join(dir, 'repo/mnist/1/executable.popef'));
      const r = await runCli(['validate', join(dir, 'repo'), '--require-popef', '--format', 'junit']);
      assert.match(r.stdout, /name="layout\/popef-missing">\n {6}<failure /);
      assert.match(r.stdout, /name="popef\/not-cross-checked">\n {6}<skipped message="not run: no PopEF file in mnist\/1"\/>/);
    });
  });
});
