// popef serve in-process: the HTTP endpoints on the scaffolded MNIST
// repository, served by the cpu plugin (the model's ONNX graph on
// onnxruntime-node) and by a child-process plugin that dies. The real
// tritonclient and the real Triton server are the subject of
// tritonclient.test.ts; this file covers what needs no Python.
import assert from 'node:assert/strict';
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { ChildProcessPlugin } from '../../src/run/child-plugin.js';
import { loadPlugin } from '../../src/run/load-plugin.js';
import type { ExecutionPlugin } from '../../src/run/plugin-api.js';
import { loadInput } from '../../src/run/tensor-io/inputs.js';
import { readJsonData, writeJsonData } from '../../src/serve/json-tensors.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { ROOT, fixture, runCli, tempDir } from '../helpers.js';

const IMAGE_BYTES = 28 * 28 * 4;

/** The seed's repository (scaffolded MNIST), plus a copy whose config breaks a Triton rule. */
async function mnistRepository(dir: string): Promise<string> {
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
  await cp(join(repo, 'mnist'), join(repo, 'broken'), { recursive: true });
  const config = await readFile(join(repo, 'broken', 'config.pbtxt'), 'utf8');
  await writeFile(
    join(repo, 'broken', 'config.pbtxt'),
    config.replace('name: "mnist"', 'name: "broken"').replace('max_batch_size: 1', 'max_batch_size: -1'),
  );
  return repo;
}

async function digit(n: number): Promise<Uint8Array> {
  const t = await loadInput({ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }, fixture(`mnist/img/${n}.png`), 'digit_image', {});
  return t.data;
}

/** FP32 values of bytes at any offset (Buffer's slice() shares memory, so copy first). */
function floats(bytes: Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if ((values[i] ?? 0) > (values[best] ?? 0)) best = i;
  return best;
}

interface InferBody {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: { name: string; datatype: string; shape: number[]; data?: unknown[]; parameters?: { binary_data_size: number } }[];
}

