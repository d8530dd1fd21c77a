// popef serve against real peers: the real tritonclient (PyPI, in .venv)
// runs the walkthrough's client unchanged against `popef serve` on the
// scaffolded MNIST repository, over gRPC and HTTP; and the same requests,
// good and bad, go to popef serve and to the real Triton server (the
// tritonserver that nvidia-pytriton bundles) serving the same repository
// with a stand-in poplar backend. Request checks happen in Triton's core
// and frontends before any backend runs, so the stand-in is an equivalent
// model for every error case; both must answer with the same status and
// message.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildStandInBackends, findTritonServer, whyNoTritonOracle, startTriton, type RunningTriton } from '../triton/oracle/tritonserver.js';
import { ROOT, fixture, runCli, tempDir } from '../helpers.js';
import { scaffoldMnist, serveCli, type Serving } from './serving.js';

const PYTHON = join(ROOT, '.venv', 'bin', 'python');
const hasClient = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import tritonclient.grpc, tritonclient.http, PIL']).status === 0;
const missing = hasClient ? undefined : 'tritonclient is not installed (.ci/run installs it into .venv)';
const CLIENTS = join(ROOT, 'test/serve/clients');
const MNIST_CLIENT = join(ROOT, 'src/examples/mnist/mnist_client.py');

const WALKTHROUGH = Array.from({ length: 10 }, (_, n) => `Predicted digit for file "${n}.png": ${n}`).join('\n');

const serve = serveCli;

