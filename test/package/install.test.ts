// The package as a user installs it: .ci/run packs it and installs the
// tarball into an empty project (.install-test/project) with
// ONNXRUNTIME_NODE_INSTALL=skip, keeping npm's output in
// .install-test/install.log. Here: that output holds no warning this
// package could avoid, and the README's ```console installed block (the
// walkthrough with npx popef, from popef example to the tritonclient
// program against popef serve) runs there as pasted and prints what it
// shows. Skipped where that install was not made, except under CI=true.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '../helpers.js';
import { appearInOrder, consoleCommands, matches } from '../readme-blocks.js';
import { pasteIntoBash } from '../shell-session.js';

const INSTALL = join(ROOT, '.install-test');
const PROJECT = join(INSTALL, 'project');
const BIN = join(PROJECT, 'node_modules', '.bin', 'popef');
const missing = existsSync(BIN) ? undefined : 'the packed package is not installed (.ci/run installs it into .install-test/)';

/** Dependencies whose install step npm 11 skips without allowScripts, and lists: harmless here, and not this package's to avoid. */
const THEIR_SCRIPTS = new Set(['onnxruntime-node', 'protobufjs']);

describe('the installed package', { skip: process.env.CI === 'true' ? false : missing }, () => {
  it('npm install of the tarball warns of nothing this package could avoid (no install step of its own)', async () => {
    const log = await readFile(join(INSTALL, 'install.log'), 'utf8');
    assert.match(log, /^added \d+ packages/m);
    const warnings = log.split('\n').filter((l) => /^npm warn/i.test(l));
    assert.deepEqual(
      warnings.filter((l) => !l.startsWith('npm warn install-scripts')),
      [],
      'only the list of skipped install scripts',
    );
    assert.doesNotMatch(log, /popef-toolkit@/);
    const named = warnings.flatMap((l) => /^npm warn install-scripts {3}(\S+)@\S+ \(/.exec(l)?.[1] ?? []);
    assert.deepEqual(
      named.filter((n) => !THEIR_SCRIPTS.has(n)),
      [],
    );
  });

  it("runs the README's walkthrough with npx popef, as pasted, from popef example to the client", { timeout: 600_000 }, async () => {
    const commands = consoleCommands(await readFile(join(ROOT, 'README.md'), 'utf8'), 'console installed');
    assert.ok(commands.length >= 10, 'the README has the installed walkthrough');
    // A directory of the project (npx finds the project's popef from it), as the project's root would be.
    const dir = await mkdtemp(join(PROJECT, 'walkthrough-'));
    try {
      const pasted = await pasteIntoBash(
        commands.map((c) => c.text),
        dir,
      );
      let stderrAt = 0;
      for (const [i, c] of commands.entries()) {
        const where = `README.md:${c.line}: ${c.text}`;
        if (c.text.endsWith(' &') || c.text === 'kill %1') {
          // The server's lines (standard error), in order, after those of the step before.
          assert.ok(
            appearInOrder(c.expected, pasted.stderr.slice(stderrAt)),
            `${where}\nexpected, in order:\n${c.expected.join('\n')}\ngot:\n${pasted.stderr}`,
          );
          stderrAt = pasted.stderr.indexOf(c.expected.at(-1) ?? '', stderrAt);
          continue;
        }
        const actual = pasted.outputs[i] ?? [];
        assert.ok(matches(c.expected, actual), `${where}\nexpected:\n${c.expected.join('\n')}\ngot:\n${actual.join('\n')}`);
      }
      // The onnxruntime-node the cpu plugin used is the installed project's, not this repository's.
      const which = spawnSync(process.execPath, ['-e', "console.log(require.resolve('onnxruntime-node'))"], { cwd: PROJECT, encoding: 'utf8' });
      assert.match(which.stdout, new RegExp(`^${PROJECT.replace(/[/.]/g, '\\$&')}/node_modules/onnxruntime-node/`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