describe('popef serve over HTTP, cpu plugin', () => {
  let server: RunningServer;
  let base: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    const repo = await mnistRepository(temp.dir);
    server = await startServer({
      repositories: [repo],
      createPlugin: () => loadPlugin('cpu', { cwd: ROOT, env: {} }),
      host: '127.0.0.1',
      httpPort: 0,
      maxRequestSize: 1024 * 1024,
    });
    base = `http://127.0.0.1:${server.httpPort ?? 0}`;
  });

  after(async () => {
    await server.stop();
    await cleanup();
  });

  it('answers health, metadata, config and the repository index as Triton does', async () => {
    assert.equal((await fetch(`${base}/v2/health/live`)).status, 200);
    assert.equal((await fetch(`${base}/v2/health/ready`)).status, 200);
    const meta = (await (await fetch(`${base}/v2/models/mnist`)).json()) as Record<string, unknown>;
    assert.deepEqual(meta, {
      name: 'mnist',
      versions: ['1'],
      platform: 'poplar',
      inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [-1, 1, 28, 28] }],
      outputs: [{ name: 'output_labels', datatype: 'FP32', shape: [-1, 10] }],
    });
    const config = (await (await fetch(`${base}/v2/models/mnist/versions/1/config`)).json()) as Record<string, unknown>;
    assert.equal(config.backend, 'poplar');
    assert.equal(config.max_batch_size, 1);
    assert.deepEqual((config.input as { dims: number[] }[])[0]?.dims, [1, 28, 28]);
    assert.deepEqual(config.optimization, {
      priority: 'PRIORITY_DEFAULT',
      input_pinned_memory: { enable: true },
      output_pinned_memory: { enable: true },
      gather_kernel_buffer_threshold: 0,
      eager_batching: false,
    });
    const index = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as {
      name: string;
      state: string;
      reason?: string;
    }[];
    assert.deepEqual(
      index.map((m) => [m.name, m.state]),
      [
        ['broken', 'UNAVAILABLE'],
        ['mnist', 'READY'],
      ],
    );
    assert.match(index[0]?.reason ?? '', /'max_batch_size' must be non-negative value for broken/);
    assert.equal(index[1]?.reason, undefined);
    const broken = await fetch(`${base}/v2/models/broken/ready`);
    assert.equal(broken.status, 400);
    assert.deepEqual(await broken.json(), { error: 'Model version not ready' });
    const infer = await fetch(`${base}/v2/models/broken/infer`, { method: 'POST', body: '{}' });
    assert.equal(infer.status, 404);
    assert.deepEqual(await infer.json(), { error: "Request for unknown model: 'broken' has no available versions" });
  });

  it('infers with JSON tensors: every digit of the walkthrough is predicted right', async () => {
    for (let n = 0; n < 10; n++) {
      const data = Array.from(floats(await digit(n)));
      const res = await fetch(`${base}/v2/models/mnist/infer`, {
        method: 'POST',
        body: JSON.stringify({ id: `req-${n}`, inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], data }] }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/json');
      const body = (await res.json()) as InferBody;
      assert.equal(body.id, `req-${n}`);
      assert.equal(body.model_version, '1');
      const out = body.outputs[0];
      assert.deepEqual([out?.name, out?.datatype, out?.shape], ['output_labels', 'FP32', [1, 10]]);
      assert.equal(argmax(out?.data as number[]), n);
    }
  });

  it('infers with binary tensors (Inference-Header-Content-Length), the bytes the plugin gives', async () => {
    const image = await digit(7);
    const header = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: IMAGE_BYTES } }],
        outputs: [{ name: 'output_labels', parameters: { binary_data: true } }],
      }),
    );
    const res = await fetch(`${base}/v2/models/mnist/infer`, {
      method: 'POST',
      headers: { 'Inference-Header-Content-Length': String(header.byteLength) },
      body: Buffer.concat([header, image]),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    const body = Buffer.from(await res.arrayBuffer());
    const jsonLength = Number(res.headers.get('inference-header-content-length'));
    const json = JSON.parse(body.subarray(0, jsonLength).toString()) as InferBody;
    assert.deepEqual(json.outputs[0]?.parameters, { binary_data_size: 40 });
    const scores = floats(body.subarray(jsonLength));
    assert.equal(scores.length, 10);
    assert.equal(argmax(scores), 7);
    // The same request through gzip gives the same answer.
    const zipped = await fetch(`${base}/v2/models/mnist/infer`, {
      method: 'POST',
      headers: { 'Inference-Header-Content-Length': String(header.byteLength), 'Content-Encoding': 'gzip' },
      body: gzipSync(Buffer.concat([header, image])),
    });
    assert.equal(zipped.status, 200);
    assert.deepEqual(Buffer.from(await zipped.arrayBuffer()), body);
  });

  it("takes Triton's raw binary request: header length 0, the body is the one input", async () => {
    const res = await fetch(`${base}/v2/models/mnist/infer`, {
      method: 'POST',
      headers: { 'Inference-Header-Content-Length': '0' },
      body: await digit(4),
    });
    assert.equal(res.status, 200);
    const body = Buffer.from(await res.arrayBuffer());
    const jsonLength = Number(res.headers.get('inference-header-content-length'));
    assert.equal(argmax(floats(body.subarray(jsonLength))), 4);
  });

  it('classifies as Triton does: "value:index" strings, top k, shape [batch, k]', async () => {
    const data = Array.from(floats(await digit(3)));
    const res = await fetch(`${base}/v2/models/mnist/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], data }],
        outputs: [{ name: 'output_labels', parameters: { classification: 3 } }],
      }),
    });
    const body = (await res.json()) as InferBody;
    const out = body.outputs[0];
    assert.deepEqual([out?.datatype, out?.shape], ['BYTES', [1, 3]]);
    const classes = (out?.data as string[]).map((s) => s.split(':'));
    assert.equal(classes[0]?.[1], '3');
    for (const [value] of classes) assert.match(value ?? '', /^\d+\.\d{6}$/);
    const values = classes.map(([v]) => Number(v));
    assert.deepEqual(
      [...values].sort((a, b) => b - a),
      values,
    );
  });

  it("refuses bad requests with Triton's status and message, and stays up", async () => {
    const post = async (body: string | Buffer, headers: Record<string, string> = {}, path = '/v2/models/mnist/infer'): Promise<[number, string]> => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers, body });
      const text = await res.text();
      return [res.status, text === '' ? '' : ((JSON.parse(text) as { error?: string }).error ?? text)];
    };
    const [s1, m1] = await post('{"inputs": [');
    // TritonJson's parse errors are INTERNAL: Triton answers 500.
    assert.equal(s1, 500);
    assert.match(m1, /^failed to parse the request JSON buffer: /);
    // An empty body is a raw binary request (header length 0) with no data.
    assert.deepEqual(await post(''), [
      400,
      "[request id: <id_unknown>] input byte size mismatch for input 'raw_input' for model 'mnist'. Expected 3136, got 0",
    ]);
    const header = JSON.stringify({
      inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: IMAGE_BYTES } }],
    });
    assert.deepEqual(
      await post(Buffer.concat([Buffer.from(header), Buffer.alloc(100)]), { 'Inference-Header-Content-Length': String(header.length) }),
      [400, "unexpected size for input 'digit_image', expecting 3036 additional bytes for model 'mnist'"],
    );
    assert.deepEqual(
      await post(Buffer.concat([Buffer.from(header), Buffer.alloc(IMAGE_BYTES + 4)]), { 'Inference-Header-Content-Length': String(header.length) }),
      [400, "unexpected additional input data for model 'mnist'"],
    );
    assert.deepEqual(await post(header, { 'Inference-Header-Content-Length': '99999' }), [
      400,
      `inference header size should be in range (0, ${header.length}), got: 99999`,
    ]);
    const json = JSON.stringify({ inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], data: [1, 2, 3] }] });
    assert.deepEqual(await post(json), [500, "Unable to parse 'data': Shape does not match true shape of 'data' field"]);
    const both = JSON.stringify({ inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1], data: [1], parameters: { binary_data_size: 4 } }] });
    assert.deepEqual(await post(both), [
      400,
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But set 'data' 'binary_data_size'",
    ]);
    // Bigger than --max-request-size (1 MiB here): refused without reading it all; a gzip bomb too.
    const [s2] = await post(Buffer.alloc(2 * 1024 * 1024));
    assert.equal(s2, 413);
    const [s3, m3] = await post(gzipSync(Buffer.alloc(64 * 1024 * 1024)), { 'Content-Encoding': 'gzip' });
    assert.equal(s3, 413);
    assert.match(m3, /--max-request-size/);
    const [s4, m4] = await post('{}', { 'Content-Encoding': 'br' });
    assert.deepEqual([s4, m4], [501, "Unsupported content-encoding, only 'identity' is supported."]);
    // Deeply nested data is flattened without recursion.
    let nested = '1';
    for (let i = 0; i < 10_000; i++) nested = `[${nested}]`;
    const [s5] = await post(`{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1],"data":${nested}}]}`);
    assert.equal(s5, 400);
    assert.deepEqual(await (async () => [(await fetch(`${base}/v2/nosuch`)).status])(), [404]);
    assert.equal((await fetch(`${base}/v2/health/live`, { method: 'POST' })).status, 405);
    assert.equal((await fetch(`${base}/v2/health/live`)).status, 200);
  });

  it('queues concurrent requests on the model instance; every answer is right and counted', async () => {
    const before = (await (await fetch(`${base}/v2/models/mnist/stats`)).json()) as { model_stats: { inference_count: number }[] };
    const images = await Promise.all(Array.from({ length: 10 }, (_, n) => digit(n)));
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const n = i % 10;
        const header = Buffer.from(
          JSON.stringify({
            inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: IMAGE_BYTES } }],
            parameters: { binary_data_output: true },
          }),
        );
        const res = await fetch(`${base}/v2/models/mnist/infer`, {
          method: 'POST',
          headers: { 'Inference-Header-Content-Length': String(header.byteLength) },
          body: Buffer.concat([header, images[n] ?? new Uint8Array()]),
        });
        const body = Buffer.from(await res.arrayBuffer());
        const jsonLength = Number(res.headers.get('inference-header-content-length'));
        return [n, argmax(floats(body.subarray(jsonLength)))];
      }),
    );
    for (const [n, predicted] of answers) assert.equal(predicted, n);
    const stats = (await (await fetch(`${base}/v2/models/mnist/stats`)).json()) as {
      model_stats: { inference_count: number; execution_count: number; inference_stats: { success: { count: number } } }[];
    };
    assert.equal((stats.model_stats[0]?.inference_count ?? 0) - (before.model_stats[0]?.inference_count ?? 0), 40);
  });
});

describe('popef serve: a model whose plugin dies', () => {
  it('answers that request with 500, stays READY, restarts the plugin; the other models keep serving', { timeout: 60_000 }, async () => {
    const temp = await tempDir();
    let server: RunningServer | undefined;
    try {
      const repo = await mnistRepository(temp.dir);
      await cp(join(repo, 'mnist'), join(repo, 'mnist2'), { recursive: true });
      const config = await readFile(join(repo, 'mnist2', 'config.pbtxt'), 'utf8');
      await writeFile(join(repo, 'mnist2', 'config.pbtxt'), config.replace('name: "mnist"', 'name: "mnist2"'));
      // Each plugin process dies on its second run.
      const env = { ...process.env, ECHO_PLUGIN_MODE: 'zeros', ECHO_PLUGIN_EXIT_ON_RUN: '2' };
      const restarted: string[] = [];
      server = await startServer({
        repositories: [repo],
        createPlugin: () => Promise.resolve(new ChildProcessPlugin({ name: 'echo', command: join(ROOT, 'test/run/echo-plugin'), env })),
        host: '127.0.0.1',
        httpPort: 0,
        maxRequestSize: 1024 * 1024,
        onInstanceEvent: (e) => restarted.push(`${e.instance} ${e.state}`),
      });
      const base = `http://127.0.0.1:${server.httpPort ?? 0}`;
      const header = Buffer.from(
        JSON.stringify({ inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: IMAGE_BYTES } }] }),
      );
      const infer = (model: string): Promise<Response> =>
        fetch(`${base}/v2/models/${model}/infer`, {
          method: 'POST',
          headers: { 'Inference-Header-Content-Length': String(header.byteLength) },
          body: Buffer.concat([header, Buffer.alloc(IMAGE_BYTES)]),
        });
      assert.equal((await infer('mnist')).status, 200);
      const died = await infer('mnist');
      assert.equal(died.status, 500);
      assert.match(((await died.json()) as { error: string }).error, /execution plugin failed for model 'mnist'/);
      assert.equal((await fetch(`${base}/v2/models/mnist/ready`)).status, 200);
      // The next request waits for the restarted plugin and is answered.
      assert.equal((await infer('mnist')).status, 200);
      assert.deepEqual(restarted, ['mnist_0 FAILED', 'mnist_0 READY']);
      const index = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST' })).json()) as { name: string; state: string }[];
      assert.deepEqual(index.find((m) => m.name === 'mnist')?.state, 'READY');
      assert.equal((await infer('mnist2')).status, 200);
      assert.equal((await fetch(`${base}/v2/models/mnist2/ready`)).status, 200);
    } finally {
      await server?.stop();
      await temp.cleanup();
    }
  });
});

