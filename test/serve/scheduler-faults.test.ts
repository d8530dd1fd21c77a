// popef serve's scheduler under faults, in-process: a bad request is
// refused before any plugin sees it and the next good one is answered; a
// plugin error answers only its own request and leaves the model READY; an
// instance whose plugin process dies is restarted while the other instance
// serves (and every change is reported); requests whose client went away
// (HTTP connection closed, gRPC deadline passed) are not run.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { credentials, makeGenericClientConstructor, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { ChildProcessPlugin } from '../../src/run/child-plugin.js';
import type { ExecutionPlugin, Tensor } from '../../src/run/plugin-api.js';
import type { InstanceEvent } from '../../src/serve/served-model.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { protocolCodec } from '../../src/triton/inference-protocol.js';
import { ROOT, tempDir } from '../helpers.js';
import { scaffoldMnist } from './serving.js';

const IMAGE_BYTES = 28 * 28 * 4;
const OUTPUT = 'softmax/Softmax:0';

async function mnistRepository(dir: string, configure: (config: string) => string = (c) => c): Promise<string> {
  const repo = await scaffoldMnist(dir);
  const path = join(repo, 'mnist', 'config.pbtxt');
  await writeFile(path, configure(await readFile(path, 'utf8')));
  return repo;
}

/** An in-process plugin double: each run takes `ms` (or `slowMs` for an image whose first value is 1), fails when that value is 13, and is recorded by it. */
function recorder(ms: number, seen: number[], slowMs = ms): ExecutionPlugin {
  return {
    name: 'recorder',
    probe: () => Promise.resolve({ available: true }),
    dispose: () => Promise.resolve(),
    open: () =>
      Promise.resolve({
        inputs: [{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }],
        outputs: [{ name: OUTPUT, dtype: 'F32', shape: [1, 10] }],
        run: async (inputs: ReadonlyMap<string, Tensor>) => {
          const data = inputs.get('input')?.data ?? new Uint8Array(4);
          const first = new DataView(data.buffer, data.byteOffset, 4).getFloat32(0, true);
          seen.push(first);
          await new Promise((r) => setTimeout(r, first === 1 ? slowMs : ms));
          if (first === 13) throw new Error('the runtime rejected this input');
          const out = new Uint8Array(40);
          new DataView(out.buffer).setFloat32(0, first, true);
          return new Map([[OUTPUT, { name: OUTPUT, dtype: 'F32' as const, shape: [1, 10], data: out }]]);
        },
        close: () => Promise.resolve(),
      }),
  };
}

function image(first: number): Buffer {
  const b = Buffer.alloc(IMAGE_BYTES);
  b.writeFloatLE(first, 0);
  return b;
}

function infer(base: string, body: Buffer, shape: readonly number[] = [1, 1, 28, 28], init: RequestInit = {}): Promise<Response> {
  const header = Buffer.from(
    JSON.stringify({ inputs: [{ name: 'digit_image', datatype: 'FP32', shape, parameters: { binary_data_size: body.byteLength } }] }),
  );
  return fetch(`${base}/v2/models/mnist/infer`, {
    method: 'POST',
    headers: { 'Inference-Header-Content-Length': String(header.byteLength) },
    body: Buffer.concat([header, body]),
    ...init,
  });
}

interface Stats {
  model_stats: { inference_count: number; execution_count: number; inference_stats: { success: { count: number }; fail: { count: number } } }[];
}

async function stats(base: string): Promise<Stats['model_stats'][number]> {
  const s = (await (await fetch(`${base}/v2/models/mnist/stats`)).json()) as Stats;
  const m = s.model_stats[0];
  assert.ok(m !== undefined);
  return m;
}

async function withServer(
  configure: (c: string) => string,
  createPlugin: () => Promise<ExecutionPlugin>,
  body: (base: string, server: RunningServer, events: InstanceEvent[]) => Promise<void>,
): Promise<void> {
  const temp = await tempDir();
  let server: RunningServer | undefined;
  const events: InstanceEvent[] = [];
  try {
    const repo = await mnistRepository(temp.dir, configure);
    server = await startServer({
      repositories: [repo],
      createPlugin,
      host: '127.0.0.1',
      httpPort: 0,
      grpcPort: 0,
      maxRequestSize: 1 << 20,
      onInstanceEvent: (e) => events.push(e),
    });
    await body(`http://127.0.0.1:${server.httpPort ?? 0}`, server, events);
  } finally {
    await server?.stop();
    await temp.cleanup();
  }
}

