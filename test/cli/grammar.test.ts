// The one grammar of the command line (README "One grammar for every
// command"): --format with its aliases, exit codes in every --help, the
// global --no-color, unknown values refused, old spellings with a notice.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { CliIo } from '../../src/cli/io.js';
import { ROOT, fixture, inTempDir, runCli } from '../helpers.js';

const MNIST = fixture('mnist/executable.popef');

describe('the command-line grammar', () => {
  it('--format json is --json, for every command with a JSON output', async () => {
    for (const args of [
      ['dump', MNIST],
      ['diff', fixture('diff/base.popef'), fixture('diff/identical.popef')],
      ['validate', fixture('repos/clean')],
    ]) {
      const a = await runCli([...args, '--format', 'json']);
      const b = await runCli([...args, '--json']);
      assert.equal(a.code, b.code, args.join(' '));
      const strip = (t: string): string => t.replace(/"(elapsedMs|durationMs|generatedAt)": [^,\n]+/g, '');
      assert.equal(strip(a.stdout), strip(b.stdout), args.join(' '));
      JSON.parse(a.stdout);
    }
    const clash = await runCli(['dump', MNIST, '--format', 'text', '--json']);
    assert.equal(clash.code, 2);
    assert.match(clash.stderr, /--format text and --format json were both asked for/);
  });

  it('every command lists its exit codes in --help', async () => {
    for (const command of [
      'dump',
      'diff',
      'config',
      'scaffold',
      'validate',
      'describe',
      'run',
      'serve',
      'pack',
      'unpack',
      'import',
      'export',
      'doctor',
      'view',
      'example',
    ]) {
      const r = await runCli([command, '--help']);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /Exit codes:/, command);
    }
  });

  it('honours --no-color before the command name', async () => {
    const r = await runCli(['--no-color', 'validate', fixture('repos/clean')], { env: { FORCE_COLOR: '1' } });
    assert.doesNotMatch(r.stdout, new RegExp(String.fromCharCode(27)));
    const coloured = await runCli(['validate', fixture('repos/clean')], { env: { FORCE_COLOR: '1' } });
    assert.match(coloured.stdout, new RegExp(String.fromCharCode(27)));
  });

  it('refuses what it does not know: a command to help with, a field to ignore', async () => {
    const help = await runCli(['help', 'nosuch']);
    assert.equal(help.code, 2);
    assert.match(help.stderr, /unknown command 'nosuch'; the commands: dump, diff/);
    const ignore = await runCli(['diff', fixture('diff/base.popef'), fixture('diff/identical.popef'), '--ignore', 'bogus']);
    assert.equal(ignore.code, 2);
    assert.match(ignore.stderr, /--ignore "bogus" matches no difference popef diff reports/);
    const known = await runCli(['diff', fixture('diff/base.popef'), fixture('diff/anchor-renamed.popef'), '--ignore', 'anchor']);
    assert.notEqual(known.code, 2, known.stderr);
  });

  it('builds only the command it runs, and every command for help or a typo', async () => {
    const { Command } = await import('commander');
    const { register } = await import('../../src/cli/commands/index.js');
    const io: CliIo = {
      stdout: () => undefined,
      stderr: () => undefined,
      stdoutIsTTY: false,
      stderrIsTTY: false,
      env: {},
      cwd: ROOT,
      signal: new AbortController().signal,
    };
    const names = (argv: string[]): string[] => {
      const program = new Command('popef');
      register(program, io, () => undefined, argv);
      return program.commands.map((c) => c.name());
    };
    const all = [
      'dump',
      'diff',
      'config',
      'scaffold',
      'validate',
      'describe',
      'run',
      'serve',
      'pack',
      'unpack',
      'import',
      'export',
      'doctor',
      'view',
      'example',
    ];
    assert.deepEqual(names(['dump', 'run']), ['dump']);
    assert.deepEqual(names(['--no-color', 'export', 'a.popef']), ['import', 'export']);
    for (const argv of [[], ['--help'], ['help', 'dump'], ['dmup', 'x.popef']]) assert.deepEqual(names(argv), all, argv.join(' '));
    const help = await runCli(['--help']);
    for (const name of all) assert.match(help.stdout, new RegExp(`^  ${name} `, 'm'), name);
    const typo = await runCli(['dmup', MNIST]);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /unknown command 'dmup'[\s\S]*did you mean dump/i);
  });

  it('keeps the old spellings working, with a notice', async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['config', MNIST, '--out', join(dir, 'c'), '--model-name', 'mnist']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /config --out is deprecated; use -o, --output/);
      assert.match(r.stderr, /config --model-name is deprecated; use -m, --model/);
      const now = await runCli(['config', MNIST, '-o', join(dir, 'd'), '-m', 'mnist']);
      assert.equal(now.code, 0, now.stderr);
      assert.doesNotMatch(now.stderr, /deprecated/);
    });
    const m = await runCli(['dump', '-m', MNIST]);
    assert.equal(m.code, 0);
    assert.match(m.stdout, /Metadata:/);
    assert.match(m.stderr, /dump -m is deprecated; use --metadata \(-m means --model in every other command\)/);
  });

  it('reads a model from standard input for "-" (dump, diff)', () => {
    const cli = (args: string[], input: Buffer): { status: number | null; stdout: string; stderr: string } =>
      spawnSync(process.execPath, [join(ROOT, 'bin/popef.cjs'), ...args], { input, encoding: 'utf8' });
    const dump = cli(['dump', '--user-anchors', '-'], readFileSync(MNIST));
    assert.equal(dump.status, 0, dump.stderr);
    assert.match(dump.stdout, /^PopEF file: <stdin>\n/);
    assert.match(dump.stdout, /Name: "softmax\/Softmax:0"/);
    const diff = cli(['diff', '-', fixture('diff/identical.popef')], readFileSync(fixture('diff/base.popef')));
    assert.equal(diff.status, 0, diff.stderr);
    const empty = cli(['dump', '-'], Buffer.alloc(0));
    assert.equal(empty.status, 2);
    assert.match(empty.stderr, /<stdin>: offset 0: not a PopEF open-layout file/);
  });
});
