// 64-bit integers in JSON infer bodies, popef serve beside the real Triton
// server (the tritonserver that nvidia-pytriton bundles). RapidJSON keeps an
// integer token exact as an Int64 or Uint64; a JS number would round it past
// 2^53. Sequence ids 2^53 + 1 and 2^64 - 1 must name their own sequences (a
// request with the neighbouring id, which rounds to the same double, is
// another sequence), and integer tensor data must reach the model as
// Triton's casts store it and come back as Triton writes it. Triton serves
// identity models of each integer type in its Python backend; popef serve
// serves PopEF identity models of the same names on the cpu plugin (an ONNX
// Identity), so the whole round trip is compared, body for body.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Proto, node, onnxModel, valueInfo } from '../../fixtures/mnist-model.js';
import { PopefWriter } from '../../src/format/writer.js';
import { emptyMetadata, type DataType } from '../../src/schema/model.js';
import { findTritonServer, type RunningTriton } from '../triton/oracle/tritonserver.js';
import { ROOT } from '../helpers.js';
import { PYTHON_IDENTITY_MODEL, addMnistVariants, postText as post, serveBesideTriton, type BesideTriton, type Serving } from './serving.js';

const PYTHON = join(ROOT, '.venv', 'bin', 'python');
const triton = findTritonServer();
const hasCc = spawnSync('cc', ['--version']).status === 0;
const skip =
  process.env.CI === 'true'
    ? false
    : triton === undefined || !existsSync(PYTHON)
      ? 'tritonserver is not installed (.ci/run installs it into .venv)'
      : !hasCc
        ? 'no C compiler for the stand-in backend'
        : undefined;

/** The identity models: Triton datatype, PopEF dtype, ONNX TensorProto.DataType. */
const IDENTITIES: readonly [string, DataType, number][] = [
  ['INT8', 'S8', 3],
  ['UINT8', 'U8', 2],
  ['INT32', 'S32', 6],
  ['UINT32', 'U32', 12],
  ['INT64', 'S64', 7],
  ['UINT64', 'U64', 13],
];
const ELEMENTS = 4;

function identityConfig(name: string, datatype: string, backend: string): string {
  return `name: "${name}"\nbackend: "${backend}"\nmax_batch_size: 0\ninput [{ name: "x" data_type: TYPE_${datatype} dims: [${ELEMENTS}] }]\noutput [{ name: "y" data_type: TYPE_${datatype} dims: [${ELEMENTS}] }]\ninstance_group [{ kind: KIND_CPU count: 1 }]\n`;
}

/** A PopEF identity model for popef serve's cpu plugin: its ONNX graph is one Identity node. */
async function writePopefIdentity(repo: string, name: string, dtype: DataType, onnxType: number, datatype: string): Promise<void> {
  const dir = join(repo, name, '1');
  await mkdir(dir, { recursive: true });
  const graph = new Proto()
    .message(1, node('Identity', ['x'], ['y'], 'identity'))
    .bytes(2, name)
    .message(11, valueInfo('x', [ELEMENTS], onnxType))
    .message(12, valueInfo('y', [ELEMENTS], onnxType));
  const w = await PopefWriter.create(join(dir, 'executable.popef'));
  await w.writeExecutable(name, new TextEncoder().encode(`test/serve/json-int64 stand-in for ${name}: not a Poplar executable\n`));
  const tensorInfo = { dtype, shape: [ELEMENTS] };
  await w.writeMetadata({
    ...emptyMetadata(name),
    anchors: [
      { name: 'x', handle: 'h2d_x', tensorInfo, isPerReplica: false, type: 'INPUT', programs: [5] },
      { name: 'y', handle: 'd2h_y', tensorInfo, isPerReplica: false, type: 'OUTPUT', programs: [5] },
    ],
    programFlow: { load: [], main: [5], save: [] },
  });
  await w.writeOpaque({ name: 'onnx', executable: name }, onnxModel(graph));
  await w.close();
  await writeFile(join(dir, 'name_map.json'), `${JSON.stringify({ x: 'x', y: 'y' }, null, 2)}\n`);
  await writeFile(join(repo, name, 'config.pbtxt'), identityConfig(name, datatype, 'poplar'));
}

/** An infer body whose `x` holds these tokens, as written (JSON.stringify cannot write a 64-bit integer). */
function identityBody(datatype: string, tokens: readonly string[]): string {
  return `{"inputs":[{"name":"x","datatype":"${datatype}","shape":[${tokens.length}],"data":[${tokens.join(',')}]}]}`;
}

/** A sequence request's body on the MNIST-shaped model; the parameters as JSON text. */
function sequenceBody(parameters: string): string {
  return JSON.stringify({
    inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], data: new Array<number>(784).fill(0.5) }],
  }).replace(/^\{/, `{"parameters":${parameters},`);
}

