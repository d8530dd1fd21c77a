// The sequence batcher against the real one: the same sequences of requests
// go to `popef serve` (cpu plugin) and to the real Triton server (the
// tritonserver that nvidia-pytriton bundles, with the stand-in poplar
// backend), on MNIST models with sequence_batching (the direct strategy,
// one slot per instance at max_batch_size 1 and four at 4, and the oldest). Both must give every request the
// same status and message, answer in the same order where a sequence waits
// for a slot, and report the same statistics. Where the reaper decides,
// requests are spaced well past twice max_sequence_idle_microseconds
// (Triton's reaper may look only once per idle period).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { findTritonServer, whyNoTritonOracle, type RunningTriton } from '../triton/oracle/tritonserver.js';
import { ROOT } from '../helpers.js';
import { addMnistVariants, batchStats as stats, serveBesideTriton, type BesideTriton, type Serving } from './serving.js';

const triton = findTritonServer();
const missing = whyNoTritonOracle(triton);

const PYTHON = join(ROOT, '.venv', 'bin', 'python');
const hasClient = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import tritonclient.grpc, tritonclient.http']).status === 0;

/** What the real tritonclient got for each step of sequence_cases.py (gRPC and HTTP). */
function clientSteps(grpc: number, http: number, model: string): Record<string, { ok: boolean; status?: string; message?: string }> {
  const r = spawnSync(PYTHON, [join(ROOT, 'test/serve/clients/sequence_cases.py'), `127.0.0.1:${grpc}`, `127.0.0.1:${http}`, model], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, { ok: boolean; status?: string; message?: string }>;
}

/** Model name -> max_batch_size and its sequence_batching. */
const MODELS: Record<string, { maxBatchSize: number; batching: string }> = {
  seq: { maxBatchSize: 1, batching: 'sequence_batching { max_sequence_idle_microseconds: 300000 }' },
  seqlong: { maxBatchSize: 1, batching: 'sequence_batching { max_sequence_idle_microseconds: 5000000 }' },
  seqclient: { maxBatchSize: 1, batching: 'sequence_batching { max_sequence_idle_microseconds: 5000000 }' },
  // Served by Triton (its stand-in backend reads no input); refused by popef serve at load, each saying why.
  seqctl: {
    maxBatchSize: 1,
    batching: 'sequence_batching { control_input [{ name: "START" control [{ kind: CONTROL_SEQUENCE_START fp32_false_true: [0, 1] }] }] }',
  },
  seqoldest: {
    maxBatchSize: 4,
    batching:
      'sequence_batching { max_sequence_idle_microseconds: 10000000 oldest { max_candidate_sequences: 4 max_queue_delay_microseconds: 300000 } }',
  },
  seqdelay: {
    maxBatchSize: 4,
    batching:
      'sequence_batching { max_sequence_idle_microseconds: 10000000 direct { max_queue_delay_microseconds: 300000 minimum_slot_utilization: 0.75 } }',
  },
  seqbig: { maxBatchSize: 4, batching: 'sequence_batching { max_sequence_idle_microseconds: 5000000 }' },
};

type Parameters = Record<string, number | string | boolean>;

/** One request: when it is sent (ms after the first), its sequence parameters, its batch size. */
interface Step {
  readonly at: number;
  readonly parameters?: Parameters;
  readonly batch?: number;
}

function body(step: Step): string {
  const batch = step.batch ?? 1;
  const data = new Array<number>(batch * 28 * 28).fill(0.5);
  return JSON.stringify({
    ...(step.parameters === undefined ? {} : { parameters: step.parameters }),
    inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [batch, 1, 28, 28], data }],
  });
}

/** Sends the steps; each answer as [status, error message or 'ok'], and the order in which they were answered. */
/**
 * Answers closer together than this are one group of the order: back-to-back
 * executions (the END that frees a slot, then the backlogged request that
 * takes it) finish well under a millisecond apart, and reach the client in
 * either order over two connections.
 */
const SAME_MOMENT_MS = 25;

