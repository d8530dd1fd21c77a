// npm run demo (scripts/demo.sh), as the README's first command runs it: in
// a scratch clone (this checkout's node_modules linked in, as npm ci would
// make it; dist/ built by the demo itself). It must end with the ten lines
// of the walkthrough's tritonclient program from popef serve, and its
// transcript, pasted into bash command by command, must print what it
// shows. Without python3 or PyPI it says what is missing and exits 0
// (scripts/client-python.sh).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, scratchClone, tempDir } from './helpers.js';
import { pasteIntoBash } from './shell-session.js';

const WALKTHROUGH = Array.from({ length: 10 }, (_, n) => `Predicted digit for file "${n}.png": ${n}`);
const TOP_1 = /^Top 1 of output_labels: \d \(0\.\d+\)$/;

const venvPython = join(ROOT, '.venv', 'bin', 'python');
const hasClient = existsSync(venvPython) && spawnSync(venvPython, ['-c', 'import tritonclient.grpc, PIL']).status === 0;
const hasPython3 = spawnSync('python3', ['-c', 'import venv, ensurepip']).status === 0;

interface Step {
  readonly command: string;
  readonly output: string[];
}

/** The transcript's commands ("$ " lines) with the lines printed after each; "# " lines are comments. */
function transcript(stdout: string): Step[] {
  const steps: { command: string; output: string[] }[] = [];
  for (const line of stdout.replace(/\n$/, '').split('\n')) {
    if (line.startsWith('$ ')) steps.push({ command: line.slice(2), output: [] });
    else if (steps.length > 0) steps[steps.length - 1]?.output.push(line);
    else assert.match(line, /^# /, 'the transcript starts with comments or a command');
  }
  return steps;
}

function demo(cwd: string, env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  return spawnSync('npm', ['run', '--silent', 'demo'], { cwd, encoding: 'utf8', timeout: 300_000, env: { ...process.env, NO_COLOR: '1', ...env } });
}

describe('npm run demo', () => {
  it(
    "ends with the walkthrough client's ten lines from popef serve, and its commands, pasted, print what it shows",
    { skip: process.env.CI === 'true' || hasClient ? false : 'no .venv with tritonclient and pillow to link in', timeout: 600_000 },
    async () => {
      const { dir, cleanup } = await tempDir();
      try {
        const clone = await scratchClone(dir, ['node_modules', '.venv']);
        const r = demo(clone, {});
        assert.equal(r.status, 0, r.stderr);
        const steps = transcript(r.stdout);
        const last = steps.slice(-2);
        assert.match(last[0]?.command ?? '', /\/python mnist_client\.py 127\.0\.0\.1:\d+ img$/);
        assert.deepEqual(last[0]?.output, WALKTHROUGH);
        assert.deepEqual(last[1], { command: 'kill %1', output: [] });
        // bash reports the job's end ("[1]+  Terminated ...", the subshell that ran the popef function) when it
        // reaps it, which may come before or after popef serve's last line: its job lines are left out.
        const serveLines = r.stderr.replace(/^\[\d+\][+-]? +(?:Terminated|Done|Exit \d+|Killed).*\n/gm, '');
        assert.match(
          serveLines,
          /popef serve: ready: 1 of 1 models.*\npopef serve: stopping: finishing the running requests\npopef serve: stopped\n/s,
        );
        // The for loop shown is the one that ran: its ten top-1 lines.
        const loop = steps.find((s) => s.command.startsWith('for f in img/*.png; do popef run models/mnist --plugin cpu'));
        assert.equal(loop?.output.filter((l) => TOP_1.test(l)).length, 10);

        const { dir: elsewhere, cleanup: cleanupElsewhere } = await tempDir();
        try {
          const pasted = await pasteIntoBash(
            steps.map((s) => s.command),
            elsewhere,
          );
          for (const [i, step] of steps.entries()) assert.deepEqual(pasted.outputs[i], step.output, `pasted: ${step.command}`);
          assert.match(pasted.stderr, /popef serve: stopped\n/);
        } finally {
          await cleanupElsewhere();
        }
      } finally {
        await cleanup();
      }
    },
  );

  it('without python3: the walkthrough runs, the client step says what is missing, exit 0', { timeout: 600_000 }, async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const clone = await scratchClone(dir, ['node_modules']);
      const r = demo(clone, { POPEF_DEMO_PYTHON: join(dir, 'no-python3'), POPEF_DEMO_VENV: join(dir, 'venv') });
      assert.equal(r.status, 0, r.stderr);
      const steps = transcript(r.stdout);
      assert.equal(steps.at(-1)?.command.startsWith('for f in img/*.png'), true, 'the run loop is the last step');
      assert.equal(steps.at(-1)?.output.filter((l) => TOP_1.test(l)).length, 10);
      // No serve step was run (scaffold's closing hint may still name popef serve).
      assert.equal(
        steps.some((s) => s.command.startsWith('popef serve')),
        false,
      );
      assert.match(
        r.stderr,
        /demo: skipped the client: it needs Python 3\.10 or newer, and no \S+no-python3 was found; install it \(Debian: apt-get install python3 python3-venv\), then run npm run demo again\n/,
      );
      assert.match(r.stderr, /only its client step was skipped/);
      assert.equal(existsSync(join(dir, 'venv')), false);
    } finally {
      await cleanup();
    }
  });

  it(
    'offline: pip fails, the note says what to install and from where, and no half-made environment is left',
    { skip: hasPython3 ? false : 'no python3 with venv', timeout: 300_000 },
    async () => {
      const { dir, cleanup } = await tempDir();
      try {
        const venv = join(dir, 'venv');
        // Nothing listens on port 9 (discard) here: the index is unreachable, as offline.
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          POPEF_DEMO_VENV: venv,
          PIP_INDEX_URL: 'http://127.0.0.1:9/simple',
          PIP_RETRIES: '0',
          PIP_TIMEOUT: '2',
          PIP_NO_CACHE_DIR: '1',
        };
        delete env.POPEF_CLIENT_PYTHON;
        const r = spawnSync('bash', [join(ROOT, 'scripts/client-python.sh')], { encoding: 'utf8', timeout: 240_000, env });
        assert.equal(r.status, 1, r.stderr);
        assert.equal(r.stdout, '');
        assert.match(r.stderr, /demo: skipped the client: pip could not install tritonclient\[grpc\]==2\.73\.0 pillow==13\.0\.0; its last lines:\n/);
        assert.match(r.stderr, /demo: with access to PyPI \(or a mirror in PIP_INDEX_URL\), run npm run demo again/);
        assert.equal(existsSync(venv), false);
      } finally {
        await cleanup();
      }
    },
  );

  it(
    'makes the environment once from PyPI, then reuses it without PyPI',
    {
      skip: process.env.CI === 'true' || process.env.POPEF_TEST_PYPI === '1' ? false : 'downloads 180 MB from PyPI: set POPEF_TEST_PYPI=1',
      timeout: 600_000,
    },
    async () => {
      const { dir, cleanup } = await tempDir();
      try {
        const venv = join(dir, 'venv');
        const env: NodeJS.ProcessEnv = { ...process.env, POPEF_DEMO_VENV: venv };
        delete env.POPEF_CLIENT_PYTHON;
        const first = spawnSync('bash', [join(ROOT, 'scripts/client-python.sh')], { encoding: 'utf8', timeout: 540_000, env });
        assert.equal(first.status, 0, first.stderr);
        assert.equal(first.stdout, `${venv}/bin/python\n`);
        assert.match(first.stderr, /installing the client's Python packages into/);
        const again = spawnSync('bash', [join(ROOT, 'scripts/client-python.sh')], {
          encoding: 'utf8',
          env: { ...env, PIP_INDEX_URL: 'http://127.0.0.1:9/simple' },
        });
        assert.equal(again.status, 0, again.stderr);
        assert.equal(again.stdout, first.stdout);
        assert.equal(again.stderr, '');
        const versions = spawnSync(
          `${venv}/bin/python`,
          ['-c', 'from importlib.metadata import version; print(version("tritonclient"), version("pillow"))'],
          {
            encoding: 'utf8',
          },
        );
        assert.equal(versions.stdout.trim(), '2.73.0 13.0.0');
      } finally {
        await cleanup();
      }
    },
  );
});
