// Ctrl-C on `npx popef serve`. A terminal sends SIGINT to its whole
// foreground process group: npm, the shell npm runs the bin through
// (script-shell, /bin/sh by default) and popef. popef stops cleanly and exits
// 0; what npx then reports is the shell's and npm's doing: Debian's /bin/sh
// (dash) kills itself with SIGINT once its child has exited, whatever the
// child's status, and npm, seeing its child die of SIGINT, re-raises it on
// itself (exit 130); bash waits and takes the child's status (exit 0).
// The test plays the terminal: the group gets one SIGINT.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, fixture, inTempDir, runCli } from '../helpers.js';

/** npx in a project whose node_modules/.bin/popef is this checkout's bin; SIGINT to its process group once serve is ready. */
async function ctrlC(project: string, repo: string, npxArgs: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn('npx', ['--offline', ...npxArgs, 'popef', 'serve', repo, '--http-port', '0', '--grpc-port', '0', '--allow-metrics', 'false'], {
    cwd: project,
    // Its own process group, as a terminal's foreground job.
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', NO_COLOR: '1' },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // As a shell reports it: a death by signal n is 128 + n.
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal === null ? null : 128 + constants.signals[signal]))),
  );
  const group = child.pid ?? 0;
  const killer = setTimeout(() => process.kill(-group, 'SIGKILL'), 60_000);
  try {
    const deadline = Date.now() + 45_000;
    while (!/ready: /.test(stderr) && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.match(stderr, /ready: /, 'popef serve did not get ready under npx');
    process.kill(-group, 'SIGINT');
    return { code: await exited, stderr };
  } finally {
    clearTimeout(killer);
  }
}

describe('Ctrl-C on npx popef serve', () => {
  it('popef stops and exits 0; npx says 0 through bash, and 130 through dash as /bin/sh (npm re-raises the shell’s SIGINT)', async () => {
    await inTempDir(async (dir) => {
      const project = join(dir, 'project');
      await mkdir(join(project, 'node_modules', '.bin'), { recursive: true });
      await writeFile(join(project, 'package.json'), '{"name":"npx-interrupt","version":"1.0.0","private":true}\n');
      await symlink(join(ROOT, 'bin', 'popef.cjs'), join(project, 'node_modules', '.bin', 'popef'));
      const repo = join(dir, 'repo');
      assert.equal((await runCli(['scaffold', fixture('mnist/executable.popef'), '-r', repo, '-m', 'mnist'])).code, 0);

      const bash = await ctrlC(project, repo, ['--script-shell=/bin/bash']);
      assert.match(bash.stderr, /popef serve: stopped\n/);
      assert.equal(bash.code, 0, bash.stderr);

      const sh = await ctrlC(project, repo, []);
      assert.match(sh.stderr, /popef serve: stopped\n/, 'popef itself stops cleanly under the default shell too');
      if (realpathSync('/bin/sh').endsWith('dash')) assert.equal(sh.code, 130, sh.stderr);
    });
  });
});
