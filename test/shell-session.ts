// A bash session driven as a user pastes commands into a terminal.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

/**
 * Pastes `commands` into one bash, one at a time, as a user would: job
 * control on (as in an interactive shell, so that kill %1 reaches the
 * server), each command's standard output collected up to a marker, and a
 * command ending in "&" followed only once popef serve says it is ready.
 * Standard error is collected whole.
 */
export async function pasteIntoBash(
  commands: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ outputs: string[][]; stderr: string }> {
  const bash = spawn('bash', ['-s'], { cwd, env: { ...env, NO_COLOR: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  bash.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  bash.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<void>((resolve) => bash.once('exit', () => resolve()));
  const until = async (done: () => boolean, what: string): Promise<void> => {
    const deadline = Date.now() + 120_000;
    while (!done()) {
      assert.ok(bash.exitCode === null && Date.now() < deadline, `${what}\nstdout:\n${stdout}\nstderr:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const outputs: string[][] = [];
  try {
    bash.stdin.write('set -m\n');
    for (const [i, command] of commands.entries()) {
      const marker = `@@end of step ${i}@@`;
      const from = stdout.length;
      bash.stdin.write(`${command}\necho '${marker}'\n`);
      await until(() => stdout.includes(`${marker}\n`, from), `no end of: ${command}`);
      const printed = stdout.slice(from, stdout.indexOf(`${marker}\n`, from));
      outputs.push(printed === '' ? [] : printed.replace(/\n$/, '').split('\n'));
      if (command.endsWith('&')) await until(() => stderr.includes('popef serve: ready'), 'popef serve did not get ready');
    }
    bash.stdin.write('wait\n');
    bash.stdin.end();
    await exited;
  } finally {
    if (bash.exitCode === null) {
      // A failed step: the session's background jobs (their own process groups, under job control) go first.
      bash.stdin.write('kill $(jobs -p) 2>/dev/null\n');
      await new Promise((r) => setTimeout(r, 500));
      bash.kill('SIGKILL');
    }
  }
  return { outputs, stderr };
}
