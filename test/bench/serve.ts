/**
 * popef serve under load, beside the real Triton server. The MNIST model
 * (scaffolded repository, cpu plugin) is served by `popef serve`; a client
 * in a second process (test/bench/serve-load.ts) keeps 1, 4 and 16
 * requests in flight (BENCH_CONCURRENCY overrides) over gRPC, a gRPC
 * stream, gRPC with system shared memory, and HTTP with binary tensors
 * (BENCH_PROTOCOLS picks), and reports throughput, p50/p99 latency, and
 * the server's CPU time per request (its process and all its descendants,
 * from /proc: Triton's Python backend stubs count). The server's own
 * overhead is the p50 latency at concurrency 1 minus the p50 of the same
 * run called on the plugin in process (target: 150 us or less). The real
 * tritonserver (nvidia-pytriton's, in .venv) serves the same ONNX graph
 * and weights through its Python backend (test/bench/triton-python-model.py,
 * on onnxruntime from .venv), under the same load (target: popef serve's
 * throughput at least Triton's at each concurrency).
 *
 * Both servers run side by side and every row is measured BENCH_ROUNDS
 * times (default 2), the two servers taking turns and the one going first
 * changing each round, so that both meet the same load from the rest of
 * the machine. Rows print the range of req/s over the rounds, the median
 * p50, p99 and CPU per request, the median and the range of the per-round
 * ratio of throughputs (judge "at least Triton's" by the median), and the
 * 1-minute load average seen during the row. CPU per
 * request is much less sensitive to that load than req/s: a server with
 * many threads gets a larger share of a busy machine than one event loop.
 *
 * The dynamic-batching rows repeat both with max_batch_size 8 and
 * `dynamic_batching { }` in both configs, at concurrency 1, 8 and 32
 * (BENCH_BATCHING_CONCURRENCY): requests queued while an instance is busy
 * run as one batch (popef serve: one cpu-plugin run per row of the graph's
 * fixed batch; Triton: the Python model joins the requests and runs the
 * same pieces). BENCH_TABLES=default or =batching runs one table only.
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
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const numbers = (text: string): number[] => text.split(',').map(Number);
const CONCURRENCY = numbers(process.env.BENCH_CONCURRENCY ?? '1,4,16');
const BATCHING_CONCURRENCY = numbers(process.env.BENCH_BATCHING_CONCURRENCY ?? '1,8,32');
const PROTOCOLS = (process.env.BENCH_PROTOCOLS ?? 'grpc,grpc-stream,grpc-shm,http').split(',');
const TABLES = (process.env.BENCH_TABLES ?? 'default,batching').split(',');
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

/** One load run, as serve-load.ts prints it. */
interface Figures {
  protocol: string;
  concurrency: number;
  requests: number;
  throughput: number;
  p50: number;
  p99: number;
  /** The server's CPU (its process tree, user + system) over the timed window, per request. */
  cpuMsPerRequest: number;
  /** The 1-minute load average at the start and the end of the window. */
  load: [number, number];
}

/** A server being measured: where it listens and the processes its CPU time is read from. */
interface Running {
  readonly grpc: string;
  readonly http: string;
  readonly pid: number;
  stop(): Promise<void>;
}

function load(server: Running, protocol: string, concurrency: number): Figures {
  const address = protocol === 'http' ? server.http : server.grpc;
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'test/bench/serve-load.ts'), protocol, address, 'mnist', String(concurrency), String(SECONDS)],
    { encoding: 'utf8', cwd: ROOT, env: { ...process.env, BENCH_SERVER_PIDS: String(server.pid) } },
  );
  if (r.status !== 0) throw new Error(`load generator failed (${r.status ?? r.signal ?? '?'}): ${r.stderr}${r.stdout.slice(-2000)}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Figures;
}

/** Starts a server process that prints its ports like popef serve does. */
async function startProcess(args: readonly string[], what: string): Promise<Running> {
  const server = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: ROOT });
  let stderr = '';
  server.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  let ports: RegExpExecArray | null = null;
  while ((ports = /HTTP on [^:]+:(\d+), gRPC on [^:]+:(\d+)/.exec(stderr)) === null) {
    if (server.exitCode !== null) throw new Error(`${what} failed: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    grpc: `127.0.0.1:${ports[2] ?? ''}`,
    http: `127.0.0.1:${ports[1] ?? ''}`,
    pid: server.pid ?? 0,
    stop: async () => {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    },
  };
}