/** A bare gRPC client of ModelInfer (no tritonclient needed). */
function grpcClient(server: RunningServer): Client {
  const codec =
    (name: string): ((v: Record<string, unknown>) => Buffer) =>
    (v) =>
      protocolCodec(name).encode(v);
  const decode =
    (name: string): ((b: Buffer) => Record<string, unknown>) =>
    (b) =>
      protocolCodec(name).decode(b);
  const Service = makeGenericClientConstructor(
    {
      ModelInfer: {
        path: '/inference.GRPCInferenceService/ModelInfer',
        requestStream: false,
        responseStream: false,
        requestSerialize: codec('ModelInferRequest'),
        requestDeserialize: decode('ModelInferRequest'),
        responseSerialize: codec('ModelInferResponse'),
        responseDeserialize: decode('ModelInferResponse'),
      },
    },
    'GRPCInferenceService',
  );
  return new Service(`127.0.0.1:${server.grpcPort ?? 0}`, credentials.createInsecure());
}

/** One ModelInfer call; resolves with its error, or null. */
function grpcInfer(client: Client, shape: readonly number[], data: Buffer, deadline = Date.now() + 30_000): Promise<ServiceError | null> {
  return new Promise((resolve) => {
    const request = { model_name: 'mnist', inputs: [{ name: 'digit_image', datatype: 'FP32', shape }], raw_input_contents: [data] };
    (
      client as unknown as { ModelInfer: (r: unknown, m: Metadata, o: { deadline: number }, cb: (e: ServiceError | null) => void) => void }
    ).ModelInfer(request, new Metadata(), { deadline }, (e) => resolve(e));
  });
}

describe('popef serve: errors of one request stay with it', () => {
  it('a batch of 0 (or below) is refused with 400 before the plugin runs; the next good request is answered', async () => {
    const seen: number[] = [];
    await withServer(
      (c) => c,
      () => Promise.resolve(recorder(1, seen)),
      async (base, server) => {
        const empty = await infer(base, Buffer.alloc(0), [0, 1, 28, 28]);
        assert.equal(empty.status, 400);
        // Triton sizes a batch-0 input as one row (ShapeWithBatchDim has no batch dimension then).
        assert.deepEqual(await empty.json(), {
          error: "[request id: <id_unknown>] input byte size mismatch for input 'digit_image' for model 'mnist'. Expected 3136, got 0",
        });
        const oneRow = await infer(base, image(2), [0, 1, 28, 28]);
        assert.equal(oneRow.status, 400);
        assert.deepEqual(await oneRow.json(), { error: "[request id: <id_unknown>] inference request batch-size must be >= 1 for 'mnist'" });
        const tooMany = await infer(base, Buffer.concat([image(1), image(1)]), [2, 1, 28, 28]);
        assert.equal(tooMany.status, 400);
        assert.deepEqual(await tooMany.json(), { error: "[request id: <id_unknown>] inference request batch-size must be <= 1 for 'mnist'" });
        // Over gRPC the shape is int64: Triton's uint32 batch size wraps a negative one, and the byte size refuses it.
        const client = grpcClient(server);
        const negative = await grpcInfer(client, [-1, 1, 28, 28], image(1));
        assert.equal(negative?.code, 3);
        assert.equal(
          negative.details,
          "[request id: <id_unknown>] input byte size mismatch for input 'digit_image' for model 'mnist'. Expected 13469017437120, got 3136",
        );
        client.close();
        assert.deepEqual(seen, []);
        const good = await infer(base, image(7));
        assert.equal(good.status, 200);
        assert.equal((await fetch(`${base}/v2/models/mnist/ready`)).status, 200);
        assert.deepEqual(seen, [7]);
      },
    );
  });

  it('a plugin error answers its own request with 500 and leaves the model READY for the next', async () => {
    const seen: number[] = [];
    await withServer(
      (c) => c,
      () => Promise.resolve(recorder(1, seen)),
      async (base) => {
        const bad = await infer(base, image(13));
        assert.equal(bad.status, 500);
        assert.match(
          ((await bad.json()) as { error: string }).error,
          /^execution plugin failed for model 'mnist': .*the runtime rejected this input/,
        );
        assert.equal((await fetch(`${base}/v2/models/mnist/ready`)).status, 200);
        const good = await infer(base, image(3));
        assert.equal(good.status, 200);
        const s = await stats(base);
        assert.equal(s.inference_stats.fail.count, 1);
        assert.equal(s.inference_stats.success.count, 1);
        assert.equal(s.execution_count, 1);
      },
    );
  });

  it('one request of a dynamic batch failing fails the batch it ran in, and only that batch', async () => {
    const seen: number[] = [];
    const config = (c: string): string =>
      c.replace('max_batch_size: 1', 'max_batch_size: 4') + '\ndynamic_batching { max_queue_delay_microseconds: 300000 }\n';
    await withServer(
      config,
      () => Promise.resolve(recorder(1, seen)),
      async (base) => {
        // Four requests inside the delay make one batch of 4 (the preferred size is max_batch_size), run one row at a time.
        const first = await Promise.all([1, 13, 3, 4].map((v) => infer(base, image(v))));
        assert.deepEqual(
          first.map((r) => r.status),
          [500, 500, 500, 500],
        );
        const second = await Promise.all([5, 6].map((v) => infer(base, image(v))));
        assert.deepEqual(
          second.map((r) => r.status),
          [200, 200],
        );
        const bodies = (await Promise.all(second.map((r) => r.json()))) as { outputs: { data: number[] }[] }[];
        // Each response gets its own row of the batch.
        assert.deepEqual(
          bodies.map((b) => b.outputs[0]?.data[0]),
          [5, 6],
        );
        const s = await stats(base);
        assert.equal(s.inference_stats.fail.count, 4);
        assert.equal(s.execution_count, 1);
        assert.equal(s.inference_count, 2);
      },
    );
  });
});