describe('popef serve: generate when the plugin fails', () => {
  it('answers the failure in the body under its status: a JSON error, an SSE event when streaming', { timeout: 60_000 }, async () => {
    const temp = await tempDir();
    let server: RunningServer | undefined;
    try {
      const repo = await mnistRepository(temp.dir);
      // Each plugin process dies on its first run: every request reaches a plugin that fails it.
      const env = { ...process.env, ECHO_PLUGIN_MODE: 'zeros', ECHO_PLUGIN_EXIT_ON_RUN: '1' };
      server = await startServer({
        repositories: [repo],
        createPlugin: () => Promise.resolve(new ChildProcessPlugin({ name: 'echo', command: join(ROOT, 'test/run/echo-plugin'), env })),
        host: '127.0.0.1',
        httpPort: 0,
        maxRequestSize: 1024 * 1024,
      });
      const body = JSON.stringify({ digit_image: new Array<number>(784).fill(0) });
      const ask = async (kind: string): Promise<[number, string, string]> => {
        const res = await fetch(`http://127.0.0.1:${server?.httpPort ?? 0}/v2/models/mnist/${kind}`, { method: 'POST', body });
        return [res.status, res.headers.get('content-type') ?? '', await res.text()];
      };
      const [status, type, text] = await ask('generate');
      assert.deepEqual([status, type], [500, 'application/json']);
      assert.match((JSON.parse(text) as { error: string }).error, /^execution plugin failed for model 'mnist'/);
      const [streamStatus, streamType, event] = await ask('generate_stream');
      assert.deepEqual([streamStatus, streamType], [500, 'text/event-stream; charset=utf-8']);
      assert.match(event, /^data: \{"error":"execution plugin failed for model 'mnist'.*"\}\n\n$/s);
    } finally {
      await server?.stop();
      await temp.cleanup();
    }
  });
});

