/**
 * popef serve under body pressure (issue 24): its RSS while 60 connections
 * each send a body of 60 MiB (just under --max-request-size 64 MiB), peak and
 * settled (5 s after the last answer); the same with 60 gRPC ModelInfer calls
 * of 60 MiB each; and how long a health probe takes while four 60 MB JSON
 * infer bodies are being parsed. Each of the three runs on a server of its
 * own, started for it, so that one's figures (its peak is the process's
 * high-water mark, VmHWM) owe nothing to what the one before left in the
 * heap. The server is built from dist/ (POPEF_BENCH_ROOT: another
 * checkout's build, for before/after). Prints figures only.
 * Run: npm run build && npx tsx test/bench/serve-memory.ts [CONNECTIONS] [MIB]
 * (BENCH_MEMORY_PARTS=http,grpc,json picks the parts; all three by default).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import { protocolCodec } from '../../src/triton/inference-protocol.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// The build to measure: this checkout's, or another's (POPEF_BENCH_ROOT, e.g. an export of main built there), for before/after.
const SERVED = process.env.POPEF_BENCH_ROOT ?? ROOT;
const connections = Number(process.argv[2] ?? 60);
const mib = Number(process.argv[3] ?? 60);
const parts = new Set((process.env.BENCH_MEMORY_PARTS ?? 'http,grpc,json').split(','));

async function rssMiB(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

function post(port: number, path: string, bytes: number, fill: (chunk: Buffer, at: number) => void): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path, headers: { 'Content-Type': 'application/json', 'Content-Length': bytes } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(-1));
    const chunk = Buffer.alloc(1024 * 1024);
    let at = 0;
    const pump = (): void => {
      while (at < bytes) {
        const n = Math.min(bytes - at, chunk.byteLength);
        fill(chunk, at);
        at += n;
        if (!req.write(chunk.subarray(0, n))) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

/** A JSON infer body of about `bytes` bytes: the scaffolded model's FP32 input (its anchor name, input_0), padded with spaces up to the size. */
function jsonBody(bytes: number): Buffer {
  const head = Buffer.from(
    '{"inputs":[{"name":"input_0","datatype":"FP32","shape":[1,1,28,28],"data":[' + Array.from({ length: 784 }, () => '0.5').join(',') + ']}]',
  );
  const body = Buffer.alloc(bytes, 0x20);
  head.copy(body);
  body.write('}', bytes - 1);
  return body;
}

interface Served {
  readonly pid: number;
  readonly port: number;
  readonly grpcPort: number;
  stop(): Promise<void>;
}