describe('64-bit integers in JSON, popef serve beside the real Triton server', { skip }, () => {
  let ours: Serving;
  let theirs: RunningTriton;
  let both: BesideTriton | undefined;

  before(async () => {
    both = await serveBesideTriton(triton, {
      timeoutMs: 180_000,
      pythonBackend: true,
      together: true,
      prepare: async (dir, repo) => {
        await addMnistVariants(repo, { seq: { maxBatchSize: 1, batching: 'sequence_batching { max_sequence_idle_microseconds: 5000000 }' } });
        // Triton's repository: the same MNIST models (stand-in poplar backend), the identities in its Python backend.
        const tritonRepo = join(dir, 'triton-models');
        await cp(repo, tritonRepo, { recursive: true });
        for (const [datatype, dtype, onnxType] of IDENTITIES) {
          const name = `id_${datatype.toLowerCase()}`;
          await writePopefIdentity(repo, name, dtype, onnxType, datatype);
          await mkdir(join(tritonRepo, name, '1'), { recursive: true });
          await writeFile(join(tritonRepo, name, '1', 'model.py'), PYTHON_IDENTITY_MODEL);
          await writeFile(join(tritonRepo, name, 'config.pbtxt'), identityConfig(name, datatype, 'python'));
        }
        return tritonRepo;
      },
    });
    ({ ours, theirs } = both);
    assert.equal((await theirs.ask('/v2/models/id_uint64/ready')).status, 200, theirs.log());
  });

  after(() => both?.stop());

  /** Each body sent to both servers; the pairs that differ (status or body text), for one assertion that shows them all. */
  const differences = async (path: string, bodies: readonly string[]): Promise<string[]> => {
    const out: string[] = [];
    for (const body of bodies) {
      const [mine, real] = [await post(ours.http, path, body), await post(theirs.httpPort, path, body)];
      if (mine[0] !== real[0] || mine[1] !== real[1])
        out.push(`${body.slice(0, 160)}:\n  popef serve ${JSON.stringify(mine)}\n  Triton      ${JSON.stringify(real)}`);
    }
    return out;
  };

  it('sends INT64 and UINT64 data back exactly, past 2^53 and at the 64-bit limits', async () => {
    const int64 = ['9007199254740993', '-9223372036854775808', '9223372036854775807', '-9007199254740993'];
    const uint64 = ['18446744073709551615', '9007199254740993', '9223372036854775808', '0'];
    assert.deepEqual(await differences('/v2/models/id_int64/infer', [identityBody('INT64', int64)]), []);
    assert.deepEqual(await differences('/v2/models/id_uint64/infer', [identityBody('UINT64', uint64)]), []);
    // Anchors: the values are the ones sent, digit for digit.
    const [, answer] = await post(ours.http, '/v2/models/id_uint64/infer', identityBody('UINT64', uint64));
    assert.match(answer, /"data":\[18446744073709551615,9007199254740993,9223372036854775808,0\]/);
    const [, signed] = await post(ours.http, '/v2/models/id_int64/infer', identityBody('INT64', int64));
    assert.match(signed, /"data":\[9007199254740993,-9223372036854775808,9223372036854775807,-9007199254740993\]/);
  });

  it('refuses what AsInt and AsUInt refuse: past 2^63 - 1 as signed, negative as unsigned, past 2^64 - 1 (a double) as either', async () => {
    const bodies = [
      identityBody('INT64', ['9223372036854775808', '0', '0', '0']),
      identityBody('INT64', ['-9223372036854775809', '0', '0', '0']),
      identityBody('UINT64', ['-1', '0', '0', '0']),
      identityBody('UINT64', ['18446744073709551616', '0', '0', '0']),
      identityBody('UINT64', ['1.0', '0', '0', '0']),
      identityBody('INT8', ['18446744073709551615', '0', '0', '0']),
      identityBody('UINT32', ['-9223372036854775808', '0', '0', '0']),
    ];
    // Each body goes to the model of its datatype; some models get none, so that every body was sent is counted.
    let sent = 0;
    for (const [datatype] of IDENTITIES) {
      const path = `/v2/models/id_${datatype.toLowerCase()}/infer`;
      const own = bodies.filter((b) => b.includes(`"${datatype}"`));
      sent += own.length;
      assert.deepEqual(await differences(path, own), []);
    }
    assert.equal(sent, bodies.length, 'every body was sent to both servers');
    const [status, text] = await post(ours.http, '/v2/models/id_int64/infer', bodies[0] ?? '');
    assert.deepEqual([status, text], [500, `{"error":"Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"}`]);
  });

  it('stores an integer outside a narrower type as Triton does (a C cast), and sends it back', async () => {
    const cases: [string, string[]][] = [
      ['INT8', ['300', '-129', '9223372036854775807', '-9223372036854775808']],
      ['UINT8', ['300', '18446744073709551615', '256', '9007199254740993']],
      ['INT32', ['2147483648', '-2147483649', '9007199254740993', '-9223372036854775807']],
      ['UINT32', ['4294967301', '18446744073709551615', '9007199254740993', '4294967295']],
    ];
    for (const [datatype, tokens] of cases) {
      assert.deepEqual(await differences(`/v2/models/id_${datatype.toLowerCase()}/infer`, [identityBody(datatype, tokens)]), []);
    }
    // Anchor: INT8 keeps the low byte (300 -> 44, -129 -> 127, 2^63 - 1 -> -1, -2^63 -> 0); no element is refused.
    const [, answer] = await post(ours.http, '/v2/models/id_int8/infer', identityBody('INT8', cases[0]?.[1] ?? []));
    assert.match(answer, /"data":\[44,127,-1,0\]/);
  });

  it('keeps sequence ids 2^53 + 1 and 2^64 - 1 apart from their neighbours, as Triton does', async () => {
    const big = '9007199254740993';
    const top = '18446744073709551615';
    // Each started, then continued with the neighbouring id (the same double): another sequence, never started.
    const steps = [
      `{"sequence_id":${big},"sequence_start":true}`,
      '{"sequence_id":9007199254740992}',
      `{"sequence_id":${big}}`,
      '{"sequence_id":9007199254740994,"sequence_end":true}',
      `{"sequence_id":${big},"sequence_end":true}`,
      `{"sequence_id":${top},"sequence_start":true}`,
      '{"sequence_id":18446744073709551614}',
      `{"sequence_id":${top},"sequence_end":true}`,
      // Past 2^64 - 1 RapidJSON has a double, neither a Uint64 nor a string; a negative id is an Int64 only.
      '{"sequence_id":18446744073709551616,"sequence_start":true}',
      '{"sequence_id":-9223372036854775808,"sequence_start":true}',
      '{"sequence_id":9.0,"sequence_start":true}',
    ];
    const answers = async (port: number): Promise<[number, string][]> => {
      const out: [number, string][] = [];
      for (const parameters of steps) {
        const [status, text] = await post(port, '/v2/models/seq/infer', sequenceBody(parameters));
        out.push([status, (JSON.parse(text) as { error?: string }).error ?? 'ok']);
      }
      return out;
    };
    const real = await answers(theirs.httpPort);
    const mine = await answers(ours.http);
    assert.deepEqual(mine, real);
    // Anchors: with rounding, 2^53 would have continued 2^53 + 1's sequence.
    assert.deepEqual(mine[0], [200, 'ok']);
    assert.deepEqual(mine[1], [
      400,
      "inference request for sequence 9007199254740992 to model 'seq' must specify the START flag on the first request of the sequence",
    ]);
    assert.deepEqual(mine[2], [200, 'ok']);
    assert.deepEqual(mine[6], [
      400,
      "inference request for sequence 18446744073709551614 to model 'seq' must specify the START flag on the first request of the sequence",
    ]);
    assert.deepEqual(mine[7], [200, 'ok']);
  });

  it("a backlogged sequence request with a timeout near 2^64 - 1 µs: as Triton's backlog expires it", async () => {
    const play = async (port: number, timeout: string): Promise<[number, string][]> => {
      const first = await post(port, '/v2/models/seq/infer', sequenceBody('{"sequence_id":61,"sequence_start":true}'));
      // The one slot is held by 61: 62 waits in the backlog until it ends.
      const waiting = post(
        port,
        '/v2/models/seq/infer',
        sequenceBody(`{"sequence_id":62,"sequence_start":true,"sequence_end":true,"timeout":${timeout}}`),
      );
      await new Promise((r) => setTimeout(r, 300));
      const end = await post(port, '/v2/models/seq/infer', sequenceBody('{"sequence_id":61,"sequence_end":true}'));
      return [first, await waiting, end].map(([status, text]) => [status, (JSON.parse(text) as { error?: string }).error ?? 'ok']);
    };
    // 2^64 - 1 wraps past Triton's uint64 sum and expires at once; 2^63 and 2^53 + 1 do not (the clock is far below 2^63 µs).
    const mine: [number, string][][] = [];
    for (const timeout of ['18446744073709551615', '9223372036854775808', '9007199254740993']) {
      const answers = await play(ours.http, timeout);
      assert.deepEqual(answers, await play(theirs.httpPort, timeout), timeout);
      mine.push(answers);
    }
    assert.deepEqual(
      mine.map((answers) => answers[1]),
      [
        [503, 'timeout of the corresponding sequence has been expired'],
        [200, 'ok'],
        [200, 'ok'],
      ],
    );
  });

  it('takes priority and timeout up to 2^64 - 1, and refuses them past it, as Triton does', async () => {
    const bodies = ['18446744073709551615', '9007199254740993', '18446744073709551616', '-9223372036854775808']
      .flatMap((v) => [`{"priority":${v}}`, `{"timeout":${v}}`, `{"my_parameter":${v}}`])
      .map((p) => sequenceBody(p));
    const answers = async (port: number): Promise<[number, string][]> => {
      const out: [number, string][] = [];
      for (const body of bodies) {
        const [status, text] = await post(port, '/v2/models/mnist/infer', body);
        out.push([status, (JSON.parse(text) as { error?: string }).error ?? 'ok']);
      }
      return out;
    };
    assert.deepEqual(await answers(ours.http), await answers(theirs.httpPort));
  });
});
