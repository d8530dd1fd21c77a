// Commander's own usage errors and hand-checked option values reach the one
// error funnel (src/cli/main.ts): "popef: error: ... [E_USAGE]", a hint, exit 2.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CliIo } from '../../src/cli/io.js';
import { reportError } from '../../src/cli/report-error.js';
import { ErrorCode, PopefError, PopefWriter, isPopefError } from '../../src/index.js';
import { fixture, inTempDir, runCli } from '../helpers.js';

const USAGE = /^popef: error: (.+) \[E_USAGE\]\n {2}hint: (.+)\n$/;

async function usageError(args: string[]): Promise<{ message: string; hint: string; stdout: string }> {
  const r = await runCli(args);
  assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
  const m = USAGE.exec(r.stderr);
  assert.ok(m, `${args.join(' ')}: not one funnel error:\n${r.stderr}`);
  return { message: m[1] ?? '', hint: m[2] ?? '', stdout: r.stdout };
}

describe('the error funnel: commander usage errors', () => {
  const cases: [string[], RegExp, string][] = [
    [['scaffold', 'x.popef'], /^required option '-r, --repository <dir>' not specified$/, 'popef scaffold --help'],
    [['dump', '--nope', 'x.popef'], /^unknown option '--nope'/, 'popef dump --help'],
    [['dump'], /^missing required argument 'file'$/, 'popef dump --help'],
    [['run', 'x.popef', '--seed', 'abc'], /^option '--seed <n>' argument 'abc' is invalid\. expected an integer, got "abc"$/, 'popef run --help'],
    [
      ['validate', 'repo', '--format', 'xml'],
      /^option '--format <format>' argument 'xml' is invalid\. Allowed choices are text, json, junit, sarif, github, html\.$/,
      'popef validate --help',
    ],
    [['frobnicate'], /^unknown command 'frobnicate'$/, 'popef --help'],
    // commander's suggestion comes on a line of its own: the funnel keeps the error on one line.
    [['validate', 'repo', '--formt', 'json'], /^unknown option '--formt' \(Did you mean --format\?\)$/, 'popef validate --help'],
    [['dum', 'x.popef'], /^unknown command 'dum' \(Did you mean dump\?\)$/, 'popef --help'],
    // commander checks required options first: the mistyped option that caused the missing one is named too.
    [
      ['scaffold', 'x.popef', '--repo', 'r', '-m', 'm'],
      /^unknown option '--repo', so required option '-r, --repository <dir>' not specified$/,
      'popef scaffold --help',
    ],
  ];
  for (const [args, message, help] of cases) {
    it(`popef ${args.join(' ')}`, async () => {
      const e = await usageError(args);
      assert.match(e.message, message);
      assert.equal(e.hint, `run '${help}' for usage`);
      assert.equal(e.stdout, '');
    });
  }

  it('help and --version still print and exit 0, with nothing on standard error', async () => {
    for (const args of [['--help'], ['--version'], ['dump', '--help']]) {
      const r = await runCli(args);
      assert.equal(r.code, 0, args.join(' '));
      assert.equal(r.stderr, '', args.join(' '));
      assert.notEqual(r.stdout, '', args.join(' '));
    }
  });

  it('popef without a command shows the help on standard error and exits 2', async () => {
    const r = await runCli([]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^Usage: popef \[options\] \[command\]/);
  });
});

describe('the error funnel: option values the CLI checks itself', () => {
  it('validate --backend-directory that is no directory', async () => {
    const e = await usageError(['validate', fixture('repos/clean'), '--backend-directory', 'no/such/backends']);
    assert.match(e.message, /no\/such\/backends: --backend-directory no\/such\/backends is not a directory$/);
    assert.match(e.hint, /^give the directory passed to tritonserver --backend-directory/);
  });

  it('validate --triton-version 99.1', async () => {
    const e = await usageError(['validate', 'repo', '--triton-version', '99.1']);
    assert.equal(e.message, '--triton-version "99.1" is not YY.MM (for example 21.05) or latest');
    assert.match(e.hint, /such as 21\.05 or 24\.10, or latest/);
  });

  it('validate --max-findings-per-rule 0', async () => {
    const e = await usageError(['validate', 'repo', '--max-findings-per-rule', '0']);
    assert.match(e.message, /--max-findings-per-rule "0" is not a positive whole number or all/);
  });

  it('popef help with an unknown command names the commands', async () => {
    const e = await usageError(['help', 'frobnicate']);
    assert.match(e.message, /^unknown command 'frobnicate'; the commands: dump, diff, .*doctor, view, example$/);
  });
});

describe('library errors speak the library, the CLI adds its flags', () => {
  it('an existing destination: the library names its force option, the CLI names --force', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'model.popef');
      await writeFile(path, 'x');
      await assert.rejects(PopefWriter.create(path), (error: unknown) => {
        assert.ok(isPopefError(error));
        assert.equal(error.code, ErrorCode.Exists);
        assert.equal(error.suggestion, 'choose another name, or pass force: true to replace it');
        assert.equal(error.suggestedOption, 'force');
        assert.equal(error.withFile('other').suggestedOption, 'force', 'kept when the error is attributed');
        return true;
      });
      const config = ['config', fixture('mnist/executable.popef'), '-o', join(dir, 'config.pbtxt')];
      assert.equal((await runCli(config)).code, 0);
      const r = await runCli(config);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /\[E_EXISTS\]\n {2}hint: use --force to replace it, or choose another name\n$/);
    });
  });

  it('the CLI goes by the option an error names, not by the words of its hint', () => {
    const printed = (error: PopefError): string => {
      let text = '';
      reportError(error, { stderr: (s: string) => (text += s) } as unknown as CliIo);
      return text.split('\n')[1] ?? '';
    };
    const words = 'pass force: true to merge the two';
    assert.equal(printed(new PopefError(ErrorCode.Exists, 'x', { suggestion: words })), `  hint: ${words}`);
    assert.equal(
      printed(new PopefError(ErrorCode.Exists, 'x', { suggestion: words, suggestedOption: 'force' })),
      '  hint: use --force to replace it, or choose another name',
    );
    assert.equal(
      printed(new PopefError(ErrorCode.Exists, 'x')),
      '  hint: use --force to replace it, or choose another name',
      'an error with no hint of its own',
    );
    assert.equal(printed(new PopefError(ErrorCode.Io, 'x')), '');
  });
});
