// The README's console blocks, run as pasted, in order, from the root of a
// scratch clone of the repository, after the first set-up command only: what
// `npm ci && npm run demo` leaves is linked in from this checkout
// (node_modules, the dist/ the demo builds, and the .venv with tritonclient
// and pillow that it makes; test/demo.test.ts shows that it does), and
// nothing of .ci/run is used. Ports 8000 and 8001 are held by this test
// meanwhile, as by a Triton server on the machine. Each command's standard
// output must be what the README shows, where a line "..." stands for any
// number of lines. A command ending in " &" runs in the background until
// "kill %1"; its output (both streams) must show the README's lines in
// order, and after kill %1 the lines shown under it.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, scratchClone, tempDir } from './helpers.js';
import { appearInOrder, consoleCommands, matches } from './readme-blocks.js';

const python = join(ROOT, '.venv', 'bin', 'python');
const hasPeers = existsSync(python) && spawnSync(python, ['-c', 'import tritonclient.grpc, PIL']).status === 0;
const missing = hasPeers ? undefined : 'the README runs the walkthrough client with .venv/bin/python (npm run demo makes it)';

/** Holds `port` on every address, as another server would; undefined when something already holds it (taken either way). */
async function holdPort(port: number): Promise<Server | undefined> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(undefined));
    server.listen(port, () => resolve(server));
  });
}

describe('README.md', { skip: process.env.CI === 'true' ? false : missing }, () => {
  it('every console block runs as pasted and prints what it shows', { timeout: 300_000 }, async () => {
    const commands = consoleCommands(await readFile(join(ROOT, 'README.md'), 'utf8'), 'console');
    assert.ok(commands.length >= 6, 'the README has its console blocks');
    const { dir, cleanup } = await tempDir();
    const held = await Promise.all([8000, 8001].map(holdPort));
    let background: { child: ChildProcess; output: () => string; exited: Promise<void> } | undefined;
    try {
      const clone = await scratchClone(dir, ['node_modules', 'dist', '.venv']);
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
          const before = background.output().length;
          process.kill(-(background.child.pid ?? 0), 'SIGTERM');
          await background.exited;
          const after = background.output().slice(before);
          assert.ok(appearInOrder(c.expected, after), `${where}\nexpected, in order:\n${c.expected.join('\n')}\ngot:\n${after}`);
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
      await Promise.all(held.map((s) => new Promise((r) => (s === undefined ? r(undefined) : s.close(r)))));
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