describe('popef serve: instances', () => {
  it(
    'an instance whose plugin dies is restarted while the other serves; the model stays READY; each change is reported',
    { timeout: 60_000 },
    async () => {
      let made = 0;
      // The first plugin process dies on its first run; the others live.
      const createPlugin = (): Promise<ExecutionPlugin> => {
        made += 1;
        const env = { ...process.env, ECHO_PLUGIN_MODE: 'zeros', ECHO_PLUGIN_EXIT_ON_RUN: made === 1 ? '1' : '0' };
        return Promise.resolve(new ChildProcessPlugin({ name: 'echo', command: join(ROOT, 'test/run/echo-plugin'), env }));
      };
      await withServer(
        (c) => c.replace('kind: KIND_CPU', 'kind: KIND_CPU\n    count: 2'),
        createPlugin,
        async (base, _server, events) => {
          // The startup probe is not a model's plugin: two instances are plugins 1 and 2 here (no probe in-process).
          const died = await infer(base, image(1));
          assert.equal(died.status, 500);
          assert.match(((await died.json()) as { error: string }).error, /execution plugin failed for model 'mnist': plugin "echo" exited/);
          assert.equal((await fetch(`${base}/v2/models/mnist/ready`)).status, 200);
          // The other instance answers at once, while the first restarts.
          assert.equal((await infer(base, image(2))).status, 200);
          const deadline = Date.now() + 20_000;
          while (!events.some((e) => e.state === 'READY') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
          assert.deepEqual(
            events.map((e) => [e.model, e.instance, e.state]),
            [
              ['mnist', 'mnist_0', 'FAILED'],
              ['mnist', 'mnist_0', 'READY'],
            ],
          );
          assert.match(events[0]?.reason ?? '', /plugin "echo" exited/);
          assert.equal(made, 3);
          const answers = await Promise.all([1, 2, 3, 4].map((v) => infer(base, image(v))));
          assert.deepEqual(
            answers.map((r) => r.status),
            [200, 200, 200, 200],
          );
          const index = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST' })).json()) as { name: string; state: string }[];
          assert.equal(index.find((m) => m.name === 'mnist')?.state, 'READY');
        },
      );
    },
  );

  it('only when no instance can be started is the model UNAVAILABLE, with the reason in the index', { timeout: 60_000 }, async () => {
    let made = 0;
    const createPlugin = (): Promise<ExecutionPlugin> => {
      made += 1;
      if (made > 1) return Promise.reject(new Error('no device left'));
      const env = { ...process.env, ECHO_PLUGIN_MODE: 'zeros', ECHO_PLUGIN_EXIT_ON_RUN: '1' };
      return Promise.resolve(new ChildProcessPlugin({ name: 'echo', command: join(ROOT, 'test/run/echo-plugin'), env }));
    };
    await withServer(
      (c) => c,
      createPlugin,
      async (base, _server, events) => {
        assert.equal((await infer(base, image(1))).status, 500);
        // Back-off 0.1+0.2+0.4+0.8+1.6 s: given up after five failed starts.
        const deadline = Date.now() + 20_000;
        while (!events.some((e) => e.modelUnavailable === true) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(
          events.map((e) => e.state),
          ['FAILED', 'FAILED', 'FAILED', 'FAILED', 'FAILED', 'GIVEN_UP'],
        );
        const index = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST' })).json()) as {
          name: string;
          state: string;
          reason: string;
        }[];
        assert.deepEqual(
          index.find((m) => m.name === 'mnist'),
          { name: 'mnist', version: '1', state: 'UNAVAILABLE', reason: 'no instance of the model could be started: no device left' },
        );
        assert.equal((await fetch(`${base}/v2/models/mnist/ready`)).status, 400);
      },
    );
  });
});

describe('popef serve (the CLI) logs each instance change on standard error', () => {
  it('FAILED with the reason, then READY once restarted; the model keeps answering', { timeout: 90_000 }, async () => {
    const temp = await tempDir();
    const repo = await mnistRepository(temp.dir);
    // Every process of the echo plugin dies on its second run.
    const child = spawn(
      process.execPath,
      [join(ROOT, 'bin/popef.cjs'), 'serve', repo, '--http-port', '0', '--no-grpc', '--plugin', join(ROOT, 'test/run/echo-plugin')],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, ECHO_PLUGIN_MODE: 'zeros', ECHO_PLUGIN_EXIT_ON_RUN: '2' },
      },
    );
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const until = async (what: () => boolean): Promise<void> => {
        const deadline = Date.now() + 60_000;
        while (!what() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      };
      await until(() => /HTTP on [^:]+:\d+/.test(stderr));
      const base = `http://127.0.0.1:${/HTTP on [^:]+:(\d+)/.exec(stderr)?.[1] ?? ''}`;
      assert.equal((await infer(base, image(1))).status, 200);
      assert.equal((await infer(base, image(2))).status, 500);
      assert.equal((await infer(base, image(3))).status, 200);
      await until(() => /instance 'mnist_0': READY/.test(stderr));
      assert.match(
        stderr,
        /popef serve: model 'mnist' instance 'mnist_0': FAILED, restarting: plugin "[^"]*echo-plugin" exited with status \d+ during run/,
      );
      assert.match(stderr, /popef serve: model 'mnist' instance 'mnist_0': READY: restarted after: plugin /);
    } finally {
      child.kill('SIGKILL');
      await exited;
      await temp.cleanup();
    }
  });
});