/**
 * Every protocol and concurrency, ROUNDS times, the servers taking turns
 * (the first server of a round goes second in the next): figures[server][row][round].
 */
function alternate(servers: readonly Running[], protocols: readonly string[], concurrencies: readonly number[], rounds = ROUNDS): Figures[][][] {
  const out: Figures[][][] = servers.map(() => []);
  for (const protocol of protocols) {
    for (const c of concurrencies) {
      const row = servers.map(() => [] as Figures[]);
      for (let round = 0; round < rounds; round++) {
        const order = servers.map((_, i) => i);
        if (round % 2 === 1) order.reverse();
        for (const i of order) row[i]?.push(load(servers[i] as Running, protocol, c));
      }
      row.forEach((r, i) => out[i]?.push(r));
    }
  }
  return out;
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

  // The real Triton server, Python backend, same graph and weights.
  let startTritonOn: ((repository: string) => Promise<Running>) | undefined;
  const tritonRepo = join(dir, 'triton-models');
  const batchingTriton = join(dir, 'triton-models-batching');
  let why = '';
  const binary = findTritonServer();
  const python = join(ROOT, '.venv/bin/python');
  if (binary === undefined || !existsSync(python) || spawnSync(python, ['-c', 'import onnxruntime']).status !== 0) {
    why = 'tritonserver or onnxruntime missing from .venv (.ci/run installs both)';
  } else {
    const backends = join(dir, 'backends');
    const site = await linkPythonBackend(backends);
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
    startTritonOn = async (repository: string): Promise<Running> => {
      const triton = await startTriton(binary, repository, backends, 120_000);
      const ready = await triton.ask('/v2/models/mnist/ready');
      if (ready.status !== 200) {
        await triton.stop();
        throw new Error(
          `Triton did not load the Python model:\n${triton
            .log()
            .split('\n')
            .filter((l) => /^E/.test(l))
            .join('\n')}`,
        );
      }
      return { grpc: `127.0.0.1:${triton.grpcPort}`, http: `127.0.0.1:${triton.httpPort}`, pid: triton.pid, stop: () => triton.stop() };
    };
    // The same model, batching: max_batch_size 8, dynamic_batching, and the Python model joining the requests.
    await cp(tritonRepo, batchingTriton, { recursive: true });
    await writeFile(
      join(batchingTriton, 'mnist/1/graph.json'),
      JSON.stringify({ input: 'input', output: 'softmax/Softmax:0', weights, site_packages: site, batching: true }),
    );
    await writeFile(join(batchingTriton, 'mnist/config.pbtxt'), tritonConfig.replace('max_batch_size: 1', 'max_batch_size: 8') + BATCHING);
  }

  const popefServe = (repository: string): Promise<Running> =>
    startProcess(
      [join(ROOT, 'bin/popef.cjs'), 'serve', repository, '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--plugin', 'cpu'],
      'popef serve',
    );
  /** Both servers on these repositories, side by side: [popef serve, Triton] figures, or Triton's undefined. */
  const measurePair = async (ours: string, theirs: string, concurrencies: readonly number[]): Promise<[Figures[][], Figures[][] | undefined]> => {
    const servers = [await popefServe(ours)];
    try {
      if (startTritonOn !== undefined) servers.push(await startTritonOn(theirs));
      const [mine, real] = alternate(servers, PROTOCOLS, concurrencies);
      return [mine ?? [], real];
    } finally {
      for (const server of servers) await server.stop();
    }
  };
  const tables: [string, Figures[][], Figures[][] | undefined][] = [];
  if (TABLES.includes('default')) tables.push(['default scheduler (max_batch_size 1):', ...(await measurePair(repo, tritonRepo, CONCURRENCY))]);
  if (TABLES.includes('batching'))
    tables.push([
      'dynamic batching (max_batch_size 8, dynamic_batching { }):',
      ...(await measurePair(batchingRepo, batchingTriton, BATCHING_CONCURRENCY)),
    ]);
  // The transport floor: servers that answer at once, same client.
  const nullServer = await startProcess([join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(ROOT, 'test/bench/null-server.ts')], 'null server');
  let floor: Figures[];
  try {
    floor = (alternate([nullServer], ['grpc', 'http'], CONCURRENCY, 1)[0] ?? []).flat();
  } finally {
    await nullServer.stop();
  }

  const ms = (v: number): string => `${v.toFixed(2)} ms`;
  const median = (values: readonly number[]): number => {
    const sorted = [...values].sort((x, y) => x - y);
    return sorted.length === 0 ? NaN : (sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN);
  };
  const range = (values: readonly number[], digits = 0): string => {
    const lo = Math.min(...values).toFixed(digits);
    const hi = Math.max(...values).toFixed(digits);
    return lo === hi ? lo : `${lo}-${hi}`;
  };
  /**
   * The per-round popef/Triton throughput ratios: their median (what "at least Triton's" is judged by, since
   * one noisy round moves a range's ends but not its middle) and their range.
   */
  const ratios = (mine: readonly Figures[], theirs: readonly Figures[]): string => {
    const each = mine.map((r, k) => r.throughput / (theirs[k]?.throughput ?? NaN));
    // With an even number of rounds, the mean of the middle two (median() takes the lower one).
    const sorted = [...each].sort((x, y) => x - y);
    const half = Math.floor(sorted.length / 2);
    const middle = sorted.length % 2 === 1 ? (sorted[half] ?? NaN) : ((sorted[half - 1] ?? NaN) + (sorted[half] ?? NaN)) / 2;
    return `${middle.toFixed(2).padStart(5)}x (${range(each, 2)})`.padEnd(19);
  };
  /** req/s range, median p50 and p99, CPU ms per request range. */
  const cells = (runs: readonly Figures[]): string =>
    `${range(runs.map((r) => r.throughput)).padStart(11)}  ${ms(median(runs.map((r) => r.p50))).padStart(9)}  ${ms(median(runs.map((r) => r.p99))).padStart(9)}  ${range(
      runs.map((r) => r.cpuMsPerRequest),
      2,
    ).padStart(9)}`;
  console.log(
    `popef serve benchmark: MNIST, cpu plugin, ${SECONDS} s per run, ${ROUNDS} rounds per row (servers alternating), client in its own process (${process.arch}, Node ${process.version})`,
  );
  console.log(`plugin in process: p50 ${ms(pluginP50)} per run`);
  for (const [title, mine, real] of tables) {
    console.log(title);
    console.log(
      'protocol    conc |  popef req/s       p50        p99  CPU ms/req |  Triton req/s       p50        p99  CPU ms/req | popef/Triton median (range) | load avg',
    );
    mine.forEach((runs, i) => {
      const first = runs[0];
      if (first === undefined) return;
      const t = real?.[i];
      const loads = [...runs, ...(t ?? [])].flatMap((r) => r.load);
      const right = t === undefined ? `| ${why}` : `| ${cells(t)} | ${ratios(runs, t)} | ${range(loads, 1)}`;
      console.log(`${first.protocol.padEnd(11)} ${String(first.concurrency).padStart(4)} | ${cells(runs)} ${right}`);
    });
  }
  console.log('transport floor (a server that answers at once, same client):');
  for (const f of floor)
    console.log(
      `  ${f.protocol.padEnd(6)} conc ${String(f.concurrency).padStart(2)}: ${f.throughput.toFixed(0)} req/s, p50 ${ms(f.p50)}, CPU ${f.cpuMsPerRequest.toFixed(2)} ms/req, load ${range(f.load, 1)}`,
    );
  for (const runs of tables[0]?.[1] ?? []) {
    const o = runs[0];
    if (o?.concurrency !== 1) continue;
    const p50 = median(runs.map((r) => r.p50));
    const base = floor.find((f) => f.protocol === o.protocol && f.concurrency === 1);
    const total = (p50 - pluginP50) * 1000;
    // The floor server answers unary gRPC and HTTP only: streams and shared memory have no floor to subtract.
    const own =
      base === undefined
        ? 'no transport floor measured for it'
        : `of which ${((p50 - base.p50 - pluginP50) * 1000).toFixed(0)} us over the transport floor (target <= 150 us)`;
    console.log(`server overhead over ${o.protocol} at p50, concurrency 1: ${total.toFixed(0)} us over the in-process plugin, ${own}`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
