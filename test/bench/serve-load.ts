/**
 * The client side of the serve benchmark, run as its own process so that
 * client and server do not share an event loop: keeps CONCURRENCY MNIST
 * requests in flight against an inference server (popef serve or Triton)
 * for SECONDS, over gRPC (one HTTP/2 channel), a gRPC stream
 * (ModelStreamInfer, answers in order), gRPC with the tensors in system
 * shared memory (one input region filled once, one output region per
 * request in flight, as perf_analyzer does), or HTTP with binary tensors
 * (keep-alive sockets), and prints one JSON line of figures.
 *
 * With BENCH_SERVER_PIDS (comma-separated process ids), it also reports the
 * CPU time those processes and all their descendants (Triton's Python
 * backend stubs) used during the timed window, per request: unlike req/s,
 * that hardly depends on how loaded the machine is. And the 1-minute load
 * average at the start and the end of the window.
 *
 * usage: tsx test/bench/serve-load.ts grpc|grpc-stream|grpc-shm|http HOST:PORT MODEL CONCURRENCY SECONDS
 */
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import { protocolCodec, type ProtocolMessage } from '../../src/triton/inference-protocol.js';

const [protocol = 'grpc', address = '127.0.0.1:8001', model = 'mnist', concurrencyText = '1', secondsText = '5'] = process.argv.slice(2);
const concurrency = Number(concurrencyText);
const seconds = Number(secondsText);
const image = Buffer.alloc(28 * 28 * 4);
for (let i = 0; i < 28 * 28; i++) image.writeFloatLE((i % 28) / 28, i * 4);

type Send = () => Promise<void>;

/** USER_HZ: the unit of utime and stime in /proc/PID/stat (100 on Linux for every architecture Node runs on). */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system, all threads) used so far by these processes and every descendant alive now. */
function treeCpuSeconds(roots: readonly number[]): number {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let text: string;
    try {
      text = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // it ended meanwhile
    }
    // The command name (field 2) is in parentheses and may hold spaces: fields are counted after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    stats.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
  }
  const inTree = new Set(roots);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, s] of stats)
      if (!inTree.has(pid) && inTree.has(s.ppid)) {
        inTree.add(pid);
        grew = true;
      }
  }
  let ticks = 0;
  for (const pid of inTree) ticks += stats.get(pid)?.ticks ?? 0;
  return ticks / TICKS_PER_SECOND;
}

const serverPids = (process.env.BENCH_SERVER_PIDS ?? '')
  .split(',')
  .filter((p) => p !== '')
  .map(Number);
const loadAverage = (): number => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

function grpcSender(): { send: Send; close: () => void } {
  const client = new Client(address, credentials.createInsecure());
  const req = protocolCodec('ModelInferRequest');
  const res = protocolCodec('ModelInferResponse');
  const message = {
    model_name: model,
    inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28] }],
    outputs: [{ name: 'output_labels' }],
    raw_input_contents: [image],
  };
  const send: Send = () =>
    new Promise((resolve, reject) => {
      client.makeUnaryRequest(
        '/inference.GRPCInferenceService/ModelInfer',
        (v: ProtocolMessage) => req.encode(v),
        (b: Buffer) => res.decode(b),
        message,
        (error: ServiceError | null, value?: ProtocolMessage) => {
          if (error !== null) reject(error);
          else if (((value?.raw_output_contents ?? []) as unknown[]).length !== 1) reject(new Error('no output in the answer'));
          else resolve();
        },
      );
    });
  return { send, close: () => client.close() };
}

function grpcStreamSender(): { send: Send; close: () => void } {
  const client = new Client(address, credentials.createInsecure());
  const req = protocolCodec('ModelInferRequest');
  const res = protocolCodec('ModelStreamInferResponse');
  const message = {
    model_name: model,
    inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28] }],
    outputs: [{ name: 'output_labels' }],
    raw_input_contents: [image],
  };
  const stream = client.makeBidiStreamRequest(
    '/inference.GRPCInferenceService/ModelStreamInfer',
    (v: ProtocolMessage) => req.encode(v),
    (b: Buffer) => res.decode(b),
  );
  // A model that is not decoupled answers a stream's requests in order.
  const waiting: [() => void, (e: Error) => void][] = [];
  stream.on('data', (answer: ProtocolMessage) => {
    const [resolve, reject] = waiting.shift() ?? [() => undefined, () => undefined];
    if (typeof answer.error_message === 'string' && answer.error_message !== '') reject(new Error(answer.error_message));
    else resolve();
  });
  stream.on('error', () => undefined);
  const send: Send = () =>
    new Promise((resolve, reject) => {
      waiting.push([resolve, reject]);
      stream.write(message);
    });
  return {
    send,
    close: () => {
      stream.end();
      client.close();
    },
  };
}