function python(args: readonly string[]): string {
  const r = spawnSync(PYTHON, args, { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

describe("the walkthrough's tritonclient program against popef serve", { skip: process.env.CI === 'true' ? false : missing }, () => {
  let server: Serving;
  let repo: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    repo = await scaffoldMnist(temp.dir);
    server = await serve(repo);
  });

  after(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
    await cleanup();
  });

  it('prints the ten lines of the walkthrough over gRPC, HTTP binary and HTTP JSON', () => {
    const img = fixture('mnist/img');
    assert.equal(python([MNIST_CLIENT, `127.0.0.1:${server.grpc}`, img]).trim(), WALKTHROUGH);
    assert.equal(python([MNIST_CLIENT, `127.0.0.1:${server.http}`, img, '--protocol', 'http']).trim(), WALKTHROUGH);
    assert.equal(python([MNIST_CLIENT, `127.0.0.1:${server.http}`, img, '--protocol', 'http', '--no-binary']).trim(), WALKTHROUGH);
  });

  it('popef run --plugin triton sends the inputs to it and compares with the cpu plugin, over gRPC and HTTP', async () => {
    for (const url of [`grpc://127.0.0.1:${server.grpc}`, `http://127.0.0.1:${server.http}`]) {
      const r = await runCli([
        'run',
        join(repo, 'mnist'),
        '--plugin',
        'triton',
        '--url',
        url,
        '--input',
        `digit_image=${fixture('mnist/img/6.png')}`,
        '--top-k',
        '1',
        '--compare-with',
        'cpu',
        '--json',
      ]);
      assert.equal(r.code, 0, r.stderr);
      const report = JSON.parse(r.stdout) as {
        plugin: string;
        outputs: { name: string; topK: [{ index: number }][] }[];
        comparison: { passed: boolean }[];
      };
      assert.equal(report.plugin, 'triton');
      assert.equal(report.outputs[0]?.topK[0]?.[0].index, 6);
      assert.deepEqual(
        report.comparison.map((c) => c.passed),
        [true],
      );
    }
    const wrong = await runCli([
      'run',
      join(repo, 'mnist'),
      '--plugin',
      'triton',
      '--url',
      `grpc://127.0.0.1:${server.grpc}`,
      '--plugin-option',
      'model=nosuch',
      '--random',
    ]);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /answered: Request for unknown model: 'nosuch' is not found/);
  });

  it('refuses a port in use with exit 2 and a message naming it', () => {
    const r = spawnSync(
      process.execPath,
      [join(ROOT, 'bin/popef.cjs'), 'serve', repo, '--http-port', String(server.http), '--grpc-port', '0', '--metrics-port', '0', '--plugin', 'cpu'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`cannot serve HTTP on 127\\.0\\.0\\.1:${server.http}: the port is in use`));
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  it('stops on SIGTERM: drains, closes the plugins, exits 0', async () => {
    const other = await serve(repo);
    other.child.kill('SIGTERM');
    assert.equal(await other.exited, 0, other.stderr());
    assert.match(other.stderr(), /popef serve: stopped/);
  });
});

const triton = findTritonServer();
const noTriton = missing ?? whyNoTritonOracle(triton);

/** One JSON input of the MNIST image, all zeros, under a name. */
function json784(name: string): string {
  return JSON.stringify({ name, datatype: 'FP32', shape: [1, 1, 28, 28], data: new Array<number>(784).fill(0) });
}

/**
 * Raw HTTP requests tritonclient cannot send (malformed bodies and
 * headers): [name, path, init]. Compared by status and message.
 */
function rawCases(): [string, string, RequestInit][] {
  const image = Buffer.alloc(28 * 28 * 4);
  const header = JSON.stringify({
    inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], parameters: { binary_data_size: image.byteLength } }],
  });
  const post = (body: string | Buffer, headers: Record<string, string> = {}): RequestInit => ({ method: 'POST', body, headers });
  return [
    ['empty body', '/v2/models/mnist/infer', post('')],
    ['no inputs', '/v2/models/mnist/infer', post('{"outputs": []}')],
    [
      'short binary',
      '/v2/models/mnist/infer',
      post(Buffer.concat([Buffer.from(header), image.subarray(0, 100)]), { 'Inference-Header-Content-Length': String(header.length) }),
    ],
    [
      'extra binary',
      '/v2/models/mnist/infer',
      post(Buffer.concat([Buffer.from(header), image, Buffer.alloc(8)]), { 'Inference-Header-Content-Length': String(header.length) }),
    ],
    ['header length too big', '/v2/models/mnist/infer', post(header, { 'Inference-Header-Content-Length': '100000' })],
    [
      'data and binary',
      '/v2/models/mnist/infer',
      post('{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1],"data":[1],"parameters":{"binary_data_size":4}}]}'),
    ],
    ['no data', '/v2/models/mnist/infer', post('{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1,1,28,28]}]}')],
    ['json count', '/v2/models/mnist/infer', post('{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1,1,28,28],"data":[1,2,3]}]}')],
    ['fp16 json', '/v2/models/mnist/infer', post('{"inputs":[{"name":"digit_image","datatype":"FP16","shape":[1],"data":[1]}]}')],
    ['triton_ parameter', '/v2/models/mnist/infer', post(`{"parameters":{"triton_x":1},"inputs":[]}`)],
    [
      'byte size',
      '/v2/models/mnist/infer',
      post(Buffer.concat([Buffer.from(header.replace(String(image.byteLength), '400')), image.subarray(0, 400)]), {
        'Inference-Header-Content-Length': String(header.length - String(image.byteLength).length + 3),
      }),
    ],
    ['unknown model', '/v2/models/nosuch/infer', post('{}')],
    ['unknown model metadata', '/v2/models/nosuch', { method: 'GET' }],
    ['unknown version config', '/v2/models/mnist/versions/3/config', { method: 'GET' }],
    ['unknown route', '/v2/nosuch', { method: 'GET' }],
    ['wrong method', '/v2/health/live', { method: 'POST' }],
    ['infer by GET', '/v2/models/mnist/infer', { method: 'GET' }],
    ['shm register, no region name', '/v2/systemsharedmemory/register', post('{"key":"/k","byte_size":4}')],
    ['shm register, no body', '/v2/systemsharedmemory/region/r/register', post('')],
    ['shm register, no key', '/v2/systemsharedmemory/region/r/register', post('{"byte_size":4}')],
    ['shm register, key not a string', '/v2/systemsharedmemory/region/r/register', post('{"key":4,"byte_size":4}')],
    ['shm register, no byte_size', '/v2/systemsharedmemory/region/r/register', post('{"key":"/popef_none"}')],
    ['shm register, negative offset', '/v2/systemsharedmemory/region/r/register', post('{"key":"/popef_none","offset":-1,"byte_size":4}')],
    ['shm register, unknown key', '/v2/systemsharedmemory/region/r/register', post('{"key":"/popef_none","byte_size":4}')],
    ['shm status by POST', '/v2/systemsharedmemory/status', post('')],
    ['shm unregister by GET', '/v2/systemsharedmemory/unregister', { method: 'GET' }],
    ['shm status of an unknown region', '/v2/systemsharedmemory/region/nosuch/status', { method: 'GET' }],
    ['cuda register, no raw_handle', '/v2/cudasharedmemory/region/g/register', post('{"byte_size":4,"device_id":0}')],
    ['cuda register, short raw_handle', '/v2/cudasharedmemory/region/g/register', post('{"raw_handle":{"b64":"AAAA"},"byte_size":4,"device_id":0}')],
    ['cuda status', '/v2/cudasharedmemory/status', { method: 'GET' }],
    [
      'infer, input in an unknown region',
      '/v2/models/mnist/infer',
      post(
        '{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1,1,28,28],"parameters":{"shared_memory_region":"nosuch","shared_memory_byte_size":3136}}]}',
      ),
    ],
    [
      'infer, region not a string',
      '/v2/models/mnist/infer',
      post('{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1,1,28,28],"parameters":{"shared_memory_region":1}}]}'),
    ],
    [
      'infer, output in shm and binary',
      '/v2/models/mnist/infer',
      post('{"inputs":[],"outputs":[{"name":"output_labels","parameters":{"shared_memory_region":"r","binary_data":true}}]}'),
    ],
    ['index, ready not a bool', '/v2/repository/index', post('{"ready":1}')],
    ['index by GET', '/v2/repository/index', { method: 'GET' }],
    ['load in mode none', '/v2/repository/models/mnist/load', post('')],
    ['load, repository named', '/v2/repository/other/models/mnist/load', post('')],
    ['load, parameter not a string', '/v2/repository/models/mnist/load', post('{"parameters":{"config":1}}')],
    ['unload, unload_dependents not a bool', '/v2/repository/models/mnist/unload', post('{"parameters":{"unload_dependents":"yes"}}')],
    ['statistics of an unknown model', '/v2/models/nosuch/stats', { method: 'GET' }],
    ['statistics of an unknown version', '/v2/models/mnist/versions/9/stats', { method: 'GET' }],
    ['an input that is not an object', '/v2/models/mnist/infer', post('{"inputs":[[null,null]]}')],
    ['a body that is not an object', '/v2/models/mnist/infer', post('[null,null]')],
    ['a NUL byte', '/v2/models/mnist/infer', post(Buffer.from([0]))],
    ['blank', '/v2/models/mnist/infer', post('  ')],
    ['a NUL after the document', '/v2/models/mnist/infer', post(Buffer.from('{"inputs":[]}\0garbage'))],
    ['an id that is not a string', '/v2/models/mnist/infer', post('{"id":5,"inputs":[]}')],
    ['a parameter of object type', '/v2/models/mnist/infer', post('{"parameters":{"a":{"b":1}},"inputs":[]}')],
    ['parameters not an object', '/v2/models/mnist/infer', post('{"parameters":[1],"inputs":[]}')],
    ['a negative priority', '/v2/models/mnist/infer', post('{"parameters":{"priority":-1},"inputs":[]}')],
    ['a custom parameter', '/v2/models/mnist/infer', post('{"parameters":{"mine":"x"},"inputs":[]}')],
    ['duplicate input names', '/v2/models/mnist/infer', post(`{"inputs":[${json784('digit_image')},${json784('digit_image')}]}`)],
    ['an empty input name', '/v2/models/mnist/infer', post(`{"inputs":[${json784('')}]}`)],
    ['a percent-encoded model name', '/v2/models/m%6Eist', { method: 'GET' }],
    ['a percent-encoded unknown model', '/v2/models/no%20such/infer', post('{}')],
    ['a malformed percent escape', '/v2/models/no%zzsuch', { method: 'GET' }],
    ['infer, a JSON element that is not a number', '/v2/models/mnist/infer', post(`{"inputs":[${json784('digit_image').replace('[0,', '["a",')}]}`)],
    ['infer, more JSON elements than the shape', '/v2/models/mnist/infer', post(`{"inputs":[${json784('digit_image').replace('[0,', '[0,0,')}]}`)],
    // Log and trace settings: bodies and methods the clients do not send.
    ['logging, empty body', '/v2/logging', post('')],
    ['logging, a body that is not an object', '/v2/logging', post('[1]')],
    ['logging by PUT', '/v2/logging', { method: 'PUT' }],
    ['trace, empty body', '/v2/trace/setting', post('')],
    ['trace by PUT', '/v2/trace/setting', { method: 'PUT' }],
    ['trace of a model version', '/v2/models/mnist/versions/1/trace/setting', { method: 'GET' }],
    ['trace of an unknown model, by POST', '/v2/models/nosuch/trace/setting', post('{"trace_rate":"x"}')],
    ['trace, level not strings', '/v2/trace/setting', post('{"trace_level":[1]}')],
    // generate and generate_stream: Triton's mapping of JSON fields to inputs, and its refusals.
    ...(['generate', 'generate_stream'] as const).flatMap((kind): [string, string, RequestInit][] => [
      [`${kind}, a scalar for the image`, `/v2/models/mnist/${kind}`, post('{"digit_image":5}')],
      [`${kind}, a nested image`, `/v2/models/mnist/${kind}`, post(`{"digit_image":[[${zeros(784)}]]}`)],
      [`${kind}, too few elements`, `/v2/models/mnist/${kind}`, post('{"digit_image":[1,2,3]}')],
      [`${kind}, no input`, `/v2/models/mnist/${kind}`, post('{"prompt":"seven"}')],
      [`${kind}, an id that is not a string`, `/v2/models/mnist/${kind}`, post(`{"id":5,"digit_image":[${zeros(784)}]}`)],
      [`${kind}, parameters not an object`, `/v2/models/mnist/${kind}`, post(`{"digit_image":[${zeros(784)}],"parameters":5}`)],
      [`${kind}, a parameter of array type`, `/v2/models/mnist/${kind}`, post(`{"digit_image":[${zeros(784)}],"stop":["x"]}`)],
      [`${kind}, a null parameter`, `/v2/models/mnist/${kind}`, post(`{"digit_image":[${zeros(784)}],"stop":null}`)],
      [
        `${kind}, the input twice`,
        `/v2/models/mnist/${kind}`,
        post(`{"id":"d","digit_image":[${zeros(784)}],"parameters":{"digit_image":[${zeros(784)}]}}`),
      ],
      [`${kind}, a string element`, `/v2/models/mnist/${kind}`, post(`{"digit_image":["a",${zeros(783)}]}`)],
      [`${kind}, empty body`, `/v2/models/mnist/${kind}`, post('')],
      [`${kind}, a body that is not an object`, `/v2/models/mnist/${kind}`, post('[1]')],
      [`${kind}, gzip body`, `/v2/models/mnist/${kind}`, post('{}', { 'Content-Encoding': 'gzip' })],
      [`${kind}, unknown model`, `/v2/models/nosuch/${kind}`, post('{}')],
      [`${kind}, unknown version`, `/v2/models/mnist/versions/9/${kind}`, post('{}')],
      [`${kind} by GET`, `/v2/models/mnist/${kind}`, { method: 'GET' }],
    ]),
    ['a version past int64', '/v2/models/mnist/versions/99999999999999999999', { method: 'GET' }],
    ['a version past int64, ready', '/v2/models/mnist/versions/99999999999999999999/ready', { method: 'GET' }],
    ['a version past int64, stats', '/v2/models/mnist/versions/99999999999999999999/stats', { method: 'GET' }],
    ['a version past int64, infer', '/v2/models/mnist/versions/99999999999999999999/infer', post('{}')],
    ['version 2^63-1', '/v2/models/mnist/versions/9223372036854775807', { method: 'GET' }],
    ['version 2^63-1, stats', '/v2/models/mnist/versions/9223372036854775807/stats', { method: 'GET' }],
  ];
}