describe('popef run --plugin triton, without a server', () => {
  it('needs --url, and says plainly when nothing answers there', async () => {
    const noUrl = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'triton', '--random']);
    assert.equal(noUrl.code, 2);
    assert.match(noUrl.stderr, /--plugin triton needs --url grpc:\/\/HOST:PORT or http:\/\/HOST:PORT/);
    const badUrl = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'triton', '--url', 'ftp://x', '--random']);
    assert.equal(badUrl.code, 2);
    assert.match(badUrl.stderr, /--url "ftp:\/\/x" is not grpc:\/\/HOST:PORT or http:\/\/HOST:PORT/);
    // A port nothing listens on: one that was free a moment ago.
    const probe = await startServer({
      repositories: [],
      createPlugin: () => loadPlugin('cpu', { cwd: ROOT, env: {} }),
      host: '127.0.0.1',
      httpPort: 0,
      maxRequestSize: 1024,
    });
    const port = probe.httpPort ?? 0;
    await probe.stop();
    for (const url of [`http://127.0.0.1:${port}`, `grpc://127.0.0.1:${port}`]) {
      const r = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'triton', '--url', url, '--random']);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`plugin "triton" cannot run here: no inference server answers at ${url.replace(/[/.]/g, '\\$&')}`));
    }
  });
});