describe('popef serve: cancelled requests are not run', () => {
  it('HTTP requests whose client closed the connection, and gRPC calls past their deadline, leave the queue unrun', { timeout: 60_000 }, async () => {
    const seen: number[] = [];
    await withServer(
      (c) => c,
      () => Promise.resolve(recorder(1, seen, 2500)),
      async (base, server) => {
        // One request occupies the only instance for 2.5 s; behind it wait five HTTP requests whose clients will go away.
        const busy = infer(base, image(1));
        const until = async (what: () => boolean): Promise<void> => {
          const deadline = Date.now() + 20_000;
          while (!what() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        };
        await until(() => seen.length === 1);
        const clients = [2, 3, 4, 5, 6].map(() => new AbortController());
        const gone = [2, 3, 4, 5, 6].map((v, i) =>
          infer(base, image(v), [1, 1, 28, 28], { signal: clients[i]?.signal }).then(
            () => 'answered',
            () => 'aborted',
          ),
        );
        // And three gRPC calls with a deadline 1 s away.
        const client = grpcClient(server);
        const call = (v: number): Promise<string> =>
          grpcInfer(client, [1, 1, 28, 28], image(v), Date.now() + 1000).then((e) => (e === null ? 'answered' : `code ${e.code}`));
        const expired = [7, 8, 9].map(call);
        const pending = (): number => server.core.model('mnist', '').scheduler.pending;
        await until(() => pending() === 8);
        assert.equal(pending(), 8);
        for (const c of clients) c.abort();
        assert.deepEqual(await Promise.all(gone), ['aborted', 'aborted', 'aborted', 'aborted', 'aborted']);
        assert.deepEqual(await Promise.all(expired), ['code 4', 'code 4', 'code 4']);
        assert.equal((await busy).status, 200);
        // The next good request runs as soon as the first is done: none of the eight ran.
        const started = performance.now();
        assert.equal((await infer(base, image(10))).status, 200);
        assert.ok(performance.now() - started < 1000, `the good request waited ${Math.round(performance.now() - started)} ms`);
        assert.deepEqual(seen, [1, 10]);
        const s = await stats(base);
        // Triton counts each request that leaves the queue cancelled as a failure.
        assert.equal(s.inference_stats.fail.count, 8);
        assert.equal(s.inference_stats.success.count, 2);
        client.close();
      },
    );
  });
});
