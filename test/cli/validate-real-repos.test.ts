// popef validate on repositories as real users have them, without the SDK:
// Graphcore's four example repositories (config.pbtxt and name_map.json
// only), and the same with an SDK-written file where the PopEF goes. The
// SDK-written file is made by the SIMULATED SDK (fixtures/sim-sdk), whose
// popef.Writer stores its own private encoding: it stands in for a real
// export (not the SDK's bytes), which is all validate needs, since it never
// reads a file that is not in the open layout.
import assert from 'node:assert/strict';
import { copyFile, cp, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { schemaErrors } from '../../src/json-schemas.js';
import { ROOT, fixture, inTempDir, runCli, tempDir } from '../helpers.js';

const EXAMPLES = join(ROOT, 'fixtures/graphcore-examples');
const SIM = { ...process.env, PYTHONPATH: fixture('sim-sdk') } as Record<string, string>;

interface JsonFinding {
  rule: string;
  severity: string;
  message: string;
}
interface JsonReport {
  repositories: { findings: JsonFinding[]; models: { name: string; findings: JsonFinding[] }[] }[];
  summary: { errors: number; warnings: number; notices: number; models: number; notCrossChecked: number };
}

const models = async (repo: string): Promise<string[]> =>
  (await readdir(repo, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);

/** Every format exits 0 on a correct repository, reports the notices as notices, and --require-popef exits 1. */
async function checkAllFormats(repo: string, reason: RegExp): Promise<void> {
  const json = await runCli(['validate', repo, '--format', 'json']);
  assert.equal(json.code, 0, json.stdout);
  const report = JSON.parse(json.stdout) as JsonReport;
  assert.deepEqual(schemaErrors('validate', report), []);
  const names = await models(repo);
  assert.equal(names.length, 4);
  for (const m of report.repositories[0]?.models ?? []) {
    assert.deepEqual(
      m.findings.map((f) => [f.rule, f.severity]),
      [['popef/not-cross-checked', 'info']],
      m.name,
    );
    assert.match(m.findings[0]?.message ?? '', reason);
  }
  assert.deepEqual(report.summary, { errors: 0, warnings: 0, notices: 4, folded: 0, models: 4, notCrossChecked: 4 });

  const text = await runCli(['validate', repo]);
  assert.equal(text.code, 0);
  assert.match(text.stdout, /0 errors, 0 warnings in 4 models; 4 of them not cross-checked against a PopEF\n$/);
  assert.equal(text.stdout.match(/: note: anchors not cross-checked/g)?.length, 4);

  const strict = await runCli(['validate', repo, '--strict']);
  assert.equal(strict.code, 0, 'a notice is not a warning: --strict leaves it');

  const junit = await runCli(['validate', repo, '--format', 'junit']);
  assert.equal(junit.code, 0);
  assert.match(junit.stdout, /<testsuites name="popef validate" tests="\d+" failures="0" errors="0" skipped="\d+">/);
  for (const name of names) {
    const suite = junit.stdout.slice(junit.stdout.indexOf(`<testsuite name="${repo}/${name}"`));
    const cases = suite.slice(0, suite.indexOf('</testsuite>'));
    // The notice is a skipped test case with its reason, and so is every rule that reads the PopEF.
    for (const rule of ['popef/not-cross-checked', 'popef/dims', 'popef/data-type', 'popef/unserved-anchor', 'popef/max-batch-size']) {
      assert.match(cases, new RegExp(`name="${rule}">\\n      <skipped message="[^"]+"/>`), `${name} ${rule}`);
    }
    assert.match(cases, /name="config\/parse"\/>/);
  }

  const sarif = await runCli(['validate', repo, '--format', 'sarif']);
  assert.equal(sarif.code, 0);
  const log = JSON.parse(sarif.stdout) as { runs: { results: { level: string }[] }[] };
  assert.deepEqual(schemaErrors('sarif-2.1.0-subset', log), []);
  assert.deepEqual(
    log.runs[0]?.results.map((r) => r.level),
    ['note', 'note', 'note', 'note'],
  );

  const github = await runCli(['validate', repo, '--format', 'github']);
  assert.equal(github.code, 0);
  assert.equal(github.stdout.match(/^::notice file=/gm)?.length, 4);

  const gate = await runCli(['validate', repo, '--require-popef', '--format', 'json']);
  assert.equal(gate.code, 1);
  const gated = JSON.parse(gate.stdout) as JsonReport;
  assert.equal(gated.summary.errors, 4);
  assert.equal(gated.summary.notices, 0);
}

describe("popef validate without the SDK: Graphcore's example repositories", () => {
  it('no PopEF file: exit 0 in every format, one notice per model; --require-popef exits 1', async () => {
    await checkAllFormats(EXAMPLES, /^anchors not cross-checked for model '[^']+': no PopEF file in [^ ]+\/1$/);
  });

  describe('with an SDK-written file (made by the simulated SDK) in each version directory', () => {
    let standIn = '';
    let cleanup: () => Promise<void> = () => Promise.resolve();
    before(async () => {
      const temp = await tempDir();
      cleanup = temp.cleanup;
      standIn = join(temp.dir, 'mnist.sdk.popef');
      const e = await runCli(['export', fixture('mnist/executable.popef'), '-o', standIn], { env: SIM });
      assert.equal(e.code, 0, e.stderr);
    });

    it('exit 0 in every format, one notice per model naming the file; --require-popef exits 1', async () => {
      try {
        await inTempDir(async (dir) => {
          const repo = join(dir, 'graphcore-triton');
          await cp(EXAMPLES, repo, { recursive: true });
          for (const m of await models(repo)) await copyFile(standIn, join(repo, m, '1', 'executable.popef'));
          await checkAllFormats(
            repo,
            /^anchors not cross-checked for model '[^']+': [^ ]+\/1\/executable\.popef is not in the PopEF open layout \(written by the Poplar SDK: its encoding is unpublished\)$/,
          );
        });
      } finally {
        await cleanup();
      }
    });
  });

  it('a damaged open-layout file is still an error, never a notice', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      await cp(fixture('repos/clean'), repo, { recursive: true });
      const bytes = Buffer.from(await (await import('node:fs/promises')).readFile(fixture('mnist/executable.popef')));
      // The signature stays; the rest is cut short.
      await writeFile(join(repo, 'mnist/1/executable.popef'), bytes.subarray(0, 40));
      const r = await runCli(['validate', repo, '--format', 'json']);
      assert.equal(r.code, 1);
      const report = JSON.parse(r.stdout) as JsonReport;
      assert.deepEqual(
        report.repositories[0]?.models[0]?.findings.map((f) => [f.rule, f.severity]),
        [['popef/unreadable', 'error']],
      );
      // An empty file is not an export either.
      await writeFile(join(repo, 'mnist/1/executable.popef'), '');
      const empty = JSON.parse((await runCli(['validate', repo, '--format', 'json'])).stdout) as JsonReport;
      assert.deepEqual(
        empty.repositories[0]?.models[0]?.findings.map((f) => f.rule),
        ['popef/unreadable'],
      );
    });
  });
});
