// The dynamic batcher against the real one: the same arrival patterns of
// requests go to `popef serve` (cpu plugin) and to the real Triton server
// (the tritonserver that nvidia-pytriton bundles, with the stand-in poplar
// backend), each model configured for one behaviour of Triton's dynamic
// batcher (preferred sizes and the queue delay, max_queue_size, queue
// timeouts and the request's own `timeout`). Both must give every request
// the same status and message, and report the same batch statistics:
// execution count, inference count, the batch sizes executed, successes and
// failures. Arrivals are spaced so that the batches formed do not depend on
// scheduling jitter (requests that may join a batch arrive well inside its
// queue delay).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findTritonServer, whyNoTritonOracle, type RunningTriton } from '../triton/oracle/tritonserver.js';
import { addMnistVariants, batchStats, serveBesideTriton, type BesideTriton, type Serving } from './serving.js';

const triton = findTritonServer();
const missing = whyNoTritonOracle(triton);

/** Model name -> what its config adds to the scaffolded MNIST config. */
const MODELS: Record<string, { maxBatchSize: number; batching: string }> = {
  // No preferred size: max_batch_size is the preferred one.
  batch4: { maxBatchSize: 4, batching: 'dynamic_batching { max_queue_delay_microseconds: 1000000 }' },
  preferred: { maxBatchSize: 8, batching: 'dynamic_batching { preferred_batch_size: [ 2, 3 ] max_queue_delay_microseconds: 1000000 }' },
  nodelay: { maxBatchSize: 8, batching: 'dynamic_batching { }' },
  capped: { maxBatchSize: 4, batching: 'dynamic_batching { max_queue_delay_microseconds: 1500000 default_queue_policy { max_queue_size: 2 } }' },
  timeouts: {
    maxBatchSize: 4,
    batching:
      'dynamic_batching { max_queue_delay_microseconds: 600000 default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 5000000 allow_timeout_override: true } }',
  },
  delayed: {
    maxBatchSize: 4,
    batching:
      'dynamic_batching { max_queue_delay_microseconds: 400000 default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 100000 } }',
  },
  expiring: {
    maxBatchSize: 4,
    batching: 'dynamic_batching { max_queue_delay_microseconds: 2000000 default_queue_policy { default_timeout_microseconds: 300000 } }',
  },
};

/** One request of an arrival pattern: when it is sent (ms after the first), and its parameters. */
interface Arrival {
  readonly at: number;
  readonly parameters?: Record<string, number>;
}

function body(arrival: Arrival): string {
  const data = new Array<number>(28 * 28).fill(0.5);
  return JSON.stringify({
    ...(arrival.parameters === undefined ? {} : { parameters: arrival.parameters }),
    inputs: [{ name: 'digit_image', datatype: 'FP32', shape: [1, 1, 28, 28], data }],
  });
}

/** Sends the pattern; each answer as [status, error message or 'ok']. */
async function play(port: number, model: string, arrivals: readonly Arrival[]): Promise<[number, string][]> {
  const start = performance.now();
  return Promise.all(
    arrivals.map(async (a) => {
      const wait = a.at - (performance.now() - start);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const res = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/infer`, { method: 'POST', body: body(a) });
      const json = (await res.json()) as { error?: string };
      return [res.status, json.error ?? 'ok'] as [number, string];
    }),
  );
}

const every = (n: number, ms: number, from = 0): Arrival[] => Array.from({ length: n }, (_, i) => ({ at: from + i * ms }));

/** Model -> arrival pattern, and what is expected of both servers (checked against Triton too, so a changed Triton is noticed). */
const CASES: [string, string, Arrival[]][] = [
  ['batch4', 'eight requests 40 ms apart form two batches of four', every(8, 40)],
  ['preferred', 'six requests 100 ms apart: each preferred size of 2 is sent at once', every(6, 100)],
  ['nodelay', 'no delay: each request 100 ms apart runs alone', every(3, 100)],
  ['capped', 'a third request finds the queue (max_queue_size 2) full', every(3, 50)],
  [
    'timeouts',
    "a request's own timeout shortens the queue's: rejected while the other waits out the delay",
    [{ at: 0, parameters: { timeout: 100000 } }, { at: 20 }],
  ],
  ['delayed', 'timeout_action DELAY: expired requests still run, together', every(2, 30)],
  ['expiring', 'default timeout below the delay: the lone request is rejected at its timeout', [{ at: 0 }]],
];

describe('the dynamic batcher matches the real Triton server', { skip: process.env.CI === 'true' ? false : missing }, () => {
  let ours: Serving;
  let theirs: RunningTriton;
  let both: BesideTriton | undefined;

  before(async () => {
    both = await serveBesideTriton(triton, { timeoutMs: 120_000, prepare: (_, repo) => addMnistVariants(repo, MODELS) });
    ({ ours, theirs } = both);
  });

  after(() => both?.stop());

  for (const [model, title, arrivals] of CASES) {
    it(`${model}: ${title}`, { timeout: 60_000 }, async () => {
      const real = await play(theirs.httpPort, model, arrivals);
      const mine = await play(ours.http, model, arrivals);
      assert.deepEqual(mine, real);
      assert.deepEqual(await batchStats(ours.http, model), await batchStats(theirs.httpPort, model));
    });
  }

  it('the statistics are what the patterns make (so that both servers cannot agree on nothing)', async () => {
    const s = await batchStats(ours.http, 'batch4');
    assert.deepEqual(s, { inference_count: 8, execution_count: 2, success: 8, fail: 0, batches: [[4, 2]] });
    assert.deepEqual((await batchStats(ours.http, 'preferred')).batches, [[2, 3]]);
    assert.deepEqual(await batchStats(ours.http, 'capped'), { inference_count: 2, execution_count: 1, success: 2, fail: 0, batches: [[2, 1]] });
    assert.deepEqual((await batchStats(ours.http, 'delayed')).batches, [[2, 1]]);
    assert.deepEqual(await batchStats(ours.http, 'expiring'), { inference_count: 0, execution_count: 0, success: 0, fail: 1, batches: [] });
  });
});
