// What the serve tests share: the seed's MNIST repository, scaffolded, and
// `popef serve` started as a user starts it (the built CLI) on free ports.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, fixture, runCli } from '../helpers.js';

/** `popef scaffold` of the MNIST fixture into `<dir>/models`, with the walkthrough's tensor names. */
export async function scaffoldMnist(dir: string): Promise<string> {
  const repo = join(dir, 'models');
  const r = await runCli([
    'scaffold',
    fixture('mnist/executable.popef'),
    '-r',
    repo,
    '-m',
    'mnist',
    '--name',
    'input=digit_image',
    '--name',
    'softmax/Softmax:0=output_labels',
  ]);
  assert.equal(r.code, 0, r.stderr);
  return repo;
}

export interface Serving {
  readonly child: ChildProcess;
  readonly http: number;
  readonly grpc: number;
  /** The metrics port (--metrics-port 0 unless `extra` turns metrics off). */
  readonly metrics?: number;
  stderr(): string;
  exited: Promise<number | null>;
}

/** Starts `popef serve` (cpu plugin) on free ports; resolves once it says it is ready. */
export async function serveCli(repo: string, extra: readonly string[] = []): Promise<Serving> {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin/popef.cjs'), 'serve', repo, '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--plugin', 'cpu', ...extra],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const m = /HTTP on [^:]+:(\d+), gRPC on [^:]+:(\d+)(?:, metrics on [^:]+:(\d+))?;/.exec(stderr);
    if (m !== null)
      return { child, http: Number(m[1]), grpc: Number(m[2]), metrics: m[3] === undefined ? undefined : Number(m[3]), stderr: () => stderr, exited };
    if (child.exitCode !== null) throw new Error(`popef serve exited with ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) {
      // A server left running would keep the test process alive after the failure.
      child.kill('SIGKILL');
      throw new Error(`popef serve did not get ready: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
