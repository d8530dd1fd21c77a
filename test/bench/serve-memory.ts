/**
 * popef serve under body pressure (issue 24): its RSS while 60 connections
 * each send a body of 60 MiB (just under --max-request-size 64 MiB), peak and
 * settled (5 s after the last answer); the same with 60 gRPC ModelInfer calls
 * of 60 MiB each; and how long a health probe takes while four 60 MB JSON
 * infer bodies are being parsed. The server runs in its own process, built
 * from dist/ (run the script of another checkout to measure that build).
 * Prints figures only.
 * Run: npm run build && npx tsx test/bench/serve-memory.ts [CONNECTIONS] [MIB]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import { protocolCodec } from '../../src/triton/inference-protocol.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// The build to measure: this checkout's, or another's (POPEF_BENCH_ROOT, e.g. an export of main built there), for before/after.
const SERVED = process.env.POPEF_BENCH_ROOT ?? ROOT;
const connections = Number(process.argv[2] ?? 60);
const mib = Number(process.argv[3] ?? 60);

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

/** A JSON infer body of about `bytes` bytes: one FP32 input whose data array is padded with spaces up to the size. */
function jsonBody(bytes: number): Buffer {
  const head = Buffer.from(
    '{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1,1,28,28],"data":[' + Array.from({ length: 784 }, () => '0.5').join(',') + ']}]',
  );
  const body = Buffer.alloc(bytes, 0x20);
  head.copy(body);
  body.write('}', bytes - 1);
  return body;
}

const dir = await mkdtemp(join(tmpdir(), 'popef-bench-serve-memory-'));
try {
  const repo = join(dir, 'repo');
  spawnSync(process.execPath, [join(SERVED, 'bin/popef.cjs'), 'scaffold', join(ROOT, 'fixtures/mnist/executable.popef'), '-r', repo, '-m', 'mnist'], {
    stdio: 'ignore',
  });
  const server = spawn(
    process.execPath,
    [join(SERVED, 'bin/popef.cjs'), 'serve', repo, '--http-port', '0', '--grpc-port', '0', '--allow-metrics', 'false'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  server.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  while (!/HTTP on [^:]+:(\d+), gRPC on [^:]+:(\d+)/.test(stderr)) await new Promise((r) => setTimeout(r, 50));
  const port = Number(/HTTP on [^:]+:(\d+)/.exec(stderr)?.[1]);
  const grpcPort = Number(/gRPC on [^:]+:(\d+)/.exec(stderr)?.[1]);
  const pid = server.pid ?? 0;
  const before = await rssMiB(pid);
  let peak = before.rss;
  const sampler = setInterval(() => void rssMiB(pid).then((r) => (peak = Math.max(peak, r.rss))), 20);

  const started = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: connections }, () => post(port, '/v2/models/mnist/infer', mib * 1024 * 1024 - 1, () => undefined)),
  );
  const took = performance.now() - started;
  await new Promise((r) => setTimeout(r, 5000));
  const settled = await rssMiB(pid);
  const count = (s: number): number => statuses.filter((x) => x === s).length;
  console.log(
    `${connections} connections x ${mib} MiB: ${(took / 1000).toFixed(1)} s; answers ${[...new Set(statuses)].map((s) => `${s} x${count(s)}`).join(', ')}`,
  );
  console.log(
    `  RSS before ${before.rss.toFixed(0)} MiB, peak ${Math.max(peak, settled.hwm).toFixed(0)} MiB, settled (5 s after) ${settled.rss.toFixed(0)} MiB`,
  );

  // The same over gRPC: one serialized message (shared by every call), sent on as many calls at once.
  peak = (await rssMiB(pid)).rss;
  const message = protocolCodec('ModelInferRequest').encode({
    model_name: 'mnist',
    inputs: [{ name: 'input_0', datatype: 'FP32', shape: [1, 1, 28, 28] }],
    raw_input_contents: [Buffer.alloc(mib * 1024 * 1024 - 64)],
  });
  const client = new Client(`127.0.0.1:${grpcPort}`, credentials.createInsecure(), { 'grpc.max_send_message_length': -1 });
  const grpcStarted = performance.now();
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
  const grpcTook = performance.now() - grpcStarted;
  client.close();
  await new Promise((r) => setTimeout(r, 5000));
  const grpcSettled = await rssMiB(pid);
  const byCode = [...new Set(codes)].map((c) => `${c} x${codes.filter((x) => x === c).length}`).join(', ');
  console.log(
    `${connections} gRPC calls x ${mib} MiB: ${(grpcTook / 1000).toFixed(1)} s; status codes ${byCode} (8: RESOURCE_EXHAUSTED, 3: INVALID_ARGUMENT)`,
  );
  console.log(`  RSS peak ${peak.toFixed(0)} MiB, settled (5 s after) ${grpcSettled.rss.toFixed(0)} MiB`);

  // Four 60 MB JSON bodies at once, and a health probe every 50 ms meanwhile.
  const body = jsonBody(60 * 1000 * 1000);
  const probes: number[] = [];
  let probing = true;
  const probe = async (): Promise<void> => {
    while (probing) {
      const t = performance.now();
      await fetch(`http://127.0.0.1:${port}/v2/health/ready`).then((r) => r.arrayBuffer());
      probes.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const probeLoop = probe();
  peak = (await rssMiB(pid)).rss;
  const jsonStarted = performance.now();
  const jsonStatuses = await Promise.all(
    Array.from({ length: 4 }, () =>
      post(port, '/v2/models/mnist/infer', body.byteLength, (chunk, at) => body.copy(chunk, 0, at, at + chunk.byteLength)),
    ),
  );
  const jsonTook = performance.now() - jsonStarted;
  probing = false;
  await probeLoop;
  clearInterval(sampler);
  await new Promise((r) => setTimeout(r, 5000));
  const jsonSettled = await rssMiB(pid);
  probes.sort((a, b) => a - b);
  console.log(`4 JSON bodies of 60 MB: ${(jsonTook / 1000).toFixed(1)} s; answers ${jsonStatuses.join(', ')}`);
  console.log(
    `  health probe latency: median ${probes[Math.floor(probes.length / 2)]?.toFixed(0) ?? '?'} ms, max ${probes.at(-1)?.toFixed(0) ?? '?'} ms over ${probes.length} probes; RSS peak ${peak.toFixed(0)} MiB, settled ${jsonSettled.rss.toFixed(0)} MiB`,
  );
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  console.log(`(served by ${SERVED})`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