function zeros(n: number): string {
  return new Array<number>(n).fill(0).join(',');
}

/** Runs one of the client scripts against a server's gRPC and HTTP ports, on the MNIST model: its JSON answer. */
function clientCases(script: string, grpc: number, http: number): Record<string, { ok: boolean; message?: string; sum?: number }> {
  return JSON.parse(python([join(CLIENTS, script), `127.0.0.1:${grpc}`, `127.0.0.1:${http}`, 'mnist'])) as Record<
    string,
    { ok: boolean; message?: string; sum?: number }
  >;
}

/** Runs protocol_cases.py (streaming, shared memory, model control) against one server. */
function protocolCases(grpc: number, http: number, mode: 'none' | 'explicit'): Record<string, unknown> {
  return JSON.parse(python([join(CLIENTS, 'protocol_cases.py'), `127.0.0.1:${grpc}`, `127.0.0.1:${http}`, 'mnist', mode])) as Record<string, unknown>;
}

describe('popef serve answers as the real Triton server does', { skip: process.env.CI === 'true' ? false : noTriton }, () => {
  let ours: Serving;
  let theirs: RunningTriton;
  let repo: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    repo = await scaffoldMnist(temp.dir);
    const backends = join(temp.dir, 'backends');
    await buildStandInBackends(backends, ['poplar']);
    theirs = await startTriton(triton ?? '', repo, backends, 120_000, ['--allow-metrics=true']);
    ours = await serve(repo);
  });

  after(async () => {
    ours.child.kill('SIGKILL');
    await ours.exited;
    await theirs.stop();
    await cleanup();
  });

  it('the same status and message for every tritonclient request, good or bad; the same metadata and config fields', () => {
    const run = (grpc: number, http: number): Record<string, unknown> =>
      JSON.parse(python([join(CLIENTS, 'request_cases.py'), `127.0.0.1:${grpc}`, `127.0.0.1:${http}`, 'mnist'])) as Record<string, unknown>;
    const a = run(ours.grpc, ours.http);
    const b = run(theirs.grpcPort, theirs.httpPort);
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort());
    const differences: string[] = [];
    for (const key of Object.keys(b).sort()) {
      let mine = a[key];
      let real = b[key];
      // The stand-in backend answers a good request with no outputs: only success is compared there.
      if (typeof real === 'object' && real !== null && (real as { ok?: boolean }).ok === true) {
        mine = { ok: (mine as { ok?: boolean }).ok };
        real = { ok: true };
      }
      try {
        assert.deepEqual(mine, real);
      } catch {
        differences.push(`${key}:\n  popef serve: ${JSON.stringify(mine)}\n  Triton:      ${JSON.stringify(real)}`);
      }
    }
    assert.deepEqual(differences, []);
    // Our good answer carries the output itself.
    assert.deepEqual((a['grpc/ok'] as { outputs: unknown }).outputs, [['output_labels', 'FP32', [1, 10]]]);
  });

  it('the same answers on a gRPC stream, for system and CUDA shared memory and to model control in mode none, over gRPC and HTTP', () => {
    const [a, b] = [protocolCases(ours.grpc, ours.http, 'none'), protocolCases(theirs.grpcPort, theirs.httpPort, 'none')];
    // The stand-in backend writes no output: ours must have written the softmax into the region.
    for (const transport of ['grpc/shm', 'http/shm']) {
      const sums = [a, b].map((r) => (r[transport] as Record<string, unknown>)['output-region-sum']);
      assert.deepEqual(sums, [1, 0], transport);
      for (const r of [a, b]) delete (r[transport] as Record<string, unknown>)['output-region-sum'];
    }
    assert.deepEqual(a, b);
  });

  it("perf_analyzer's requests in each of its modes (its binary cannot run here) succeed on both", () => {
    const run = (grpc: number, http: number): Record<string, { ok: boolean; sum?: number }> => clientCases('perf_requests.py', grpc, http);
    const [mine, real] = [run(ours.grpc, ours.http), run(theirs.grpcPort, theirs.httpPort)];
    assert.deepEqual(Object.keys(mine).sort(), [
      'grpc-async',
      'grpc-shm-system',
      'grpc-streaming',
      'grpc-sync',
      'http-async',
      'http-shm-system',
      'http-sync',
    ]);
    // The stand-in backend writes no output into the region: ours holds the softmax.
    for (const mode of ['grpc-shm-system', 'http-shm-system']) assert.deepEqual([mine[mode]?.sum, real[mode]?.sum], [1, 0], mode);
    const outcome = (r: typeof mine): Record<string, unknown> => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, { ...v, sum: undefined }]));
    assert.deepEqual(outcome(mine), outcome(real));
    for (const [mode, answer] of Object.entries(mine)) assert.equal(answer.ok, true, `${mode}: ${JSON.stringify(answer)}`);
  });

  it("the same answers to gRPC request parameters, perf_analyzer's triton_enable_empty_final_response among them", () => {
    const run = (grpc: number): Record<string, string> =>
      JSON.parse(python([join(CLIENTS, 'grpc_raw_cases.py'), `127.0.0.1:${grpc}`, 'mnist'])) as Record<string, string>;
    const [mine, real] = [run(ours.grpc), run(theirs.grpcPort)];
    assert.equal(real['empty-final-response-true'], 'OK');
    assert.deepEqual(mine, real);
  });

  it('popef run --plugin triton speaks to the real server: requests accepted, its errors passed on', async () => {
    for (const url of [`grpc://127.0.0.1:${theirs.grpcPort}`, `http://127.0.0.1:${theirs.httpPort}`]) {
      const r = await runCli(['run', join(repo, 'mnist'), '--plugin', 'triton', '--url', url, '--random']);
      // The stand-in backend answers with no tensors: the request itself was taken, and the missing output is named.
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /answered: no output 'output_labels' in the answer/);
      const wrong = await runCli(['run', join(repo, 'mnist'), '--plugin', 'triton', '--url', url, '--random', '--plugin-option', 'version=9']);
      assert.equal(wrong.code, 2);
      assert.match(wrong.stderr, /Request for unknown model: 'mnist' version 9 is not found/);
    }
  });

  it("the same extensions as Triton, in Triton's order; its own name unless --as-triton", async () => {
    type Metadata = { name: string; version: string; extensions: string[] };
    const metadata = async (port: number): Promise<Metadata> => (await (await fetch(`http://127.0.0.1:${port}/v2`)).json()) as Metadata;
    const [mine, real] = [await metadata(ours.http), await metadata(theirs.httpPort)];
    // Every extension Triton lists, the sequence batcher's too.
    assert.deepEqual(mine.extensions, real.extensions);
    assert.equal(mine.name, 'popef-toolkit');
    assert.deepEqual([real.name, real.version], ['triton', '2.51.0']);
    const asTriton = await serve(repo, ['--as-triton']);
    try {
      assert.deepEqual(await metadata(asTriton.http), { ...mine, name: real.name, version: real.version });
    } finally {
      asTriton.child.kill('SIGTERM');
      await asTriton.exited;
    }
  });

  it('compresses what Triton compresses, as Accept-Encoding asks', async () => {
    const body = `{"inputs":[${json784('digit_image')}]}`;
    const cases: [string, RequestInit][] = [
      ['/v2/models/mnist/infer', { method: 'POST', body, headers: { 'Accept-Encoding': 'gzip' } }],
      ['/v2/models/mnist/infer', { method: 'POST', body, headers: { 'Accept-Encoding': 'gzip;q=0.4, deflate;q=0.6' } }],
      ['/v2/models/mnist/infer', { method: 'POST', body, headers: { 'Accept-Encoding': 'br' } }],
      ['/v2/models/mnist', { method: 'GET', headers: { 'Accept-Encoding': 'gzip' } }],
      ['/v2/models/stats', { method: 'GET', headers: { 'Accept-Encoding': 'gzip' } }],
      ['/v2/models/nosuch/infer', { method: 'POST', body, headers: { 'Accept-Encoding': 'gzip' } }],
    ];
    const encodings = async (port: number): Promise<string[]> => {
      const out: string[] = [];
      for (const [path, init] of cases) {
        // node:http's client, which does not undo the encoding (fetch would).
        out.push(
          await new Promise<string>((resolve, reject) => {
            const req = httpRequest(
              { host: '127.0.0.1', port, path, method: init.method, headers: init.headers as Record<string, string> },
              (res) => {
                res.resume();
                resolve(`${path} ${res.statusCode ?? 0} ${res.headers['content-encoding'] ?? 'identity'}`);
              },
            );
            req.on('error', reject);
            req.end(init.body as string | undefined);
          }),
        );
      }
      return out;
    };
    const [mine, real] = [await encodings(ours.http), await encodings(theirs.httpPort)];
    assert.deepEqual(mine, real);
    assert.match(real[0] ?? '', / 200 gzip$/);
  });

  it('the same status and message for malformed HTTP requests', async () => {
    const differences: string[] = [];
    for (const [name, path, init] of rawCases()) {
      const answer = async (port: number): Promise<[number, string]> => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, init);
        const text = await res.text();
        let message = text;
        try {
          message = (JSON.parse(text) as { error?: string }).error ?? text;
        } catch {
          // not JSON: compared as text
        }
        return [res.status, message];
      };
      const [mine, real] = [await answer(ours.http), await answer(theirs.httpPort)];
      if (mine[0] !== real[0] || mine[1] !== real[1])
        differences.push(`${name}: popef serve ${JSON.stringify(mine)}, Triton ${JSON.stringify(real)}`);
    }
    assert.deepEqual(differences, []);
  });
  it('the same log and trace settings, updates and refusals, global and per model, over HTTP and gRPC', () => {
    const run = (grpc: number, http: number): Record<string, { ok: boolean; message?: string }> => clientCases('settings_cases.py', grpc, http);
    const [mine, real] = [run(ours.grpc, ours.http), run(theirs.grpcPort, theirs.httpPort)];
    assert.deepEqual(mine, real);
    // The cases do reach both sides of each check.
    assert.equal(real['http/log/verbose-and-format']?.ok, true);
    assert.equal(real['http/trace/level-without-file']?.message, 'Attempting to set invalid trace setting :trace file name is not given');
    assert.equal(real['grpc/log/info-as-uint']?.message, "expect boolean for 'log_info'");
  });

  it('generate and generate_stream answer a good request as Triton does: one JSON object, or one SSE event', async () => {
    const body = `{"id":"g1","digit_image":[${zeros(784)}],"parameters":{"max_tokens":1,"temperature":0.5,"stream":false}}`;
    // A connection of its own for each request (node:http, no agent): a kept-alive one that the server has closed would fail the request.
    const answer = (port: number, kind: string): Promise<{ status: number; type: string; text: string }> =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: `/v2/models/mnist/versions/1/${kind}`, method: 'POST', agent: false }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'] ?? '', text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    for (const kind of ['generate', 'generate_stream']) {
      const [mine, real] = [await answer(ours.http, kind), await answer(theirs.httpPort, kind)];
      // The stand-in backend answers with no outputs: ours carries the softmax, the rest is the same.
      const event = kind === 'generate_stream' ? /^data: (\{.*\})\n\n$/s : /^(\{.*\})$/s;
      const [mineJson, realJson] = [mine, real].map((a) => JSON.parse(event.exec(a.text)?.[1] ?? 'null') as Record<string, unknown>);
      const labels = mineJson?.output_labels as number[];
      assert.equal(labels.length, 10);
      assert.ok(Math.abs(labels.reduce((a, b) => a + b, 0) - 1) < 1e-5, String(labels));
      assert.deepEqual(Object.keys(mineJson ?? {}), ['id', 'model_name', 'model_version', 'output_labels']);
      delete mineJson?.output_labels;
      assert.deepEqual({ ...mine, text: mineJson }, { ...real, text: realJson });
      assert.deepEqual(realJson, { id: 'g1', model_name: 'mnist', model_version: '1' });
    }
  });

  it('reads a chunked body that also carries Content-Length as Triton does (raw sockets)', async () => {
    const json = `{"inputs":[${json784('digit_image')}]}`;
    const chunked = (text: string): string => {
      let out = '';
      for (let i = 0; i < text.length; i += 1000) out += `${Math.min(1000, text.length - i).toString(16)}\r\n${text.slice(i, i + 1000)}\r\n`;
      return `${out}0\r\n\r\n`;
    };
    const head = (path: string, headers: string): string =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n${headers}\r\n`;
    const cases: [string, string][] = [
      ['Content-Length of the decoded body', head('/v2/models/mnist/infer', `Content-Length: ${json.length}\r\n`) + chunked(json)],
      [
        'Content-Length first',
        head('/v2/models/mnist/infer', '').replace('Transfer-Encoding', `Content-Length: ${json.length}\r\nTransfer-Encoding`) + chunked(json),
      ],
      ['Content-Length of the encoded body', head('/v2/models/mnist/infer', `Content-Length: ${chunked(json).length}\r\n`) + chunked(json)],
      ['Content-Length short of the body', head('/v2/models/mnist/infer', `Content-Length: ${json.length}\r\n`) + chunked(`${json}trailing`)],
      ['Content-Length 0: a raw binary request', head('/v2/models/mnist/infer', 'Content-Length: 0\r\n') + chunked('\0'.repeat(3136))],
      [
        'a header length past Content-Length',
        head('/v2/models/mnist/infer', `Content-Length: 10\r\nInference-Header-Content-Length: ${json.length}\r\n`) + chunked(json),
      ],
      ['a control endpoint', head('/v2/logging', 'Content-Length: 1\r\n') + chunked('{}')],
      ['generate', head('/v2/models/mnist/generate', 'Content-Length: 3\r\n') + chunked(`{"digit_image":[${zeros(784)}]}`)],
    ];
    const ask = (port: number, request: string): Promise<string> =>
      new Promise((resolve, reject) => {
        let got = '';
        const socket = connect(port, '127.0.0.1', () => socket.end(request));
        socket.setEncoding('latin1');
        socket.on('data', (d: string) => (got += d));
        socket.on('error', reject);
        socket.on('close', () => resolve(got));
      });
    const outcome = async (port: number, request: string): Promise<[number, string]> => {
      const response = await ask(port, request);
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(response)?.[1] ?? 0);
      // Only errors are compared by body (the stand-in backend's answers have no outputs); a chunked answer is one chunk here.
      const error = /"error":"((?:[^"\\]|\\.)*)"/.exec(response)?.[1] ?? '';
      return [status, error];
    };
    const differences: string[] = [];
    for (const [name, request] of cases) {
      const [mine, real] = [await outcome(ours.http, request), await outcome(theirs.httpPort, request)];
      if (JSON.stringify(mine) !== JSON.stringify(real))
        differences.push(`${name}: popef serve ${JSON.stringify(mine)}, Triton ${JSON.stringify(real)}`);
    }
    assert.deepEqual(differences, []);
    assert.deepEqual(await outcome(theirs.httpPort, cases[0]?.[1] ?? ''), [200, '']);
  });

  it('the same metrics families, help texts, types and series on the metrics port; counts that move alike', async () => {
    const scrape = async (port: number): Promise<{ meta: string[]; series: string[]; counts: Map<string, number> }> => {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      const lines = (await res.text()).split('\n').filter((l) => l !== '');
      const samples = lines.filter((l) => !l.startsWith('#')).map((l) => /^(.*) (\S+)$/.exec(l) ?? [l, l, '']);
      return {
        meta: lines.filter((l) => l.startsWith('#')),
        series: samples.map(([, series]) => series ?? ''),
        counts: new Map(
          samples
            .filter(([, series]) => /^nv_inference_(request_success|request_failure|count|exec_count|pending_request_count)[{ ]/.test(series ?? ''))
            .map(([, series, value]) => [series ?? '', Number(value)]),
        ),
      };
    };
    // The counts move alike for the same requests (earlier tests sent some requests to Triton alone).
    const moved = async (port: number, httpPort: number): Promise<[string, number][]> => {
      const before = await scrape(port);
      const body = `{"inputs":[${json784('digit_image')}]}`;
      for (const path of ['/v2/models/mnist/infer', '/v2/models/mnist/infer', '/v2/models/mnist/versions/1/infer', '/v2/models/mnist/infer']) {
        await (
          await fetch(`http://127.0.0.1:${httpPort}${path}`, { method: 'POST', body: path.includes('versions') ? '{"inputs":[]}' : body })
        ).text();
      }
      const delta = (after: Awaited<ReturnType<typeof scrape>>): [string, number][] =>
        [...after.counts].map(([series, value]) => [series, value - (before.counts.get(series) ?? 0)]);
      // Triton records a request's statistics after it has sent the response, so a scrape at once can miss the last
      // one (seen once on this machine: 2 successes of 3); the counts are read again until the three successes show, for at most a second.
      let after = await scrape(port);
      for (let i = 0; i < 20 && (delta(after).find(([series]) => series.startsWith('nv_inference_request_success'))?.[1] ?? 0) < 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        after = await scrape(port);
      }
      return delta(after);
    };
    const [mine, real] = [await scrape(ours.metrics ?? 0), await scrape(theirs.metricsPort)];
    assert.deepEqual(mine.meta, real.meta);
    assert.deepEqual(mine.series, real.series);
    assert.ok(real.meta.length >= 30, real.meta.join('\n'));
    const [mineMoved, realMoved] = [await moved(ours.metrics ?? 0, ours.http), await moved(theirs.metricsPort, theirs.httpPort)];
    assert.deepEqual(mineMoved, realMoved);
    assert.deepEqual(
      realMoved.find(([series]) => series.startsWith('nv_inference_request_success')),
      ['nv_inference_request_success{model="mnist",version="1"}', 3],
    );
  });
});

