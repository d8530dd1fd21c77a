// What the serve tests share: the seed's MNIST repository, scaffolded, and
// `popef serve` started as a user starts it (the built CLI) on free ports.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExecutionPlugin } from '../../src/run/plugin-api.js';
import { builtCli, fixture, runCli, tempDir } from '../helpers.js';
import { buildStandInBackends, linkPythonBackend, startTriton, type RunningTriton } from '../triton/oracle/tritonserver.js';

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
    [builtCli(), 'serve', repo, '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--plugin', 'cpu', ...extra],
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

/** Stops a `popef serve` started by serveCli and waits for it to exit. */
export async function stopServing(serving: Serving): Promise<void> {
  serving.child.kill('SIGKILL');
  await serving.exited;
}

/**
 * Copies the scaffolded `mnist` model of `repo` as each named model: its
 * config renamed, with that max_batch_size and the given block (a batcher)
 * appended. Resolves to `repo`.
 */
export async function addMnistVariants(repo: string, models: Readonly<Record<string, { maxBatchSize: number; batching: string }>>): Promise<string> {
  const base = await readFile(join(repo, 'mnist', 'config.pbtxt'), 'utf8');
  for (const [name, { maxBatchSize, batching }] of Object.entries(models)) {
    await cp(join(repo, 'mnist'), join(repo, name), { recursive: true });
    const config = base.replace('name: "mnist"', `name: "${name}"`).replace('max_batch_size: 1', `max_batch_size: ${maxBatchSize}`);
    await writeFile(join(repo, name, 'config.pbtxt'), `${config}\n${batching}\n`);
  }
  return repo;
}

/** A Python-backend model for Triton that sends its input `x` back as its output `y`. */
export const PYTHON_IDENTITY_MODEL = `import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("y", pb_utils.get_input_tensor_by_name(r, "x").as_numpy())]) for r in requests]
`;

/** POSTs `body` to a server on this host; the status and the answer's text. */
export async function postText(port: number, path: string, body: string): Promise<[number, string]> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body });
  return [res.status, await res.text()];
}

/** popef serve and the real Triton server, each on its repository. */
export interface BesideTriton {
  readonly ours: Serving;
  readonly theirs: RunningTriton;
  /** Stops both servers and removes the temporary directory. */
  stop(): Promise<void>;
}

export interface BesideTritonOptions {
  /** How long Triton may take to load the repository. */
  readonly timeoutMs: number;
  /**
   * Adds models to the scaffolded repository (`<dir>/models`); resolves to
   * Triton's repository: `repo` where both serve the same one. Without it,
   * both serve the scaffolded repository as it is.
   */
  readonly prepare?: (dir: string, repo: string) => Promise<string>;
  /** Links the Python backend beside the stand-in poplar one. */
  readonly pythonBackend?: boolean;
  /** Starts both servers at once, rather than Triton first. */
  readonly together?: boolean;
}

/**
 * In a temporary directory: the MNIST fixture scaffolded, `prepare` run on
 * it, the stand-in poplar backend built, then the real Triton server (the
 * `triton` binary) and `popef serve` (cpu plugin) started on the repository.
 */
export async function serveBesideTriton(triton: string | undefined, options: BesideTritonOptions): Promise<BesideTriton> {
  // Before Triton is started and has loaded the repository, which can take minutes on a loaded machine.
  builtCli();
  const temp = await tempDir();
  let theirs: RunningTriton | undefined;
  let ours: Serving | undefined;
  const stop = async (): Promise<void> => {
    if (ours !== undefined) await stopServing(ours);
    await theirs?.stop();
    await temp.cleanup();
  };
  try {
    const repo = await scaffoldMnist(temp.dir);
    const tritonRepo = options.prepare === undefined ? repo : await options.prepare(temp.dir, repo);
    const backends = join(temp.dir, 'backends');
    await buildStandInBackends(backends, ['poplar']);
    if (options.pythonBackend === true) await linkPythonBackend(backends);
    const startTheirs = (): Promise<RunningTriton> => startTriton(triton ?? '', tritonRepo, backends, options.timeoutMs);
    if (options.together === true) {
      const [t, o] = await Promise.allSettled([startTheirs(), serveCli(repo)]);
      if (t.status === 'fulfilled') theirs = t.value;
      if (o.status === 'fulfilled') ours = o.value;
      if (t.status === 'rejected') throw t.reason;
      if (o.status === 'rejected') throw o.reason;
      return { ours: o.value, theirs: t.value, stop };
    }
    const started = await startTheirs();
    theirs = started;
    const serving = await serveCli(repo);
    ours = serving;
    return { ours: serving, theirs: started, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

interface ModelStatsJson {
  inference_count: number;
  execution_count: number;
  inference_stats: { success: { count: number }; fail: { count: number } };
  batch_stats: { batch_size: number; compute_infer: { count: number } }[];
}

/** The deterministic part of a model's statistics (GET /v2/models/MODEL/stats): counts, successes, failures, batch sizes executed. */
export async function batchStats(port: number, model: string): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/stats`);
  const s = ((await res.json()) as { model_stats: ModelStatsJson[] }).model_stats[0];
  assert.ok(s !== undefined);
  return {
    inference_count: s.inference_count,
    execution_count: s.execution_count,
    success: s.inference_stats.success.count,
    fail: s.inference_stats.fail.count,
    batches: s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
  };
}

/** The plugin of a scheduler test's instance double: its model is given directly, so the plugin opens nothing. */
export function pluginDouble(): ExecutionPlugin {
  return {
    name: 'double',
    probe: () => Promise.resolve({ available: true }),
    open: () => Promise.reject(new Error('unused')),
    dispose: () => Promise.resolve(),
  };
}
