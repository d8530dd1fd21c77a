// JSON numbers in infer bodies, popef serve beside the real Triton server
// (the tritonserver that nvidia-pytriton bundles): RapidJSON's NaN and
// Infinity tokens both ways, its refusal of literals too large for a double
// (message and offset), and the doubles it reads. The MNIST repository is
// served by both (Triton with the stand-in poplar backend: request checks and
// body parsing happen before any backend runs); Triton also serves an FP64
// identity model in its Python backend, which sends back the doubles it read
// as Triton writes them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseTritonJson, jsonNumber, writeDouble } from '../../src/serve/triton-json.js';
import { findTritonServer, type RunningTriton } from '../triton/oracle/tritonserver.js';
import { ROOT } from '../helpers.js';
import { PYTHON_IDENTITY_MODEL, postText as post, serveBesideTriton, type BesideTriton, type Serving } from './serving.js';

const PYTHON = join(ROOT, '.venv', 'bin', 'python');
const triton = findTritonServer();
const skip =
  process.env.CI === 'true'
    ? false
    : triton === undefined || !existsSync(PYTHON)
      ? 'tritonserver is not installed (.ci/run installs it into .venv)'
      : undefined;

/** An MNIST infer body whose first data element is `token` (the other 783 are 0). */
function mnistBody(token: string): string {
  return `{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1,1,28,28],"data":[${token}${',0'.repeat(783)}]}]}`;
}

/** The text of each element of the first output's `data` array in an answer, as written. */
function dataTokens(answer: string): string[] {
  const m = /"data":\[([^\]]*)\]/.exec(answer);
  assert.ok(m !== null, answer);
  return (m[1] ?? '').split(',');
}

/** A token as a correctly rounded double (RapidJSON's writer output reads back to the double it wrote). */
function tokenValue(token: string): number {
  return token === 'NaN' ? NaN : token === 'Infinity' ? Infinity : token === '-Infinity' ? -Infinity : Number(token);
}

function bits(v: number): string {
  return Buffer.from(new Float64Array([v]).buffer).toString('hex');
}

