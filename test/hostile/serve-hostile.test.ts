import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { connect as connectHttp2, type ClientHttp2Session } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixture, inTempDir } from '../helpers.js';
import { assertCleanError, spawnPopef, until } from './spawn-popef.js';

/** `popef serve` under a hostile repository and hostile clients. */

const MNIST = fixture('mnist/executable.popef');

/** The port a running serve printed, once it is ready. */
function readyPort(stderr: string, kind: 'HTTP' | 'gRPC'): number | undefined {
  const m = new RegExp(`${kind} on [^:]+:(\\d+)`).exec(stderr);
  return m === null ? undefined : Number(m[1]);
}

describe('popef serve, hostile', () => {
  it('model names holding ESC sequences and newlines are escaped on stderr', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      await mkdir(repo);
      for (const model of ['ev\u001b[31mil\u001b]0;pwned\u0007', 'nl\nfake: READY']) {
        // scaffold refuses such names; a directory made by hand is what serve meets.
        await mkdir(join(repo, model));
      }
      const run = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'good']);
      assert.equal(run.code, 0, run.stderr);
      const served = await spawnPopef(['serve', repo, '--http-port', '0', '--grpc-port', '0'], {
        interrupt: { signal: 'SIGINT', when: async (_child, stderr) => until(() => /ready: /.test(stderr()), 20_000) },
        timeoutMs: 40_000,
      });
      assert.equal(served.code, 0, served.stderr);
      assert.ok(!served.stderr.includes('\u001b'), JSON.stringify(served.stderr));
      assert.ok(!/^fake: READY/m.test(served.stderr), served.stderr);
      assert.match(served.stderr, /model 'ev\\x1b\[31mil\\x1b\]0;pwned\\x07': UNAVAILABLE/);
      assert.match(served.stderr, /model 'nl\\x0afake: READY': UNAVAILABLE/);
      assert.ok(readyPort(served.stderr, 'HTTP') !== undefined);
    });
  });
});

describe('popef serve, ports', () => {
  it('a gRPC port in use prints only our message (no raw grpc-js line)', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      await inTempDir(async (dir) => {
        const repo = join(dir, 'repo');
        assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist'])).code, 0);
        const run = await spawnPopef(['serve', repo, '--http-port', '0', '--grpc-port', String(port)]);
        assertCleanError(run, 2, new RegExp(`cannot serve gRPC on 127\\.0\\.0\\.1:${port}: the port is in use \\[E_IO\\]`));
        assert.ok(!/No address added/.test(run.stderr), run.stderr);
      });
    } finally {
      taken.close();
    }
  });
});

/** Starts `popef serve` on free ports and hands its ports to `body` while it runs; ends it with `signal`. */
async function withServe(
  args: readonly string[],
  body: (ports: { http: number; grpc: number }) => Promise<void>,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<Awaited<ReturnType<typeof spawnPopef>>> {
  return inTempDir(async (dir) => {
    const repo = join(dir, 'repo');
    assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist'])).code, 0);
    let failure: unknown;
    const run = await spawnPopef(['serve', repo, '--http-port', '0', '--grpc-port', '0', ...args], {
      timeoutMs: 60_000,
      interrupt: {
        signal,
        when: async (_child, stderr) => {
          await until(() => /ready: /.test(stderr()), 30_000);
          try {
            await body({ http: readyPort(stderr(), 'HTTP') ?? 0, grpc: readyPort(stderr(), 'gRPC') ?? 0 });
          } catch (error) {
            failure = error;
          }
        },
      },
    });
    if (failure instanceof Error) throw failure;
    return run;
  });
}

describe('popef serve, stopping', () => {
  it('SIGTERM with idle, half-sent-header and partial gRPC connections open exits 0 at once and prints stopped', async () => {
    const sockets: Socket[] = [];
    let grpcSession: ClientHttp2Session | undefined;
    const run = await withServe([], async ({ http, grpc }) => {
      const idle = connect(http, '127.0.0.1');
      const half = connect(http, '127.0.0.1');
      sockets.push(idle, half);
      await new Promise((r) => half.once('connect', r));
      half.write('POST /v2/models/mnist/infer HTTP/1.1\r\nHost: x\r\nContent-'); // never finished
      grpcSession = connectHttp2(`http://127.0.0.1:${grpc}`);
      grpcSession.on('error', () => undefined);
      const stream = grpcSession.request({
        ':method': 'POST',
        ':path': '/inference.GRPCInferenceService/ModelInfer',
        'content-type': 'application/grpc',
      });
      stream.on('error', () => undefined);
      stream.write(Buffer.from([0, 0, 0, 1, 0])); // a message header promising more than is sent
      await new Promise((r) => setTimeout(r, 300));
    });
    for (const s of sockets) s.destroy();
    grpcSession?.destroy();
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /popef serve: stopped\n$/);
    assert.ok((run.stopMs ?? Infinity) < 5000, `stopped after ${run.stopMs ?? '?'} ms`);
  });

  it('answers during the drain carry Connection: close, and keep-alive clients are let go', async () => {
    const { request, Agent } = await import('node:http');
    let closedByServer = 0;
    const run = await withServe([], async ({ http }) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 8 });
      const ask = (): Promise<void> =>
        new Promise((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port: http, path: '/v2/health/ready', agent }, (res) => {
            res.resume();
            res.on('end', resolve);
          });
          req.on('error', reject);
          req.on('socket', (s) => s.once('close', () => (closedByServer += 1)));
          req.end();
        });
      await Promise.all(Array.from({ length: 8 }, ask));
      await new Promise((r) => setTimeout(r, 100));
    });
    assert.equal(run.code, 0, run.stderr);
    assert.ok(closedByServer >= 1, 'the server closed the keep-alive connections');
    assert.ok((run.stopMs ?? Infinity) < 5000, `stopped after ${run.stopMs ?? '?'} ms`);
  });
});