describe('popef serve: requests queue per model instance', () => {
  it('one run at a time per instance unless the plugin takes more; every request answered', async () => {
    for (const [outstanding, instances, expected] of [
      [undefined, 1, 1],
      [undefined, 2, 2],
      [4, 1, 4],
    ] as const) {
      const temp = await tempDir();
      let server: RunningServer | undefined;
      try {
        const repo = await mnistRepository(temp.dir);
        const config = await readFile(join(repo, 'mnist', 'config.pbtxt'), 'utf8');
        await writeFile(join(repo, 'mnist', 'config.pbtxt'), config.replace('kind: KIND_CPU', `kind: KIND_CPU\n    count: ${instances}`));
        let running = 0;
        let most = 0;
        // A plugin double that only records how many runs overlap. Each run holds until `expected` runs
        // overlap (or 2 s pass: arrivals on a loaded machine are slow), then 50 ms more, in which a server
        // that allowed more runs at once would start them: the count does not depend on arrival timing.
        const plugin: ExecutionPlugin = {
          name: 'recorder',
          probe: () => Promise.resolve({ available: true }),
          dispose: () => Promise.resolve(),
          open: () =>
            Promise.resolve({
              inputs: [{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }],
              outputs: [{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] }],
              maxOutstandingRuns: outstanding,
              run: async () => {
                running += 1;
                most = Math.max(most, running);
                const deadline = Date.now() + 2000;
                while (running < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
                await new Promise((r) => setTimeout(r, 50));
                running -= 1;
                return new Map([
                  ['softmax/Softmax:0', { name: 'softmax/Softmax:0', dtype: 'F32' as const, shape: [1, 10], data: new Uint8Array(40) }],
                ]);
              },
              close: () => Promise.resolve(),
            }),
        };
        server = await startServer({
          repositories: [repo],
          models: ['mnist'],
          createPlugin: () => Promise.resolve(plugin),
          host: '127.0.0.1',
          httpPort: 0,
          maxRequestSize: 1024 * 1024,
        });
        const header = Buffer.from(
          JSON.stringify({
            inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: IMAGE_BYTES } }],
          }),
        );
        const statuses = await Promise.all(
          Array.from({ length: 16 }, async () => {
            const res = await fetch(`http://127.0.0.1:${server?.httpPort ?? 0}/v2/models/mnist/infer`, {
              method: 'POST',
              headers: { 'Inference-Header-Content-Length': String(header.byteLength) },
              body: Buffer.concat([header, Buffer.alloc(IMAGE_BYTES)]),
            });
            await res.arrayBuffer();
            return res.status;
          }),
        );
        assert.deepEqual(new Set(statuses), new Set([200]));
        assert.equal(most, expected, `maxOutstandingRuns ${String(outstanding)}, ${instances} instance(s)`);
      } finally {
        await server?.stop();
        await temp.cleanup();
      }
    }
  });
});