/** popef serve on the repository, in a process of its own, once it listens. */
async function startServer(repo: string): Promise<Served> {
  const server = spawn(
    process.execPath,
    [join(SERVED, 'bin/popef.cjs'), 'serve', repo, '--http-port', '0', '--grpc-port', '0', '--allow-metrics', 'false'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  server.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  while (!/HTTP on [^:]+:(\d+), gRPC on [^:]+:(\d+)/.test(stderr)) {
    if (server.exitCode !== null) throw new Error(`popef serve exited with ${String(server.exitCode)}: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: server.pid ?? 0,
    port: Number(/HTTP on [^:]+:(\d+)/.exec(stderr)?.[1]),
    grpcPort: Number(/gRPC on [^:]+:(\d+)/.exec(stderr)?.[1]),
    stop: async () => {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    },
  };
}

/** Samples the process's RSS every 20 ms; the peak is the larger of the samples and its VmHWM. */
function sampleRss(pid: number): { peak(): Promise<number>; stop(): void } {
  let peak = 0;
  const timer = setInterval(() => void rssMiB(pid).then((r) => (peak = Math.max(peak, r.rss))), 20);
  return {
    peak: async () => Math.max(peak, (await rssMiB(pid)).hwm),
    stop: () => clearInterval(timer),
  };
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 5000));

async function httpBodies(repo: string): Promise<void> {
  const served = await startServer(repo);
  try {
    const before = await rssMiB(served.pid);
    const rss = sampleRss(served.pid);
    const started = performance.now();
    const statuses = await Promise.all(
      Array.from({ length: connections }, () => post(served.port, '/v2/models/mnist/infer', mib * 1024 * 1024 - 1, () => undefined)),
    );
    const took = performance.now() - started;
    await settle();
    const settled = await rssMiB(served.pid);
    rss.stop();
    const count = (s: number): number => statuses.filter((x) => x === s).length;
    console.log(
      `${connections} connections x ${mib} MiB: ${(took / 1000).toFixed(1)} s; answers ${[...new Set(statuses)].map((s) => `${s} x${count(s)}`).join(', ')}`,
    );
    console.log(
      `  RSS before ${before.rss.toFixed(0)} MiB, peak ${(await rss.peak()).toFixed(0)} MiB, settled (5 s after) ${settled.rss.toFixed(0)} MiB`,
    );
  } finally {
    await served.stop();
  }
}

async function grpcMessages(repo: string): Promise<void> {
  const served = await startServer(repo);
  try {
    const before = await rssMiB(served.pid);
    const rss = sampleRss(served.pid);
    // One serialized message (shared by every call), sent on as many calls at once.
    const message = protocolCodec('ModelInferRequest').encode({
      model_name: 'mnist',
      inputs: [{ name: 'input_0', datatype: 'FP32', shape: [1, 1, 28, 28] }],
      raw_input_contents: [Buffer.alloc(mib * 1024 * 1024 - 64)],
    });
    const client = new Client(`127.0.0.1:${served.grpcPort}`, credentials.createInsecure(), { 'grpc.max_send_message_length': -1 });
    const started = performance.now();
    const codes = await Promise.all(
      Array.from(
        { length: connections },
        () =>
          new Promise<number>((resolve) =>
            client.makeUnaryRequest(
              '/inference.GRPCInferenceService/ModelInfer',
              (b: Buffer) => b,
              (b: Buffer) => b,
              message,
              (error: ServiceError | null) => resolve(error === null ? 0 : error.code),
            ),
          ),
      ),
    );
    const took = performance.now() - started;
    client.close();
    await settle();
    const settled = await rssMiB(served.pid);
    rss.stop();
    const byCode = [...new Set(codes)].map((c) => `${c} x${codes.filter((x) => x === c).length}`).join(', ');
    console.log(
      `${connections} gRPC calls x ${mib} MiB: ${(took / 1000).toFixed(1)} s; status codes ${byCode} (8: RESOURCE_EXHAUSTED, 3: INVALID_ARGUMENT)`,
    );
    console.log(
      `  RSS before ${before.rss.toFixed(0)} MiB, peak ${(await rss.peak()).toFixed(0)} MiB, settled (5 s after) ${settled.rss.toFixed(0)} MiB`,
    );
  } finally {
    await served.stop();
  }
}

async function jsonBodies(repo: string): Promise<void> {
  const served = await startServer(repo);
  try {
    // Four 60 MB JSON bodies at once, and a health probe every 50 ms meanwhile.
    const body = jsonBody(60 * 1000 * 1000);
    const before = await rssMiB(served.pid);
    const rss = sampleRss(served.pid);
    const probes: number[] = [];
    let probing = true;
    const probe = async (): Promise<void> => {
      while (probing) {
        const t = performance.now();
        await fetch(`http://127.0.0.1:${served.port}/v2/health/ready`).then((r) => r.arrayBuffer());
        probes.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const probeLoop = probe();
    const started = performance.now();
    const statuses = await Promise.all(
      Array.from({ length: 4 }, () =>
        post(served.port, '/v2/models/mnist/infer', body.byteLength, (chunk, at) => body.copy(chunk, 0, at, at + chunk.byteLength)),
      ),
    );
    const took = performance.now() - started;
    probing = false;
    await probeLoop;
    await settle();
    const settled = await rssMiB(served.pid);
    rss.stop();
    probes.sort((a, b) => a - b);
    console.log(`4 JSON bodies of 60 MB: ${(took / 1000).toFixed(1)} s; answers ${statuses.join(', ')}`);
    console.log(
      `  health probe latency: median ${probes[Math.floor(probes.length / 2)]?.toFixed(0) ?? '?'} ms, max ${probes.at(-1)?.toFixed(0) ?? '?'} ms over ${probes.length} probes`,
    );
    console.log(
      `  RSS before ${before.rss.toFixed(0)} MiB, peak ${(await rss.peak()).toFixed(0)} MiB, settled (5 s after) ${settled.rss.toFixed(0)} MiB`,
    );
  } finally {
    await served.stop();
  }
}

const dir = await mkdtemp(join(tmpdir(), 'popef-bench-serve-memory-'));
try {
  const repo = join(dir, 'repo');
  spawnSync(process.execPath, [join(SERVED, 'bin/popef.cjs'), 'scaffold', join(ROOT, 'fixtures/mnist/executable.popef'), '-r', repo, '-m', 'mnist'], {
    stdio: 'ignore',
  });
  if (parts.has('http')) await httpBodies(repo);
  if (parts.has('grpc')) await grpcMessages(repo);
  if (parts.has('json')) await jsonBodies(repo);
  console.log(
    `(served by ${SERVED}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')})`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