describe('popef serve, memory', () => {
  it('many connections each sending just under --max-request-size are bounded by --max-buffered (503 beyond it), and the budget is given back', async () => {
    const { request } = await import('node:http');
    const statuses: number[] = [];
    const messages: string[] = [];
    const run = await withServe(['--max-request-size', String(8 * 1024 * 1024), '--max-buffered', String(16 * 1024 * 1024)], async ({ http }) => {
      const send = (): Promise<void> =>
        new Promise((resolve) => {
          const req = request(
            {
              host: '127.0.0.1',
              port: http,
              method: 'POST',
              path: '/v2/models/mnist/infer',
              headers: { 'Content-Type': 'application/json', 'Content-Length': 8 * 1024 * 1024 - 1 },
            },
            (res) => {
              let text = '';
              res.on('data', (d: Buffer) => (text += d.toString()));
              res.on('end', () => {
                statuses.push(res.statusCode ?? 0);
                messages.push(text);
                resolve();
              });
            },
          );
          req.on('error', () => {
            statuses.push(-1);
            resolve();
          });
          const chunk = Buffer.alloc(1024 * 1024, 0x20);
          let left = 8 * 1024 * 1024 - 1;
          const pump = (): void => {
            while (left > 0) {
              const n = Math.min(left, chunk.byteLength);
              left -= n;
              if (!req.write(chunk.subarray(0, n))) return void req.once('drain', pump);
            }
            req.end();
          };
          pump();
        });
      await Promise.all(Array.from({ length: 8 }, send));
      // Given back: one more body fits once the others are answered.
      await send();
    });
    assert.equal(run.code, 0, run.stderr);
    assert.ok(statuses.includes(503), `statuses ${statuses.join(',')}`);
    assert.ok(
      messages.some((m) => /the most it buffers at once \(--max-buffered 16777216\)/.test(m)),
      messages.join('\n'),
    );
    // The last one came after the rest were answered: it was read whole (a JSON error about its content, not 503).
    assert.notEqual(statuses.at(-1), 503, `statuses ${statuses.join(',')}`);
  });
});