describe(
  'model control answers as the real Triton server does (--model-control-mode explicit)',
  { skip: process.env.CI === 'true' ? false : noTriton },
  () => {
    let ours: Serving;
    let theirs: RunningTriton;
    let repo: string;
    let cleanup: () => Promise<void>;

    before(async () => {
      const temp = await tempDir();
      cleanup = temp.cleanup;
      repo = await scaffoldMnist(temp.dir);
      // Two models that fail: one while Triton polls (its config does not parse), one when it loads (no GPU).
      const config = await readFile(join(repo, 'mnist', 'config.pbtxt'), 'utf8');
      for (const [name, text] of [
        ['broken', config.replace('TYPE_FP32', 'TYPE_NOPE')],
        ['gpu', config.replace('KIND_CPU', 'KIND_GPU')],
      ] as const) {
        await cp(join(repo, 'mnist'), join(repo, name), { recursive: true });
        await writeFile(join(repo, name, 'config.pbtxt'), text.replace('name: "mnist"', `name: "${name}"`));
      }
      const backends = join(temp.dir, 'backends');
      await buildStandInBackends(backends, ['poplar']);
      theirs = await startTriton(triton ?? '', repo, backends, 120_000, ['--model-control-mode=explicit']);
      ours = await serve(repo, ['--model-control-mode', 'explicit']);
    });

    after(async () => {
      ours.child.kill('SIGKILL');
      await ours.exited;
      await theirs.stop();
      await cleanup();
    });

    it('loads, reloads and unloads with the same answers, and the same repository index at each step', () => {
      assert.deepEqual(protocolCases(ours.grpc, ours.http, 'explicit'), protocolCases(theirs.grpcPort, theirs.httpPort, 'explicit'));
    });

    it('refuses a model whose config does not parse as not polled, and one that fails to load with its reason', () => {
      const script = [
        'import json, sys, tritonclient.grpc as g',
        'c = g.InferenceServerClient(sys.argv[1])',
        'out = []',
        'for m in ["broken", "gpu"]:',
        '    try:',
        '        c.load_model(m); out.append("ok")',
        '    except Exception as e:',
        '        out.append([str(e.status()), e.message()])',
        'out.append(c.get_model_repository_index(as_json=True))',
        'print(json.dumps(out))',
      ].join('\n');
      const run = (port: number): unknown => JSON.parse(python(['-c', script, `127.0.0.1:${port}`]));
      const [mine, real] = [run(ours.grpc), run(theirs.grpcPort)] as [unknown[], unknown[]];
      // Which version a failed model is listed with waits for the shared model-directory reader.
      const withoutFailedVersion = (r: unknown[]): unknown[] =>
        r.map((x) =>
          typeof x === 'object' && x !== null && 'models' in x
            ? (x as { models: { name: string; version?: string }[] }).models.map((m) => (m.name === 'gpu' ? { ...m, version: undefined } : m))
            : x,
        );
      assert.deepEqual(withoutFailedVersion(mine), withoutFailedVersion(real));
    });
  },
);
