/**
 * popef serve under load, beside the real Triton server. The MNIST model
 * (scaffolded repository, cpu plugin) is served by `popef serve`; a client
 * in a second process (test/bench/serve-load.ts) keeps 1, 4 and 16
 * requests in flight (BENCH_CONCURRENCY overrides) over gRPC, a gRPC
 * stream, gRPC with system shared memory, and HTTP with binary tensors, and
 * reports throughput and p50/p99 latency. The server's own overhead is the
 * p50 latency at concurrency 1 minus the p50 of the same run called on the
 * plugin in process (target: 150 us or less). Then the real tritonserver
 * (nvidia-pytriton's, in .venv) serves the same ONNX graph and weights
 * through its Python backend (test/bench/triton-python-model.py, on
 * onnxruntime from .venv), under the same load (target: popef serve's
 * throughput at least Triton's at each concurrency).
 *
 * The dynamic-batching rows repeat both with max_batch_size 8 and
 * `dynamic_batching { }` in both configs: requests queued while an instance
 * is busy run as one batch (popef serve: one cpu-plugin run per row of the
 * graph's fixed batch; Triton: the Python model joins the requests and runs
 * the same pieces).
 *
 * Prints figures only. Run: npm run build && npx tsx test/bench/serve.ts
 * (BENCH_SECONDS per measurement, default 5).
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFile, copyFile, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import { ModelSet } from '../../src/format/model-set.js';
import { CpuPlugin } from '../../src/run/cpu-plugin.js';
import { writeNpy } from '../../src/run/tensor-io/npy.js';
import { findTritonServer, linkPythonBackend, startTriton } from '../triton/oracle/tritonserver.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,4,16').split(',').map(Number);
const dir = await mkdtemp(join(tmpdir(), 'popef-bench-serve-'));
const silent = {
  stdout: () => undefined,
  stderr: () => undefined,
  stdoutIsTTY: false,
  stderrIsTTY: false,
  env: {},
  cwd: dir,
  signal: new AbortController().signal,
};

interface Figures {
  protocol: string;
  concurrency: number;
  requests: number;
  throughput: number;
  p50: number;
  p99: number;
}

function load(protocol: string, address: string, concurrency: number): Figures {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'test/bench/serve-load.ts'), protocol, address, 'mnist', String(concurrency), String(SECONDS)],
    { encoding: 'utf8', cwd: ROOT },
  );
  if (r.status !== 0) throw new Error(`load generator failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Figures;
}

const PROTOCOLS = ['grpc', 'grpc-stream', 'grpc-shm', 'http'] as const;

function measureAll(grpc: string, http: string, protocols: readonly string[] = PROTOCOLS): Figures[] {
  const out: Figures[] = [];
  for (const protocol of protocols) {
    for (const c of CONCURRENCY) out.push(load(protocol, protocol === 'http' ? http : grpc, c));
  }
  return out;
}

/** Starts a server process that prints its ports like popef serve does, measures it, stops it. */
async function measureServer(args: readonly string[], what: string, protocols?: readonly string[]): Promise<Figures[]> {
  const server = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: ROOT });
  let stderr = '';
  server.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  let ports: RegExpExecArray | null = null;
  while ((ports = /HTTP on [^:]+:(\d+), gRPC on [^:]+:(\d+)/.exec(stderr)) === null) {
    if (server.exitCode !== null) throw new Error(`${what} failed: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    return measureAll(`127.0.0.1:${ports[2] ?? ''}`, `127.0.0.1:${ports[1] ?? ''}`, protocols);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
}

/** What the dynamic-batching rows add to both configs. */
const BATCHING = 'dynamic_batching { }\n';

try {
  const repo = join(dir, 'models');
  const model = join(ROOT, 'fixtures/mnist/executable.popef');
  await main(['scaffold', model, '-r', repo, '-m', 'mnist', '--name', 'input=digit_image', '--name', 'softmax/Softmax:0=output_labels'], silent);
  const batchingRepo = join(dir, 'models-batching');
  await main(
    [
      'scaffold',
      model,
      '-r',
      batchingRepo,
      '-m',
      'mnist',
      '--name',
      'input=digit_image',
      '--name',
      'softmax/Softmax:0=output_labels',
      '--max-batch-size',
      '8',
    ],
    silent,
  );
  await appendFile(join(batchingRepo, 'mnist', 'config.pbtxt'), BATCHING);

  // The plugin alone, in process: the floor under every served request.
  const plugin = new CpuPlugin();
  const names = await ModelSet.open([model]);
  const executable = names.model().name;
  await names.close();
  const opened = await plugin.open({ files: [join(repo, 'mnist/1/executable.popef')], executable, options: {} });
  const input = { name: 'input', dtype: 'F32' as const, shape: [1, 1, 28, 28], data: new Uint8Array(28 * 28 * 4) };
  const inputs = new Map([['input', input]]);
  for (let i = 0; i < 200; i++) await opened.run(inputs);
  const inProcess: number[] = [];
  for (let i = 0; i < 5000; i++) {
    const t0 = performance.now();
    await opened.run(inputs);
    inProcess.push(performance.now() - t0);
  }
  await opened.close();
  await plugin.dispose();
  inProcess.sort((a, b) => a - b);
  const pluginP50 = inProcess[Math.floor(inProcess.length / 2)] ?? NaN;

  // The transport floor, then popef serve as a user starts it.
  const floor = await measureServer([join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(ROOT, 'test/bench/null-server.ts')], 'null server', [
    'grpc',
    'http',
  ]);
  const ours = await measureServer(
    [join(ROOT, 'bin/popef.cjs'), 'serve', repo, '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--plugin', 'cpu'],
    'popef serve',
  );
  const oursBatching = await measureServer(
    [join(ROOT, 'bin/popef.cjs'), 'serve', batchingRepo, '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--plugin', 'cpu'],
    'popef serve (dynamic batching)',
  );

  // The real Triton server, Python backend, same graph and weights.
  let theirs: Figures[] | undefined;
  let theirsBatching: Figures[] | undefined;
  let why = '';
  const binary = findTritonServer();
  const python = join(ROOT, '.venv/bin/python');
  if (binary === undefined || !existsSync(python) || spawnSync(python, ['-c', 'import onnxruntime']).status !== 0) {
    why = 'tritonserver or onnxruntime missing from .venv (.ci/run installs both)';
  } else {
    const backends = join(dir, 'backends');
    const site = await linkPythonBackend(backends);
    const tritonRepo = join(dir, 'triton-models');
    const v1 = join(tritonRepo, 'mnist', '1');
    await mkdir(v1, { recursive: true });
    const set = await ModelSet.open([model]);
    const m = set.model();
    const onnx = m.opaques.find((o) => o.name === 'onnx');
    if (onnx === undefined) throw new Error('the MNIST fixture has no onnx blob');
    await writeFile(join(v1, 'model.onnx'), await set.fileOf(onnx).readPayload(onnx));
    const weights: Record<string, string> = {};
    for (const t of set.tensors) {
      weights[t.name] = `${t.name}.npy`;
      await writeFile(
        join(v1, `${t.name}.npy`),
        writeNpy({ name: t.name, dtype: t.tensorInfo.dtype, shape: t.tensorInfo.shape, data: await set.fileOf(t).readPayload(t) }),
      );
    }
    await set.close();
    await writeFile(join(v1, 'graph.json'), JSON.stringify({ input: 'input', output: 'softmax/Softmax:0', weights, site_packages: site }));
    await copyFile(join(ROOT, 'test/bench/triton-python-model.py'), join(v1, 'model.py'));
    const tritonConfig =
      'name: "mnist"\nbackend: "python"\nmax_batch_size: 1\ninput [{ name: "digit_image" data_type: TYPE_FP32 dims: [1, 28, 28] }]\noutput [{ name: "output_labels" data_type: TYPE_FP32 dims: [10] }]\ninstance_group [{ kind: KIND_CPU count: 1 }]\n';
    await writeFile(join(tritonRepo, 'mnist', 'config.pbtxt'), tritonConfig);
    const measureTriton = async (repository: string): Promise<Figures[]> => {
      const triton = await startTriton(binary, repository, backends, 120_000);
      try {
        const ready = await triton.ask('/v2/models/mnist/ready');
        if (ready.status !== 200)
          throw new Error(
            `Triton did not load the Python model:\n${triton
              .log()
              .split('\n')
              .filter((l) => /^E/.test(l))
              .join('\n')}`,
          );
        return measureAll(`127.0.0.1:${triton.grpcPort}`, `127.0.0.1:${triton.httpPort}`);
      } finally {
        await triton.stop();
      }
    };
    theirs = await measureTriton(tritonRepo);
    // The same model, batching: max_batch_size 8, dynamic_batching, and the Python model joining the requests.
    const batchingTriton = join(dir, 'triton-models-batching');
    await cp(tritonRepo, batchingTriton, { recursive: true });
    await writeFile(
      join(batchingTriton, 'mnist/1/graph.json'),
      JSON.stringify({ input: 'input', output: 'softmax/Softmax:0', weights, site_packages: site, batching: true }),
    );
    await writeFile(join(batchingTriton, 'mnist/config.pbtxt'), tritonConfig.replace('max_batch_size: 1', 'max_batch_size: 8') + BATCHING);
    theirsBatching = await measureTriton(batchingTriton);
  }

  const ms = (v: number): string => `${v.toFixed(3)} ms`;
  console.log(`popef serve benchmark: MNIST, cpu plugin, ${SECONDS} s per row, client in its own process (${process.arch}, Node ${process.version})`);
  console.log(`plugin in process: p50 ${ms(pluginP50)} per run`);
  const table = (title: string, mine: Figures[], real: Figures[] | undefined): void => {
    console.log(title);
    console.log('protocol     conc   popef req/s   p50        p99        | Triton req/s   p50        p99        | popef/Triton');
    mine.forEach((o, i) => {
      const t = real?.[i];
      const right =
        t === undefined
          ? `| ${why}`
          : `| ${t.throughput.toFixed(0).padStart(12)}   ${ms(t.p50).padEnd(10)} ${ms(t.p99).padEnd(10)} | ${(o.throughput / t.throughput).toFixed(2)}x`;
      console.log(
        `${o.protocol.padEnd(11)}  ${String(o.concurrency).padStart(4)}   ${o.throughput.toFixed(0).padStart(11)}   ${ms(o.p50).padEnd(10)} ${ms(o.p99).padEnd(10)} ${right}`,
      );
    });
  };
  table('default scheduler (max_batch_size 1):', ours, theirs);
  table('dynamic batching (max_batch_size 8, dynamic_batching { }):', oursBatching, theirsBatching);
  console.log('transport floor (a server that answers at once, same client):');
  for (const f of floor)
    console.log(`  ${f.protocol.padEnd(6)} conc ${String(f.concurrency).padStart(2)}: ${f.throughput.toFixed(0)} req/s, p50 ${ms(f.p50)}`);
  for (const o of ours.filter((f) => f.concurrency === 1)) {
    const base = floor.find((f) => f.protocol === o.protocol && f.concurrency === 1);
    const total = (o.p50 - pluginP50) * 1000;
    const own = base === undefined ? NaN : (o.p50 - base.p50 - pluginP50) * 1000;
    console.log(
      `server overhead over ${o.protocol} at p50, concurrency 1: ${total.toFixed(0)} us over the in-process plugin, of which ${own.toFixed(0)} us over the transport floor (target <= 150 us)`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