describe('popef serve: what it refuses', () => {
  it('a start that cannot serve: no transport, one port twice, a malformed plugin option, a plugin that cannot run (exit 2)', async () => {
    const repo = fixture('repos/clean');
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--no-http', '--no-grpc'], {}, /--no-http and --no-grpc leave nothing to serve/],
      [['--http-port', '9123', '--grpc-port', '9123'], {}, /--http-port and --grpc-port are both 9123/],
      [['--plugin-option', 'nokey'], {}, /--plugin-option "nokey" is not KEY=VALUE/],
      [
        ['--http-port', '0', '--grpc-port', '0'],
        { POPEF_ONNXRUNTIME_MODULE: 'onnxruntime-node-is-not-here' },
        /plugin "cpu" cannot run here: onnxruntime-node cannot be loaded/,
      ],
      [['--load-model', 'mnist'], {}, /--load-model needs --model-control-mode explicit/],
      [
        ['--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--model-control-mode', 'explicit', '--load-model', 'nosuch'],
        {},
        /no model directory named "nosuch" in .*\n {2}hint: check --load-model/,
      ],
      [['--model-control-mode', 'sometimes'], {}, /--model-control-mode/],
    ];
    for (const [args, env, message] of cases) {
      const r = await runCli(['serve', repo, ...args], { env });
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, message);
    }
  });

  it('lists a model of another backend, and a model in two repositories, as UNAVAILABLE with the reason', async () => {
    const temp = await tempDir();
    let server: RunningServer | undefined;
    try {
      const first = await mnistRepository(join(temp.dir, 'a'));
      const second = await mnistRepository(join(temp.dir, 'b'));
      const config = await readFile(join(second, 'broken', 'config.pbtxt'), 'utf8');
      await cp(join(second, 'broken'), join(second, 'other-backend'), { recursive: true });
      await writeFile(
        join(second, 'other-backend', 'config.pbtxt'),
        config
          .replace('name: "broken"', 'name: "other-backend"')
          .replace('max_batch_size: -1', 'max_batch_size: 1')
          .replace('backend: "poplar"', 'backend: "python"'),
      );
      // A Python model: its code, no PopEF.
      await rm(join(second, 'other-backend', '1', 'executable.popef'));
      await writeFile(join(second, 'other-backend', '1', 'model.py'), '');
      server = await startServer({
        repositories: [first, second],
        models: ['mnist', 'other-backend'],
        createPlugin: () => loadPlugin('cpu', { cwd: ROOT, env: {} }),
        host: '127.0.0.1',
        httpPort: 0,
        maxRequestSize: 1024 * 1024,
      });
      const base = `http://127.0.0.1:${server.httpPort ?? 0}`;
      const index = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as {
        name: string;
        state: string;
        reason?: string;
      }[];
      // As Triton's index: every model directory (one not loaded by name only), no empty fields.
      assert.deepEqual(index, [
        { name: 'broken' },
        { name: 'mnist', state: 'UNAVAILABLE', reason: "model 'mnist' appears in more than one model repository" },
        {
          name: 'other-backend',
          state: 'UNAVAILABLE',
          reason: "popef serve runs models of the poplar backend only; this one names backend 'python'",
        },
      ]);
      const readyOnly = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST', body: '{"ready": true}' })).json()) as unknown[];
      assert.deepEqual(readyOnly, []);
    } finally {
      await server?.stop();
      await temp.cleanup();
    }
  });
});

describe('popef run --plugin triton checks what the server returns', () => {
  it("refuses an output whose datatype, shape or size is not the anchor's, naming both", async () => {
    // A server that answers every infer with FP32 [1, 5]: half of what the MNIST anchor holds.
    const json = Buffer.from(
      JSON.stringify({
        model_name: 'mnist',
        model_version: '1',
        outputs: [{ name: 'softmax/Softmax:0', datatype: 'FP32', shape: [1, 5], parameters: { binary_data_size: 20 } }],
      }),
    );
    const wrong = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'Inference-Header-Content-Length': String(json.byteLength), 'Content-Type': 'application/octet-stream' });
        res.end(Buffer.concat([json, Buffer.alloc(20)]));
      });
    });
    await new Promise<void>((resolve) => wrong.listen(0, '127.0.0.1', resolve));
    try {
      const address = wrong.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      const r = await runCli([
        'run',
        fixture('mnist/executable.popef'),
        '--plugin',
        'triton',
        '--url',
        `http://127.0.0.1:${port}`,
        '--plugin-option',
        'model=mnist',
        '--random',
      ]);
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /output 'softmax\/Softmax:0' is FP32 \[1, 5\] in 20 bytes, but the model's anchor "softmax\/Softmax:0" is FP32 \[1, 10\] in 40 bytes/,
      );
    } finally {
      await new Promise((resolve) => wrong.close(resolve));
    }
  });
});

