/**
 * The client side of the serve benchmark, run as its own process so that
 * client and server do not share an event loop: keeps CONCURRENCY MNIST
 * requests in flight against an inference server (popef serve or Triton)
 * for SECONDS, over gRPC (one HTTP/2 channel) or HTTP with binary tensors
 * (keep-alive sockets), and prints one JSON line of figures.
 *
 * usage: tsx test/bench/serve-load.ts grpc|http HOST:PORT MODEL CONCURRENCY SECONDS
 */
import { Agent, request } from 'node:http';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import { protocolCodec, type ProtocolMessage } from '../../src/triton/inference-protocol.js';

const [protocol = 'grpc', address = '127.0.0.1:8001', model = 'mnist', concurrencyText = '1', secondsText = '5'] = process.argv.slice(2);
const concurrency = Number(concurrencyText);
const seconds = Number(secondsText);
const image = Buffer.alloc(28 * 28 * 4);
for (let i = 0; i < 28 * 28; i++) image.writeFloatLE((i % 28) / 28, i * 4);

type Send = () => Promise<void>;

function grpcSender(): { send: Send; close: () => void } {
  const client = new Client(address, credentials.createInsecure());
  const req = protocolCodec('ModelInferRequest');
  const res = protocolCodec('ModelInferResponse');
  const message = { model_name: model, inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28] }], outputs: [{ name: 'output_labels' }], raw_input_contents: [image] };
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

function httpSender(): { send: Send; close: () => void } {
  const [host, port] = address.split(':');
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: image.byteLength } }], outputs: [{ name: 'output_labels', parameters: { binary_data: true } }] }));
  const body = Buffer.concat([header, image]);
  const send: Send = () =>
    new Promise((resolve, reject) => {
      const r = request(
        { host, port: Number(port), method: 'POST', path: `/v2/models/${model}/infer`, agent, headers: { 'Inference-Header-Content-Length': String(header.byteLength), 'Content-Length': String(body.byteLength) } },
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

const { send, close } = protocol === 'grpc' ? grpcSender() : httpSender();
// Warm-up: connections open, first requests compiled.
for (let i = 0; i < 50; i++) await send();
const latencies: number[] = [];
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
close();
latencies.sort((a, b) => a - b);
const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
console.log(JSON.stringify({ protocol, concurrency, requests: latencies.length, throughput: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) }));