describe('popef serve, memory over gRPC', () => {
  it('a gRPC message past what --max-buffered has left (an HTTP body holding the rest) gets RESOURCE_EXHAUSTED, and the budget is given back', async () => {
    const { Client, credentials, status } = await import('@grpc/grpc-js');
    const { request } = await import('node:http');
    const { protocolCodec } = await import('../../src/triton/inference-protocol.js');
    const MiB = 1024 * 1024;
    const message = protocolCodec('ModelInferRequest').encode({
      model_name: 'mnist',
      inputs: [{ name: 'input_0', datatype: 'FP32', shape: [1, 1, 28, 28] }],
      raw_input_contents: [Buffer.alloc(2 * MiB)],
    });
    const answers: { code: number; details: string }[] = [];
    const run = await withServe(['--max-request-size', String(8 * MiB), '--max-buffered', String(4 * MiB)], async ({ http, grpc }) => {
      const client = new Client(`127.0.0.1:${grpc}`, credentials.createInsecure());
      const infer = (): Promise<void> =>
        new Promise((resolve) => {
          client.makeUnaryRequest(
            '/inference.GRPCInferenceService/ModelInfer',
            (b: Buffer) => b,
            (b: Buffer) => b,
            message,
            { deadline: Date.now() + 20_000 },
            (error) => {
              answers.push({ code: error?.code ?? 0, details: error?.details ?? '' });
              resolve();
            },
          );
        });
      // 3 MiB of an HTTP body held open: 1 MiB of the budget is left.
      const held = request({
        host: '127.0.0.1',
        port: http,
        method: 'POST',
        path: '/v2/models/mnist/infer',
        headers: { 'Content-Length': 8 * MiB - 1 },
      });
      held.on('error', () => undefined);
      held.write(Buffer.alloc(3 * MiB, 0x20));
      await new Promise((r) => setTimeout(r, 1000));
      await infer();
      held.destroy();
      await new Promise((r) => setTimeout(r, 500));
      // Given back: the same message is read and answered on its content (one row is 3136 bytes).
      await infer();
      client.close();
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(answers.length, 2, JSON.stringify(answers));
    const [refused, readWhole] = answers as [{ code: number; details: string }, { code: number; details: string }];
    assert.equal(refused.code, status.RESOURCE_EXHAUSTED, JSON.stringify(answers));
    assert.match(refused.details, /the most it buffers at once \(--max-buffered 4194304\)/);
    assert.equal(readWhole.code, status.INVALID_ARGUMENT, JSON.stringify(answers));
    assert.match(readWhole.details, /input byte size mismatch/);
  });
});

describe('popef serve, a long gRPC stream under the budget', () => {
  it('ModelStreamInfer counts each message only while it arrives: 12 messages of 1 MiB on one stream pass a 4 MiB --max-buffered', async () => {
    const { Client, credentials } = await import('@grpc/grpc-js');
    const { protocolCodec } = await import('../../src/triton/inference-protocol.js');
    const MiB = 1024 * 1024;
    const message = protocolCodec('ModelInferRequest').encode({
      model_name: 'mnist',
      inputs: [{ name: 'input_0', datatype: 'FP32', shape: [1, 1, 28, 28] }],
      raw_input_contents: [Buffer.alloc(MiB)],
    });
    const answers: string[] = [];
    let ended = '';
    const run = await withServe(['--max-request-size', String(2 * MiB), '--max-buffered', String(4 * MiB)], async ({ grpc }) => {
      const client = new Client(`127.0.0.1:${grpc}`, credentials.createInsecure());
      const decode = protocolCodec('ModelStreamInferResponse');
      const call = client.makeBidiStreamRequest(
        '/inference.GRPCInferenceService/ModelStreamInfer',
        (b: Buffer) => b,
        (b: Buffer) => decode.decode(b),
      );
      await new Promise<void>((resolve) => {
        call.on('data', (m: Record<string, unknown>) => {
          answers.push(String(m.error_message));
          if (answers.length === 12) call.end();
        });
        call.on('error', (e: Error) => {
          ended = e.message;
          resolve();
        });
        call.on('end', () => resolve());
        for (let i = 0; i < 12; i++) call.write(message);
      });
      client.close();
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(ended, '');
    assert.equal(answers.length, 12, JSON.stringify(answers));
    for (const a of answers) assert.match(a, /input byte size mismatch/);
  });
});

describe('popef serve, paths', () => {
  it('GET /v2/models/%E0%A4%A/ready answers 400 as Triton (not 500 "URI malformed")', async () => {
    const answers: { status: number; body: string }[] = [];
    const run = await withServe([], async ({ http }) => {
      for (const path of ['/v2/models/%E0%A4%A/ready', '/v2/models/%E0%A4%A', '/v2/models/%ZZ/ready']) {
        const res = await fetch(`http://127.0.0.1:${http}${path}`);
        answers.push({ status: res.status, body: await res.text() });
      }
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(
      answers.map((a) => a.status),
      [400, 404, 400], // ready: not ready; metadata: unknown model, as for any other name
      JSON.stringify(answers),
    );
    assert.ok(answers.every((a) => !/URI malformed/.test(a.body)));
  });

  it('a version 99999999999999999999 is refused as Triton parses it (stol out of range), and 2^63-1 is named exactly', async () => {
    const answers: { status: number; body: string }[] = [];
    const run = await withServe([], async ({ http }) => {
      for (const version of ['99999999999999999999', '9223372036854775807']) {
        const res = await fetch(`http://127.0.0.1:${http}/v2/models/mnist/versions/${version}`);
        answers.push({ status: res.status, body: await res.text() });
      }
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(answers[0]?.status, 400, JSON.stringify(answers));
    assert.match(
      JSON.stringify(answers[0]),
      /failed to get model version from specified version string '99999999999999999999' \(details: stol\), version should be an integral value > 0/,
    );
    assert.match(JSON.stringify(answers[1]), /Request for unknown model: 'mnist' version 9223372036854775807 is not found/);
  });
});