/** An HTTP server that answers every request with `headers` and `body` (a fake Triton), for the length of `use`. */
async function answering(headers: Record<string, string>, body: Buffer, use: (url: string) => Promise<void>): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, headers);
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const address = server.address();
    await use(`http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('popef run --plugin triton: the cases of issue 24', () => {
  const run = (url: string): ReturnType<typeof runCli> =>
    runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'triton', '--url', url, '--plugin-option', 'model=mnist', '--random']);

  it('refuses a response declaring binary_data_size 4e9 with 40 bytes of data', async () => {
    const json = Buffer.from(
      JSON.stringify({
        model_name: 'mnist',
        model_version: '1',
        outputs: [{ name: 'softmax/Softmax:0', datatype: 'FP32', shape: [1, 10], parameters: { binary_data_size: 4e9 } }],
      }),
    );
    await answering({ 'Inference-Header-Content-Length': String(json.byteLength) }, Buffer.concat([json, Buffer.alloc(40)]), async (url) => {
      const r = await run(url);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /output 'softmax\/Softmax:0' declares binary_data_size 4000000000, but 40 bytes of binary data are left \[E_PLUGIN\]/);
    });
  });

  it('refuses a server answering a 2 GiB body before buffering it, as a plugin error (exit 2)', async () => {
    // The body announced, not sent: the length alone must be refused.
    await answering({ 'Content-Length': String(2 * 1024 ** 3) }, Buffer.alloc(0), async (url) => {
      const started = Date.now();
      const r = await run(url);
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        /answered: a response of 2147483648 bytes or more, more than the 16777256 this model's outputs can take \(their bytes and 16777216 for the JSON header\) \[E_PLUGIN\]/,
      );
      assert.ok(Date.now() - started < 10_000);
    });
  });
});

describe('JSON tensor data (Triton HTTP frontend rules)', () => {
  it('reads nested or flat arrays and refuses values of the wrong kind, count or range', () => {
    assert.deepEqual(
      [
        ...new Int32Array(
          readJsonData(
            'x',
            'INT32',
            [2, 2],
            [
              [1, 2],
              [3, 4],
            ],
          ).slice().buffer,
        ),
      ],
      [1, 2, 3, 4],
    );
    assert.deepEqual([...readJsonData('b', 'BOOL', [2], [true, false])], [1, 0]);
    const refused = (datatype: string, shape: number[], data: unknown, message: RegExp): void => {
      assert.throws(
        () => readJsonData('x', datatype, shape, data),
        (e: Error) => message.test(e.message),
      );
    };
    refused('BOOL', [1], [1], /attempt to access JSON non-boolean as boolean/);
    // An integer outside a narrower type is stored as Triton's C cast stores it (test/serve/json-int64.test.ts compares with the real server).
    assert.deepEqual([...new Int8Array(readJsonData('x', 'INT8', [2], [300, -129]).slice().buffer)], [44, 127]);
    refused('INT8', [1], [1.5], /non-signed-integer as signed-integer/);
    refused('UINT8', [1], [-1], /non-unsigned-integer as unsigned-integer/);
    refused('FP32', [1], ['a'], /non-number as double/);
    // The real server prefixes the walk's errors too (an element past the count, a wrong element): see the differential.
    refused('FP32', [2], [1, 2, 3], /^Unable to parse 'data': Shape does not match true shape of 'data' field$/);
    refused('FP32', [1], ['a'], /^Unable to parse 'data': attempt to access JSON non-number as double$/);
    refused('BYTES', [1], [1], /^Unable to parse JSON bytes array: attempt to access JSON non-string as string$/);
    refused('FP32', [4], [1, 2, 3], /^Unable to parse 'data': Shape does not match/);
    refused('FP16', [1], [1], /receiving FP16 data via JSON is not supported/);
    refused('BYTES', [1], [1], /non-string as string/);
    refused('NOPE', [1], [1], /invalid datatype for input x/);
    assert.deepEqual(writeJsonData('BYTES', readJsonData('s', 'BYTES', [2], ['ab', ''])), ['ab', '']);
    assert.throws(() => writeJsonData('FP16', new Uint8Array(2)), /sending FP16 data via JSON is not supported/);
  });
});

describe('popef serve model control: poll and explicit modes', () => {
  const cpu = (): Promise<ExecutionPlugin> => loadPlugin('cpu', { cwd: ROOT, env: {} });
  const index = async (base: string): Promise<unknown> => (await fetch(`${base}/v2/repository/index`, { method: 'POST', body: '{}' })).json();
  const body = JSON.stringify({
    inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], data: Array.from(new Float32Array(28 * 28)) }],
  });
  const infer = async (base: string, model: string): Promise<number> =>
    (await fetch(`${base}/v2/models/${model}/infer`, { method: 'POST', body })).status;

  it('poll mode loads a model directory that appears and unloads one that goes away', async () => {
    const temp = await tempDir();
    let server: RunningServer | undefined;
    try {
      const repo = await mnistRepository(temp.dir);
      await rm(join(repo, 'broken'), { recursive: true });
      server = await startServer({
        repositories: [repo],
        createPlugin: cpu,
        host: '127.0.0.1',
        httpPort: 0,
        maxRequestSize: 1 << 20,
        modelControl: { mode: 'poll', pollSeconds: 1 },
      });
      const base = `http://127.0.0.1:${server.httpPort ?? 0}`;
      await cp(join(repo, 'mnist'), join(repo, 'second'), { recursive: true });
      const config = await readFile(join(repo, 'second', 'config.pbtxt'), 'utf8');
      await writeFile(join(repo, 'second', 'config.pbtxt'), config.replace('name: "mnist"', 'name: "second"'));
      const until = async (want: unknown): Promise<unknown> => {
        const deadline = Date.now() + 20_000;
        let got = await index(base);
        while (JSON.stringify(got) !== JSON.stringify(want) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 200));
          got = await index(base);
        }
        return got;
      };
      const both = [
        { name: 'mnist', version: '1', state: 'READY' },
        { name: 'second', version: '1', state: 'READY' },
      ];
      assert.deepEqual(await until(both), both);
      assert.equal(await infer(base, 'second'), 200);
      await rm(join(repo, 'second'), { recursive: true });
      const gone = [
        { name: 'mnist', version: '1', state: 'READY' },
        { name: 'second', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
      ];
      assert.deepEqual(await until(gone), gone);
      // Load and unload are refused while polling, with Triton's message.
      const load = await fetch(`${base}/v2/repository/models/mnist/load`, { method: 'POST' });
      assert.deepEqual([load.status, await load.json()], [503, { error: 'explicit model load / unload is not allowed if polling is enabled' }]);
    } finally {
      await server?.stop();
      await temp.cleanup();
    }
  });

  it('explicit mode loads --load-model models only; an unload lets queued requests finish and refuses new ones', async () => {
    const temp = await tempDir();
    let server: RunningServer | undefined;
    try {
      const repo = await mnistRepository(temp.dir);
      server = await startServer({
        repositories: [repo],
        createPlugin: cpu,
        host: '127.0.0.1',
        httpPort: 0,
        maxRequestSize: 1 << 20,
        modelControl: { mode: 'explicit', loadModels: ['mnist'] },
      });
      const base = `http://127.0.0.1:${server.httpPort ?? 0}`;
      assert.deepEqual(await index(base), [{ name: 'broken' }, { name: 'mnist', version: '1', state: 'READY' }]);
      // Requests given to the core are checked and queued on the model (one instance, one run at a time) at once.
      const request = {
        modelName: 'mnist',
        modelVersion: '',
        id: '',
        inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], data: new Uint8Array(IMAGE_BYTES) }],
        outputs: [],
      };
      const core = server.core;
      const queued = Array.from({ length: 8 }, () => core.infer(request).then((r) => r.outputs.length));
      const unload = await fetch(`${base}/v2/repository/models/mnist/unload`, { method: 'POST' });
      assert.equal(unload.status, 200);
      // Triton answers the unload while the model drains: it refuses new requests at once.
      assert.equal(await infer(base, 'mnist'), 404);
      assert.deepEqual(await Promise.all(queued), Array(8).fill(1));
      const unloaded = [{ name: 'broken' }, { name: 'mnist', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' }];
      let got = await index(base);
      for (let i = 0; i < 100 && JSON.stringify(got) !== JSON.stringify(unloaded); i++) {
        await new Promise((r) => setTimeout(r, 20));
        got = await index(base);
      }
      assert.deepEqual(got, unloaded);
    } finally {
      await server?.stop();
      await temp.cleanup();
    }
  });
});