/** The answers, and the order they came in: groups of steps (sorted), each group answered within SAME_MOMENT_MS. */
async function play(port: number, model: string, steps: readonly Step[]): Promise<{ answers: [number, string][]; order: number[][] }> {
  const start = performance.now();
  const answeredAt: number[] = [];
  const answers = await Promise.all(
    steps.map(async (s, i) => {
      const wait = s.at - (performance.now() - start);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const res = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/infer`, { method: 'POST', body: body(s) });
      answeredAt[i] = performance.now() - start;
      const json = (await res.json()) as { error?: string };
      return [res.status, json.error ?? 'ok'] as [number, string];
    }),
  );
  const byTime = steps.map((_, i) => i).sort((a, b) => (answeredAt[a] ?? 0) - (answeredAt[b] ?? 0));
  const order: number[][] = [];
  let last = -Infinity;
  for (const i of byTime) {
    const at = answeredAt[i] ?? 0;
    const group = order[order.length - 1];
    if (group === undefined || at - last > SAME_MOMENT_MS) order.push([i]);
    else group.push(i);
    last = at;
  }
  return { answers, order: order.map((g) => g.sort((a, b) => a - b)) };
}

const seqStart = (id: number | string, at: number, end = false): Step => ({
  at,
  parameters: { sequence_id: id, sequence_start: true, ...(end ? { sequence_end: true } : {}) },
});
const seqNext = (id: number | string, at: number, end = false): Step => ({
  at,
  parameters: { sequence_id: id, ...(end ? { sequence_end: true } : {}) },
});

/** Model, title, steps; whether the order of answers is compared too (where a sequence waits for a slot). */
const CASES: [string, string, Step[], boolean][] = [
  [
    'seq',
    'no correlation id, 0 or empty: refused before the batcher counts anything',
    [{ at: 0 }, { at: 50, parameters: { sequence_id: 0, sequence_start: true } }, { at: 100, parameters: { sequence_id: '', sequence_start: true } }],
    false,
  ],
  ['seq', 'a first request without START is refused', [seqNext(7, 0), seqNext('seven', 50, true)], false],
  [
    'seq',
    'start, continue, end; then the ended sequence is unknown',
    [seqStart(11, 0), seqNext(11, 50), seqNext(11, 100, true), seqNext(11, 150)],
    false,
  ],
  ['seq', 'a sequence idle past max_sequence_idle_microseconds is released', [seqStart(21, 0), seqNext(21, 100), seqNext(21, 1200)], false],
  [
    'seq',
    'string and uint64 ids are apart: "5" is not 5',
    [seqStart(5, 0), seqNext('5', 50), seqStart('5', 100, true), seqNext(5, 150, true)],
    false,
  ],
  [
    'seqlong',
    'a second sequence waits in the backlog for the one slot until the first ends',
    [seqStart(31, 0), seqStart(32, 100), seqNext(32, 150, true), seqNext(31, 400, true)],
    true,
  ],
  ['seq', 'a backlogged sequence gets the slot once the holder goes idle', [seqStart(41, 0), seqStart(42, 100, true), seqNext(41, 1500)], true],
  [
    'seqlong',
    "a backlogged sequence past its request's timeout is refused; the slot's holder carries on",
    [seqStart(51, 0), { at: 50, parameters: { sequence_id: 52, sequence_start: true, timeout: 200000 } }, seqNext(51, 500, true)],
    true,
  ],
  [
    'seqoldest',
    'oldest: four sequences batch together at the preferred size; two wait out the delay; a sequence runs one request at a time',
    [
      seqStart(1, 0),
      seqStart(2, 30),
      seqStart(3, 60),
      seqStart(4, 90),
      seqNext(1, 600),
      seqNext(2, 630),
      seqNext(3, 1200),
      seqNext(3, 1210),
      seqNext(1, 1650, true),
      seqNext(2, 2400, true),
      seqNext(3, 2400, true),
      seqNext(4, 2400, true),
    ],
    false,
  ],
  [
    'seqdelay',
    'direct with a queue delay: a batch waits for three of four slots, or for the delay',
    [
      seqStart(1, 0),
      seqStart(2, 30),
      seqStart(3, 60),
      seqNext(1, 600),
      seqNext(2, 630),
      seqNext(1, 1200, true),
      seqNext(2, 1200, true),
      seqNext(3, 1200, true),
    ],
    false,
  ],
  [
    'seqbig',
    'a request of two rows is refused by the sequence batcher',
    [{ at: 0, batch: 2, parameters: { sequence_id: 1, sequence_start: true } }],
    false,
  ],
  [
    'seqbig',
    'four sequences take four slots of one instance',
    [seqStart(1, 0), seqStart(2, 50), seqStart(3, 100), seqNext(1, 150, true), seqNext(2, 200, true), seqNext(3, 250, true)],
    false,
  ],
];

describe('the sequence batcher matches the real Triton server', { skip: process.env.CI === 'true' ? false : missing }, () => {
  let ours: Serving;
  let theirs: RunningTriton;
  let both: BesideTriton | undefined;

  before(async () => {
    both = await serveBesideTriton(triton, { timeoutMs: 120_000, prepare: (_, repo) => addMnistVariants(repo, MODELS) });
    ({ ours, theirs } = both);
  });

  after(() => both?.stop());

  const played = new Map<string, Awaited<ReturnType<typeof play>>>();
  for (const [model, title, steps, ordered] of CASES) {
    it(`${model}: ${title}`, { timeout: 60_000 }, async () => {
      const real = await play(theirs.httpPort, model, steps);
      const mine = await play(ours.http, model, steps);
      played.set(title, mine);
      assert.deepEqual(mine.answers, real.answers);
      if (ordered) assert.deepEqual(mine.order, real.order);
      assert.deepEqual(await stats(ours.http, model), await stats(theirs.httpPort, model));
    });
  }

  it(
    'tritonclient over gRPC and HTTP: the same statuses and messages for each step of a sequence',
    { skip: hasClient ? false : 'no tritonclient in .venv' },
    () => {
      const real = clientSteps(theirs.grpcPort, theirs.httpPort, 'seqclient');
      const mine = clientSteps(ours.grpc, ours.http, 'seqclient');
      assert.deepEqual(mine, real);
      // Anchors: Triton's gRPC status for a refused request, and a sequence that ran.
      assert.deepEqual(mine['grpc/not-started'], {
        ok: false,
        status: 'StatusCode.INVALID_ARGUMENT',
        message: "inference request for sequence 1001 to model 'seqclient' must specify the START flag on the first request of the sequence",
      });
      assert.deepEqual(mine['http/no-id'], {
        ok: false,
        status: '400',
        message: "inference request to model 'seqclient' must specify a non-zero or non-empty correlation ID",
      });
      assert.deepEqual([mine['grpc/end'], mine['http/end']], [{ ok: true }, { ok: true }]);
    },
  );

  it('a model without sequence_batching accepts and ignores the sequence parameters, as Triton does', async () => {
    const steps = [seqNext(77, 0), seqStart(78, 50, true), { at: 100, parameters: { sequence_id: 'x', sequence_end: true } }];
    const real = await play(theirs.httpPort, 'mnist', steps);
    const mine = await play(ours.http, 'mnist', steps);
    assert.deepEqual(mine.answers, real.answers);
    assert.deepEqual(mine.answers, [
      [200, 'ok'],
      [200, 'ok'],
      [200, 'ok'],
    ]);
  });

  it('a model whose control input the executable lacks is UNAVAILABLE saying why', async () => {
    const res = await fetch(`http://127.0.0.1:${ours.http}/v2/repository/index`, { method: 'POST', body: '{}' });
    const index = (await res.json()) as { name: string; state?: string; reason?: string }[];
    const of = (name: string): [string | undefined, string | undefined] => {
      const m = index.find((e) => e.name === name);
      return [m?.state, m?.reason];
    };
    assert.deepEqual(of('seqctl'), [
      'UNAVAILABLE',
      "control input 'START' (anchor 'START') is not a tensor the execution plugin offers for this model",
    ]);
    const real = await fetch(`http://127.0.0.1:${theirs.httpPort}/v2/models/seqctl/ready`);
    assert.equal(real.status, 200, "Triton serves it: the refusal is popef serve's own");
  });

  it('the answers are what the cases make (so that both servers cannot agree on nothing)', async () => {
    const notStarted = (id: number | string, model = 'seq'): [number, string] => [
      400,
      `inference request for sequence ${id} to model '${model}' must specify the START flag on the first request of the sequence`,
    ];
    const ok: [number, string] = [200, 'ok'];
    assert.deepEqual(played.get(CASES[2]?.[1] ?? '')?.answers, [ok, ok, ok, notStarted(11)]);
    assert.deepEqual(played.get(CASES[3]?.[1] ?? '')?.answers, [ok, ok, notStarted(21)]);
    assert.deepEqual(played.get(CASES[4]?.[1] ?? '')?.answers, [ok, notStarted(5), ok, ok]);
    // The second sequence ran only after the first ended: its answers come with the first's END, not before it.
    assert.deepEqual(played.get(CASES[5]?.[1] ?? '')?.order, [[0], [1, 2, 3]]);
    assert.deepEqual(played.get(CASES[6]?.[1] ?? '')?.answers, [ok, ok, notStarted(41)]);
    assert.deepEqual(played.get(CASES[7]?.[1] ?? '')?.answers, [ok, [503, 'timeout of the corresponding sequence has been expired'], ok]);
    assert.deepEqual(await stats(ours.http, 'seqlong'), { inference_count: 6, execution_count: 6, success: 6, fail: 1, batches: [[1, 6]] });
    // Oldest: the four starts at the preferred size; the two continues after the delay; sequence 3's second request
    // reaches the batcher when its first is done and waits out the delay from then, joining sequence 1's end.
    assert.deepEqual((await stats(ours.http, 'seqoldest')).batches, [
      [1, 1],
      [2, 2],
      [3, 1],
      [4, 1],
    ]);
    // Direct with a delay: three starts fill three of four slots at once; two continues wait out the delay.
    assert.deepEqual((await stats(ours.http, 'seqdelay')).batches, [
      [2, 1],
      [3, 2],
    ]);
    // Slots without a request in the batch are not-ready rows: batches of 1, 2 and 3 rows, six inferences.
    assert.deepEqual(await stats(ours.http, 'seqbig'), {
      inference_count: 6,
      execution_count: 6,
      success: 6,
      fail: 0,
      batches: [
        [1, 2],
        [2, 2],
        [3, 2],
      ],
    });
  });
});