/** Regions as /dev/shm files (what shm_open makes), registered with SystemSharedMemoryRegister. */
async function grpcShmSender(): Promise<{ send: Send; close: () => void }> {
  const client = new Client(address, credentials.createInsecure());
  const unary = (method: string, requestType: string, value: ProtocolMessage): Promise<ProtocolMessage> =>
    new Promise((resolve, reject) => {
      const c = protocolCodec(requestType);
      client.makeUnaryRequest(
        `/inference.GRPCInferenceService/${method}`,
        (v: ProtocolMessage) => c.encode(v),
        (b: Buffer) => b as unknown as ProtocolMessage,
        value,
        (error: ServiceError | null, answer?: ProtocolMessage) => (error !== null ? reject(error) : resolve(answer ?? {})),
      );
    });
  const tag = `${process.pid}`;
  const keys = [`/popef_bench_in_${tag}`, ...Array.from({ length: concurrency }, (_, i) => `/popef_bench_out_${tag}_${i}`)];
  writeFileSync(`/dev/shm${keys[0] ?? ''}`, image);
  for (const key of keys.slice(1)) writeFileSync(`/dev/shm${key}`, Buffer.alloc(40));
  await unary('SystemSharedMemoryUnregister', 'SystemSharedMemoryUnregisterRequest', {});
  for (const [i, key] of keys.entries())
    await unary('SystemSharedMemoryRegister', 'SystemSharedMemoryRegisterRequest', {
      name: `r${i}`,
      key,
      offset: 0,
      byte_size: i === 0 ? image.byteLength : 40,
    });
  const req = protocolCodec('ModelInferRequest');
  const res = protocolCodec('ModelInferResponse');
  const free = Array.from({ length: concurrency }, (_, i) => `r${i + 1}`);
  const region = (name: string, size: number): ProtocolMessage => ({
    shared_memory_region: { string_param: name },
    shared_memory_byte_size: { int64_param: size },
  });
  const send: Send = () =>
    new Promise((resolve, reject) => {
      const out = free.pop() ?? 'r1';
      const message = {
        model_name: model,
        inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: region('r0', image.byteLength) }],
        outputs: [{ name: 'output_labels', parameters: region(out, 40) }],
      };
      client.makeUnaryRequest(
        '/inference.GRPCInferenceService/ModelInfer',
        (v: ProtocolMessage) => req.encode(v),
        (b: Buffer) => res.decode(b),
        message,
        (error: ServiceError | null) => {
          free.push(out);
          if (error !== null) reject(error);
          else resolve();
        },
      );
    });
  return {
    send,
    close: () => {
      client.close();
      for (const key of keys) rmSync(`/dev/shm${key}`, { force: true });
    },
  };
}

function httpSender(): { send: Send; close: () => void } {
  const [host, port] = address.split(':');
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: image.byteLength } }],
      outputs: [{ name: 'output_labels', parameters: { binary_data: true } }],
    }),
  );
  const body = Buffer.concat([header, image]);
  const send: Send = () =>
    new Promise((resolve, reject) => {
      const r = request(
        {
          host,
          port: Number(port),
          method: 'POST',
          path: `/v2/models/${model}/infer`,
          agent,
          headers: { 'Inference-Header-Content-Length': String(header.byteLength), 'Content-Length': String(body.byteLength) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (c: Buffer) => chunks.push(c));
          response.on('end', () => {
            if (response.statusCode !== 200) reject(new Error(`HTTP ${response.statusCode ?? 0}: ${Buffer.concat(chunks).toString()}`));
            else resolve();
          });
        },
      );
      r.on('error', reject);
      r.end(body);
    });
  return { send, close: () => agent.destroy() };
}

const { send, close } =
  protocol === 'grpc'
    ? grpcSender()
    : protocol === 'grpc-stream'
      ? grpcStreamSender()
      : protocol === 'grpc-shm'
        ? await grpcShmSender()
        : httpSender();
// Warm-up: connections open, first requests compiled.
for (let i = 0; i < 50; i++) await send();
const latencies: number[] = [];
const loadBefore = loadAverage();
const cpuBefore = serverPids.length > 0 ? treeCpuSeconds(serverPids) : NaN;
const deadline = performance.now() + seconds * 1000;
const started = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      await send();
      latencies.push(performance.now() - t0);
    }
  }),
);
const elapsed = (performance.now() - started) / 1000;
const cpuMsPerRequest = serverPids.length > 0 ? ((treeCpuSeconds(serverPids) - cpuBefore) * 1000) / latencies.length : null;
const loadAfter = loadAverage();
close();
latencies.sort((a, b) => a - b);
const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
console.log(
  JSON.stringify({
    protocol,
    concurrency,
    requests: latencies.length,
    throughput: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    cpuMsPerRequest,
    load: [loadBefore, loadAfter],
  }),
);