describe('JSON numbers, popef serve beside the real Triton server', { skip }, () => {
  let ours: Serving;
  let theirs: RunningTriton;
  let both: BesideTriton | undefined;

  before(async () => {
    both = await serveBesideTriton(triton, {
      timeoutMs: 180_000,
      pythonBackend: true,
      together: true,
      prepare: async (dir, repo) => {
        const tritonRepo = join(dir, 'triton-models');
        await cp(repo, tritonRepo, { recursive: true });
        await mkdir(join(tritonRepo, 'identity', '1'), { recursive: true });
        await writeFile(join(tritonRepo, 'identity', '1', 'model.py'), PYTHON_IDENTITY_MODEL);
        await writeFile(
          join(tritonRepo, 'identity', 'config.pbtxt'),
          'name: "identity"\nbackend: "python"\nmax_batch_size: 0\ninput [{ name: "x" data_type: TYPE_FP64 dims: [-1] }]\noutput [{ name: "y" data_type: TYPE_FP64 dims: [-1] }]\ninstance_group [{ kind: KIND_CPU count: 1 }]\n',
        );
        return tritonRepo;
      },
    });
    ({ ours, theirs } = both);
    assert.equal((await theirs.ask('/v2/models/identity/ready')).status, 200, theirs.log());
  });

  after(() => both?.stop());

  it("refuses 1e400 and other literals as Triton's parser does: the same status, message and offset", async () => {
    const bodies = [
      ...['1e400', '-1e400', '1e309', '9'.repeat(320), '0.5e310', 'Infin', 'nan', 'NaX', '-x', '1.', '1e', '1e+', '1.e5', '01'].map(mnistBody),
      // Whole doubles where Triton wants an integer, and an integer past 64 bits.
      '{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[1.0,1,28,28],"data":[0]}]}',
      '{"inputs":[{"name":"digit_image","datatype":"FP32","shape":[18446744073709551616,1,28,28],"data":[0]}]}',
      '{"inputs":[],"parameters":{"priority":1e0}}',
      '{"inputs":[],"parameters":{"mine":1.5}}',
      // Structure and strings: RapidJSON's messages and offsets.
      '{"a" 1}',
      '{"a":1,}',
      '[1,]',
      '[1}',
      '{"a":tru}',
      '"abc',
      '{"a":"\\q"}',
      '{"a":"\\u12"}',
      '{"a":"\\ud800x"}',
      '[1] 2',
      '{"inputs":[]}\u0000[',
    ];
    const differences: string[] = [];
    for (const body of bodies) {
      const [mine, real] = [await post(ours.http, '/v2/models/mnist/infer', body), await post(theirs.httpPort, '/v2/models/mnist/infer', body)];
      if (mine[0] !== real[0] || mine[1] !== real[1])
        differences.push(`${body.slice(0, 90)}:\n  popef serve ${JSON.stringify(mine)}\n  Triton      ${JSON.stringify(real)}`);
    }
    assert.deepEqual(differences, []);
    const [, text] = await post(ours.http, '/v2/models/mnist/infer', mnistBody('1e400'));
    assert.equal(text, '{"error":"failed to parse the request JSON buffer: Number too big to be stored in double. at 79"}');
  });

  it('accepts NaN, Infinity and -Infinity (and Inf, -Inf, -NaN) in JSON inputs as Triton does', async () => {
    for (const token of ['NaN', 'Infinity', '-Infinity', 'Inf', '-Inf', '-NaN', '2e308', '0.5e309']) {
      const [mine, real] = [
        await post(ours.http, '/v2/models/mnist/infer', mnistBody(token)),
        await post(theirs.httpPort, '/v2/models/mnist/infer', mnistBody(token)),
      ];
      assert.equal(real[0], 200, `Triton: ${token}: ${real[1]}`);
      assert.equal(mine[0], 200, `popef serve: ${token}: ${mine[1]}`);
    }
    // A NaN in the image makes MNIST's softmax NaN: written as RapidJSON writes it.
    const [, answer] = await post(ours.http, '/v2/models/mnist/infer', mnistBody('NaN'));
    assert.deepEqual(dataTokens(answer), new Array(10).fill('NaN'));
  });

  it('reads each literal to the double Triton reads (its identity model sends them back)', async () => {
    const literals = [
      '0',
      '-0',
      '1',
      '-1',
      '0.1',
      '0.30000000000000004',
      '1.7976931348623157e308',
      '2e308',
      '-2e308',
      '5e-324',
      '2.2250738585072014e-308',
      '1e-400',
      '123456789012345678901234567890',
      '18446744073709551615',
      '18446744073709551616',
      '9007199254740993',
      '0.1e1',
      '1E2',
      '1e+2',
      'NaN',
      'Infinity',
      '-Inf',
      '-NaN',
      'Infinity.5',
      'NaNe2',
      '3.141592653589793238462643383279',
      '1.00000000000000011102230246251565404236316680908203125',
    ];
    // And random ones: up to 25 digits, a point anywhere, exponents across the double range (up to e300, which RapidJSON never refuses).
    let seed = 24;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 400; i++) {
      const digits = Array.from({ length: 1 + Math.floor(random() * 25) }, () => Math.floor(random() * 10)).join('');
      const point = Math.floor(random() * (digits.length + 1));
      const mantissa = `${digits.slice(0, point) || '0'}${point < digits.length ? `.${digits.slice(point)}` : ''}`.replace(/^0+(?=\d)/, '');
      const exponent = random() < 0.5 ? '' : `e${Math.floor(random() * 630) - 330}`;
      literals.push(`${random() < 0.3 ? '-' : ''}${mantissa}${exponent}`);
    }
    const body = `{"inputs":[{"name":"x","datatype":"FP64","shape":[${literals.length}],"data":[${literals.join(',')}]}]}`;
    const [status, answer] = await post(theirs.httpPort, '/v2/models/identity/infer', body);
    assert.equal(status, 200, answer);
    const theirsRead = dataTokens(answer).map(tokenValue);
    const oursRead = (parseTritonJson(Buffer.from(`[${literals.join(',')}]`)) as unknown[]).map((v) => jsonNumber(v) ?? NaN);
    const differences = literals.flatMap((literal, i) =>
      bits(oursRead[i] ?? NaN) === bits(theirsRead[i] ?? NaN) ? [] : [`${literal}: ours ${oursRead[i]}, Triton ${theirsRead[i]}`],
    );
    assert.deepEqual(differences, []);
  });

  it('writes NaN, Infinity, -Infinity and doubles in the notation Triton writes', async () => {
    const values = [
      'NaN',
      'Infinity',
      '-Infinity',
      '1.0',
      '0.0',
      '-0.0',
      '0.1',
      '1e21',
      '1e-7',
      '1.5e-7',
      '1e20',
      '0.000001',
      '123.5',
      '-2.5e300',
      '5e-324',
    ];
    const body = `{"inputs":[{"name":"x","datatype":"FP64","shape":[${values.length}],"data":[${values.join(',')}]}]}`;
    const [status, answer] = await post(theirs.httpPort, '/v2/models/identity/infer', body);
    assert.equal(status, 200, answer);
    const written = dataTokens(answer);
    assert.deepEqual(
      values.map((v) => writeDouble(tokenValue(v))),
      written,
    );
  });

  it('tritonclient reads the NaN of a JSON answer from popef serve as nan', () => {
    const script = [
      'import sys, numpy as np, tritonclient.http as h',
      'c = h.InferenceServerClient(sys.argv[1])',
      'x = h.InferInput("digit_image", [1, 1, 28, 28], "FP32"); x.set_data_from_numpy(np.full((1, 1, 28, 28), np.nan, np.float32), binary_data=False)',
      'r = c.infer("mnist", [x], outputs=[h.InferRequestedOutput("output_labels", binary_data=False)])',
      'print(np.isnan(r.as_numpy("output_labels")).all())',
    ].join('\n');
    const r = spawnSync(PYTHON, ['-c', script, `127.0.0.1:${ours.http}`], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'True');
  });
});
