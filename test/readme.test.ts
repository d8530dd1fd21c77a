// The README's console blocks, run as pasted, in order, from the root of a
// scratch clone of the repository (the build and node_modules of this one
// linked in): each command's standard output must be what the README shows,
// where a line "..." stands for any number of lines. A command ending in
// " &" runs in the background until "kill %1"; its output (both streams)
// must show the README's lines in order.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, tempDir } from './helpers.js';

interface Command {
  readonly line: number;
  readonly text: string;
  readonly expected: string[];
}

/** The commands of every ```console block, with the lines shown after each. */
export function consoleCommands(markdown: string): Command[] {
  const out: Command[] = [];
  const lines = markdown.split('\n');
  let inBlock = false;
  let current: { line: number; text: string; expected: string[] } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i] ?? '';
    if (!inBlock && l.startsWith('```console')) {
      inBlock = true;
      continue;
    }
    if (inBlock && l.startsWith('```')) {
      inBlock = false;
      if (current !== undefined) out.push(current);
      current = undefined;
      continue;
    }
    if (!inBlock) continue;
    if (l.startsWith('$ ')) {
      if (current !== undefined) out.push(current);
      current = { line: i + 1, text: l.slice(2), expected: [] };
      // Continuation lines of a command end in a backslash.
      while (current.text.endsWith('\\') && i + 1 < lines.length) current.text = `${current.text.slice(0, -1)} ${(lines[++i] ?? '').trim()}`;
    } else if (current !== undefined) current.expected.push(l);
  }
  return out;
}

/** Whether `actual` is `expected` with each "..." line standing for any number of lines. */
export function matches(expected: readonly string[], actual: readonly string[]): boolean {
  const memo = new Map<string, boolean>();
  const go = (e: number, a: number): boolean => {
    const key = `${e}:${a}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let result: boolean;
    if (e === expected.length) result = a === actual.length;
    else if (expected[e] === '...') result = go(e + 1, a) || (a < actual.length && go(e, a + 1));
    else result = a < actual.length && expected[e] === actual[a] && go(e + 1, a + 1);
    memo.set(key, result);
    return result;
  };
  return go(0, 0);
}

/** The expected lines, in order, somewhere in the output (for a background command). */
function appearInOrder(expected: readonly string[], output: string): boolean {
  const lines = output.split('\n');
  let at = 0;
  for (const e of expected.filter((x) => x !== '...')) {
    while (at < lines.length && lines[at] !== e) at++;
    if (at === lines.length) return false;
    at++;
  }
  return true;
}

const python = join(ROOT, '.venv', 'bin', 'python');
const hasPeers = existsSync(python) && spawnSync(python, ['-c', 'import tritonclient.grpc, PIL']).status === 0;
const missing = hasPeers ? undefined : 'the README runs the walkthrough client with .venv/bin/python (bash .ci/run installs it)';

describe('README.md', { skip: process.env.CI === 'true' ? false : missing }, () => {
  it('every console block runs as pasted and prints what it shows', { timeout: 300_000 }, async () => {
    const commands = consoleCommands(await readFile(join(ROOT, 'README.md'), 'utf8'));
    assert.ok(commands.length >= 6, 'the README has its console blocks');
    const { dir, cleanup } = await tempDir();
    let background: { child: ChildProcess; output: () => string; exited: Promise<void> } | undefined;
    try {
      const clone = join(dir, 'popef-toolkit');
      const git = spawnSync('git', ['clone', '-q', ROOT, clone], { encoding: 'utf8' });
      assert.equal(git.status, 0, git.stderr);
      for (const linked of ['node_modules', 'dist', '.venv']) await symlink(join(ROOT, linked), join(clone, linked));
      const env = { ...process.env, NO_COLOR: '1' };
      for (const c of commands) {
        const where = `README.md:${c.line}: ${c.text}`;
        if (c.text.endsWith(' &')) {
          const child = spawn('bash', ['-c', c.text.slice(0, -2)], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
          let output = '';
          child.stdout.on('data', (b: Buffer) => (output += b.toString()));
          child.stderr.on('data', (b: Buffer) => (output += b.toString()));
          const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
          background = { child, output: () => output, exited };
          const deadline = Date.now() + 60_000;
          while (!appearInOrder(c.expected, output)) {
            assert.ok(child.exitCode === null && Date.now() < deadline, `${where}\nexpected, in order:\n${c.expected.join('\n')}\ngot:\n${output}`);
            await new Promise((r) => setTimeout(r, 100));
          }
          continue;
        }
        if (c.text === 'kill %1') {
          assert.ok(background !== undefined, `${where}: no background job`);
          process.kill(-(background.child.pid ?? 0), 'SIGTERM');
          await background.exited;
          background = undefined;
          continue;
        }
        const r = spawnSync('bash', ['-c', c.text], { cwd: clone, env, encoding: 'utf8', timeout: 120_000 });
        assert.equal(r.status, 0, `${where}\n${r.stderr}`);
        const actual = r.stdout.replace(/\n$/, '').split('\n');
        assert.ok(matches(c.expected, actual), `${where}\nexpected:\n${c.expected.join('\n')}\ngot:\n${actual.join('\n')}`);
      }
    } finally {
      if (background !== undefined) {
        try {
          process.kill(-(background.child.pid ?? 0), 'SIGKILL');
        } catch {
          // already gone
        }
        await background.exited;
      }
      await cleanup();
    }
  });

  it('the "..." matcher', () => {
    assert.ok(matches(['a', '...', 'd'], ['a', 'b', 'c', 'd']));
    assert.ok(matches(['a', '...'], ['a']));
    assert.ok(!matches(['a', 'b'], ['a', 'c']));
    assert.ok(!matches(['a'], ['a', 'b']));
  });
});
