// popef serve under random and mutated requests, on loopback: every request
// gets an answer (an error or a success), the server never crashes or
// hangs, memory stays bounded, and a good request still gets the right
// answer afterwards.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import { loadPlugin } from '../../src/run/load-plugin.js';
import { seededRandom } from '../../src/run/tensor-io/inputs.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { protocolCodec } from '../../src/triton/inference-protocol.js';
import { ROOT, tempDir } from '../helpers.js';
import { scaffoldMnist } from './serving.js';

const IMAGE = 28 * 28 * 4;
const SEED = Number(process.env.FUZZ_SEED ?? 20261201);

function mutate(bytes: Buffer, rnd: () => number): Buffer {
  const out = Buffer.from(bytes);
  const edits = 1 + Math.floor(rnd() * 8);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(rnd() * out.length);
    const kind = rnd();
    if (kind < 0.5) out[at] = Math.floor(rnd() * 256);
    else if (kind < 0.75) return Buffer.concat([out.subarray(0, at), out.subarray(at + 1 + Math.floor(rnd() * 16))]);
    else return Buffer.concat([out.subarray(0, at), Buffer.from([Math.floor(rnd() * 256)]), out.subarray(at)]);
  }
  return out;
}

describe('popef serve survives random and mutated requests', () => {
  let server: RunningServer;
  let cleanup: () => Promise<void>;

  before(async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    const repo = await scaffoldMnist(temp.dir);
    server = await startServer({
      repositories: [repo],
      createPlugin: () => loadPlugin('cpu', { cwd: ROOT, env: {} }),
      host: '127.0.0.1',
      httpPort: 0,
      grpcPort: 0,
      maxRequestSize: 1024 * 1024,
    });
  });

  after(async () => {
    await server.stop();
    await cleanup();
  });

  it('HTTP: every mutated infer request is answered with a status and a JSON error or a result', { timeout: 120_000 }, async () => {
    const rnd = seededRandom(SEED);
    const header = JSON.stringify({
      id: 'x',
      inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: IMAGE } }],
      outputs: [{ name: 'output_labels', parameters: { binary_data: true, classification: 2 } }],
    });
    const good = Buffer.concat([Buffer.from(header), Buffer.alloc(IMAGE, 1)]);
    const rssBefore = process.memoryUsage().rss;
    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const mutateHeader = rnd() < 0.6;
      const bytes = mutateHeader ? Buffer.concat([mutate(Buffer.from(header), rnd), Buffer.alloc(IMAGE, 1)]) : mutate(good, rnd);
      const length =
        rnd() < 0.8 ? String(header.length + Math.floor(rnd() * 5) - 2) : (['', '-1', 'abc', '99999999999', '0'][Math.floor(rnd() * 5)] ?? '');
      const res = await fetch(`http://127.0.0.1:${server.httpPort ?? 0}/v2/models/mnist/infer`, {
        method: 'POST',
        headers: { 'Inference-Header-Content-Length': length },
        body: bytes,
      });
      const body = Buffer.from(await res.arrayBuffer());
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status !== 200) {
        const parsed = JSON.parse(body.toString()) as { error?: unknown };
        assert.equal(typeof parsed.error, 'string', `request ${i}: ${body.toString()}`);
      }
    }
    assert.ok((statuses.get(400) ?? 0) + (statuses.get(500) ?? 0) > 100, `statuses: ${JSON.stringify([...statuses])}`);
    const growth = process.memoryUsage().rss - rssBefore;
    assert.ok(growth < 200 * 1024 * 1024, `RSS grew by ${growth} bytes`);
    const ok = await fetch(`http://127.0.0.1:${server.httpPort ?? 0}/v2/models/mnist/infer`, {
      method: 'POST',
      headers: { 'Inference-Header-Content-Length': String(header.length) },
      body: good,
    });
    assert.equal(ok.status, 200);
  });

  it('gRPC: random and mutated protobuf bodies get a status, never a crash', { timeout: 120_000 }, async () => {
    const rnd = seededRandom(SEED + 1);
    const client = new Client(`127.0.0.1:${server.grpcPort ?? 0}`, credentials.createInsecure());
    const request = protocolCodec('ModelInferRequest').encode({
      model_name: 'mnist',
      inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28] }],
      raw_input_contents: [Buffer.alloc(IMAGE, 2)],
    });
    const call = (bytes: Buffer): Promise<number> =>
      new Promise((resolve) => {
        client.makeUnaryRequest(
          '/inference.GRPCInferenceService/ModelInfer',
          (b: Buffer) => b,
          (b: Buffer) => b,
          bytes,
          { deadline: Date.now() + 10_000 },
          (error: ServiceError | null) => resolve(error === null ? 0 : error.code),
        );
      });
    try {
      const codes = new Map<number, number>();
      for (let i = 0; i < 300; i++) {
        const bytes =
          rnd() < 0.3 ? Buffer.from(Array.from({ length: Math.floor(rnd() * 200) }, () => Math.floor(rnd() * 256))) : mutate(request, rnd);
        const code = await call(bytes);
        // 4 (DEADLINE_EXCEEDED) would mean a request the server never answered.
        assert.notEqual(code, 4, `request ${i} hung`);
        codes.set(code, (codes.get(code) ?? 0) + 1);
      }
      assert.ok(
        [...codes.keys()].some((c) => c !== 0),
        `codes: ${JSON.stringify([...codes])}`,
      );
      assert.equal(await call(request), 0);
    } finally {
      client.close();
    }
  });
});
