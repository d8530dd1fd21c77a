// The sequence batcher with a plugin double that records every run's
// tensors: the control tensors each request brings (START, END, READY,
// CORRID, in their configured types and values), the not-ready rows of idle
// slots, one request of a sequence at a time, cancellation, idle release,
// and the models refused at load. (sequence.test.ts compares whole sequences
// with the real Triton server.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ExecutionPlugin, Tensor, TensorSpec } from '../../src/run/plugin-api.js';
import { ClientGone } from '../../src/serve/cancellation.js';
import { ModelRepository } from '../../src/serve/model-repository.js';
import { InstanceSet, type StartedInstance } from '../../src/serve/scheduler/instances.js';
import type { ScheduledRequest } from '../../src/serve/scheduler/model-scheduler.js';
import { emptyStats, type ModelStats } from '../../src/serve/scheduler/model-stats.js';
import { controlTensors, sequenceSettings, type SequenceSettings } from '../../src/serve/scheduler/sequence-controls.js';
import { SequenceScheduler } from '../../src/serve/scheduler/sequence-scheduler.js';
import { directBatch, Slot, type Job } from '../../src/serve/scheduler/sequence-slots.js';
import { RequestError } from '../../src/serve/status.js';
import type { ModelConfig } from '../../src/triton/model-config.js';
import { inTempDir } from '../helpers.js';
import { addMnistVariants, pluginDouble, scaffoldMnist } from './serving.js';

/** A run as the double saw it: each input's values, by anchor. */
type Run = Record<string, number[] | bigint[]>;

function values(t: Tensor): number[] | bigint[] {
  const view = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const out: number[] = [];
  const big: bigint[] = [];
  const n = t.data.byteLength / (t.dtype === 'BOOL' ? 1 : t.dtype === 'U64' || t.dtype === 'S64' ? 8 : 4);
  for (let i = 0; i < n; i++) {
    if (t.dtype === 'F32') out.push(view.getFloat32(i * 4, true));
    else if (t.dtype === 'S32') out.push(view.getInt32(i * 4, true));
    else if (t.dtype === 'U32') out.push(view.getUint32(i * 4, true));
    else if (t.dtype === 'BOOL') out.push(view.getUint8(i));
    else big.push(view.getBigUint64(i * 8, true));
  }
  return big.length > 0 ? big : out;
}

const CONTROLS: NonNullable<ModelConfig['sequence_batching']>['control_input'] = [
  { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', fp32_false_true: [0, 1] }] },
  { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', int32_false_true: [5, 9] }] },
  { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', bool_false_true: [false, true] }] },
  { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_UINT64' }] },
];

function settingsOf(config: ModelConfig): SequenceSettings {
  const s = sequenceSettings(config);
  assert.ok(typeof s !== 'string', typeof s === 'string' ? s : '');
  return s;
}

interface Setup {
  readonly scheduler: SequenceScheduler;
  readonly runs: Run[];
  readonly stats: ModelStats;
  /** Runs in progress at once, at most. */
  readonly peak: () => number;
}

/** A scheduler over `instances` doubles whose runs take `ms`; the layout has input x and the config's controls (each one element per row). */
function setup(config: ModelConfig, instances = 1, ms = 5): Setup {
  const batched = (config.max_batch_size ?? 0) > 0;
  const settings = settingsOf(config);
  const specs: TensorSpec[] = [
    { name: 'x', dtype: 'F32', shape: batched ? [1, 1] : [1] },
    ...settings.controls.map((c): TensorSpec => ({ name: `anchor_${c.name}`, dtype: c.dtype, shape: batched ? [1, 1] : [1] })),
  ];
  const runs: Run[] = [];
  let now = 0;
  let peak = 0;
  const opened = (): StartedInstance => ({
    plugin: pluginDouble(),
    model: {
      inputs: specs,
      outputs: [{ name: 'y', dtype: 'F32', shape: batched ? [1, 1] : [1] }],
      run: async (inputs) => {
        now += 1;
        peak = Math.max(peak, now);
        const run: Run = {};
        for (const [name, t] of inputs) run[name] = values(t);
        runs.push(run);
        await new Promise((r) => setTimeout(r, ms));
        now -= 1;
        const x = inputs.get('x');
        return new Map([['y', { name: 'y', dtype: 'F32' as const, shape: x?.shape ?? [1], data: x?.data ?? new Uint8Array(4) }]]);
      },
      close: () => Promise.resolve(),
    },
  });
  const stats = emptyStats();
  const scheduler = new SequenceScheduler({
    modelName: 'm',
    maxBatchSize: config.max_batch_size ?? 0,
    settings,
    anchorOf: (name) => `anchor_${name}`,
    layout: { inputs: specs, outputs: [{ name: 'y', dtype: 'F32', shape: batched ? [1, 1] : [1] }], batched },
    stats,
  });
  scheduler.attach(
    new InstanceSet(
      Array.from({ length: instances }, () => opened()),
      { model: 'm', start: () => Promise.resolve(opened()), onChange: () => undefined, onAllDown: () => undefined },
    ),
  );
  return { scheduler, runs, stats, peak: () => peak };
}

function request(x: number, sequence: ScheduledRequest['sequence'], batched = true, signal?: ClientGone): ScheduledRequest {
  const data = new Uint8Array(4);
  new DataView(data.buffer).setFloat32(0, x, true);
  return {
    batch: batched ? 1 : 0,
    tensors: new Map([['x', { name: 'x', dtype: 'F32', shape: batched ? [1, 1] : [1], data }]]),
    sequence,
    signal,
    logPrefix: '',
  };
}

const seq = (id: bigint | string, start = false, end = false): ScheduledRequest['sequence'] => ({ id, start, end });

describe('directBatch (DirectSequenceBatch)', () => {
  const job = (id: bigint, enqueuedNs: number, end = false): Job => ({
    request: request(0, seq(id)),
    sequence: { id, start: false, end },
    enqueuedNs,
    resolve: () => undefined,
    reject: () => undefined,
  });
  const slotsWith = (...fronts: (Job | undefined)[]): Slot[] =>
    fronts.map((f, i) => {
      const slot = new Slot(0, i);
      if (f !== undefined) slot.queue.push(f);
      return slot;
    });

  it('takes one request per slot up to the last with one; the gaps are not-ready rows; an END is reported', () => {
    const [a, c] = [job(1n, 0), job(3n, 0, true)];
    const slots = slotsWith(a, undefined, c, undefined);
    const choice = directBatch(slots, { maxQueueDelayUs: 0, minimumSlotUtilization: 0 }, 4, 0);
    assert.ok(choice !== undefined && 'rows' in choice);
    assert.deepEqual([choice.rows, choice.ended], [[a, undefined, c], [slots[2]]]);
    assert.deepEqual(
      slots.map((s) => s.queue.length),
      [0, 0, 0, 0],
    );
    assert.equal(directBatch(slots, { maxQueueDelayUs: 0, minimumSlotUtilization: 0 }, 4, 0), undefined);
  });

  it('below minimum_slot_utilization it waits for the rest of the queue delay, then goes', () => {
    const slots = slotsWith(job(1n, 0));
    const settings = { maxQueueDelayUs: 1000, minimumSlotUtilization: 0.5 };
    assert.deepEqual(directBatch(slots, settings, 4, 400_000), { waitNs: 600_000 });
    const late = directBatch(slots, settings, 4, 1_100_000);
    assert.ok(late !== undefined && 'rows' in late && late.rows.length === 1);
  });
});

describe('SequenceScheduler', () => {
  it('gives the plugin START, END, READY and CORRID in their configured types and false/true values', async () => {
    const { scheduler, runs } = setup({ name: 'm', max_batch_size: 1, sequence_batching: { control_input: CONTROLS } });
    await scheduler.enqueue(request(1, seq(7n, true)));
    await scheduler.enqueue(request(2, seq(7n)));
    await scheduler.enqueue(request(3, seq(7n, false, true)));
    await scheduler.enqueue(request(4, seq(2n ** 64n - 1n, true, true)));
    assert.deepEqual(runs, [
      { x: [1], anchor_START: [1], anchor_END: [5], anchor_READY: [1], anchor_CORRID: [7n] },
      { x: [2], anchor_START: [0], anchor_END: [5], anchor_READY: [1], anchor_CORRID: [7n] },
      { x: [3], anchor_START: [0], anchor_END: [9], anchor_READY: [1], anchor_CORRID: [7n] },
      { x: [4], anchor_START: [1], anchor_END: [9], anchor_READY: [1], anchor_CORRID: [2n ** 64n - 1n] },
    ]);
  });

  it('a CORRID of 32 bits gets the low bytes of the id, as Triton copies them', () => {
    const controls = settingsOf({
      sequence_batching: { control_input: [{ name: 'C', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_INT32' }] }] },
    });
    const t = controlTensors(controls.controls, (n) => n, { start: true, end: false, ready: true }, 2n ** 32n + 3n, false).get('C');
    assert.ok(t !== undefined);
    assert.deepEqual([t.dtype, t.shape, values(t)], ['S32', [1], [3]]);
  });

  it('a slot with nothing waiting sends a not-ready row between busy ones; the batch keeps each sequence in its slot', async () => {
    const { scheduler, runs, stats } = setup({ name: 'm', max_batch_size: 2, sequence_batching: { control_input: CONTROLS } });
    await scheduler.enqueue(request(1, seq(1n, true)));
    await scheduler.enqueue(request(2, seq(2n, true)));
    // Sequence 2 alone, in slot 1: slot 0 (sequence 1, idle) is a not-ready row of zeros.
    await scheduler.enqueue(request(3, seq(2n, false, true)));
    assert.deepEqual(runs.slice(-2), [
      { x: [0], anchor_START: [0], anchor_END: [5], anchor_READY: [0], anchor_CORRID: [0n] },
      { x: [3], anchor_START: [0], anchor_END: [9], anchor_READY: [1], anchor_CORRID: [2n] },
    ]);
    assert.deepEqual(
      [stats.inferenceCount, stats.executionCount, [...stats.batches].map(([n, d]) => [n, d.count])],
      [
        3,
        3,
        [
          [1, 1],
          [2, 2],
        ],
      ],
    );
  });

  it("Triton's enqueue errors, thrown before anything is counted", () => {
    const { scheduler, stats } = setup({ name: 'm', max_batch_size: 4, sequence_batching: {} });
    const cases: [ScheduledRequest, string][] = [
      [
        { ...request(1, seq(1n, true)), batch: 2 },
        "inference request to model 'm' must specify batch-size 1 due to requirements of sequence batcher",
      ],
      [request(1, undefined), "inference request to model 'm' must specify a non-zero or non-empty correlation ID"],
      [request(1, seq('', true)), "inference request to model 'm' must specify a non-zero or non-empty correlation ID"],
      [request(1, seq(9n)), "inference request for sequence 9 to model 'm' must specify the START flag on the first request of the sequence"],
    ];
    for (const [r, message] of cases)
      assert.throws(
        () => void scheduler.enqueue(r),
        (e: unknown) => e instanceof RequestError && e.status === 'INVALID_ARG' && e.message === message,
      );
    assert.equal(stats.fail.count, 0);
  });

  it('a string id is refused where the CORRID control takes an integer', () => {
    const { scheduler } = setup({ name: 'm', max_batch_size: 1, sequence_batching: { control_input: CONTROLS } });
    assert.throws(
      () => void scheduler.enqueue(request(1, seq('abc', true))),
      /correlation ID in request is a string, but the CONTROL_SEQUENCE_CORRID control 'CORRID'/,
    );
  });

  it("runs a sequence's requests in order, one at a time, across two instances", async () => {
    const { scheduler, runs, peak } = setup({ name: 'm', max_batch_size: 1, sequence_batching: {} }, 2, 20);
    await Promise.all([1, 2, 3, 4].map((x) => scheduler.enqueue(request(x, seq(5n, x === 1, x === 4)))));
    assert.deepEqual(
      runs.map((r) => r.x),
      [[1], [2], [3], [4]],
    );
    assert.equal(peak(), 1);
  });

  it('more sequences than slots wait in the backlog, and take the slot an END frees', async () => {
    const { scheduler, runs } = setup({ name: 'm', max_batch_size: 0, sequence_batching: { max_sequence_idle_microseconds: 10_000_000 } });
    const a = scheduler.enqueue(request(1, seq(1n, true), false));
    const b = scheduler.enqueue(request(10, seq(2n, true, true), false));
    await a;
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(runs.length, 1, 'sequence 2 waits while sequence 1 holds the one slot');
    await scheduler.enqueue(request(2, seq(1n, false, true), false));
    await b;
    assert.deepEqual(
      runs.map((r) => r.x),
      [[1], [2], [10]],
    );
  });

  it('an idle sequence is released after max_sequence_idle_microseconds; its next request is refused', async () => {
    const { scheduler } = setup({ name: 'm', max_batch_size: 1, sequence_batching: { max_sequence_idle_microseconds: 30_000 } });
    await scheduler.enqueue(request(1, seq('s', true)));
    await new Promise((r) => setTimeout(r, 80));
    assert.throws(() => void scheduler.enqueue(request(2, seq('s'))), /inference request for sequence s to model 'm' must specify the START flag/);
    scheduler.close();
  });

  it('a cancelled request ends its sequence: it and what waits behind it fail as cancelled', async () => {
    const { scheduler, stats } = setup({ name: 'm', max_batch_size: 1, sequence_batching: {} }, 1, 40);
    const gone = new ClientGone();
    const first = scheduler.enqueue(request(1, seq(3n, true)));
    const second = scheduler.enqueue(request(2, seq(3n), true, gone));
    const third = scheduler.enqueue(request(3, seq(3n)));
    const cancelled = (e: unknown): boolean => e instanceof RequestError && e.status === 'CANCELLED';
    const failures = Promise.all([assert.rejects(second, cancelled), assert.rejects(third, cancelled)]);
    gone.set();
    await first;
    await failures;
    assert.equal(stats.fail.count, 2);
    assert.throws(() => void scheduler.enqueue(request(4, seq(3n))), /must specify the START flag/);
  });

  it("a batch the plugin fails rejects its requests with the plugin's error and counts them as failures", async () => {
    const { scheduler, stats } = setup({ name: 'm', max_batch_size: 1, sequence_batching: {} });
    const failing: StartedInstance = {
      plugin: {
        name: 'double',
        probe: () => Promise.resolve({ available: true }),
        open: () => Promise.reject(new Error('unused')),
        dispose: () => Promise.resolve(),
      },
      model: { inputs: [], outputs: [], run: () => Promise.reject(new Error('the run failed')), close: () => Promise.resolve() },
    };
    scheduler.attach(
      new InstanceSet([failing], { model: 'm', start: () => Promise.resolve(failing), onChange: () => undefined, onAllDown: () => undefined }),
    );
    await assert.rejects(scheduler.enqueue(request(1, seq(1n, true))), /the run failed/);
    assert.deepEqual([stats.fail.count, stats.success.count, scheduler.executing], [1, 0, 0]);
  });

  it("a backlogged sequence past its request timeout is refused with Triton's message", async () => {
    const { scheduler } = setup({ name: 'm', max_batch_size: 1, sequence_batching: {} }, 1, 5);
    await scheduler.enqueue(request(1, seq(1n, true)));
    const waiting = scheduler.enqueue({ ...request(2, seq(2n, true)), timeoutUs: 20_000 });
    await assert.rejects(
      waiting,
      (e: unknown) =>
        e instanceof RequestError && e.status === 'UNAVAILABLE' && e.message === 'timeout of the corresponding sequence has been expired',
    );
    scheduler.stop();
    scheduler.close();
  });

  it('stop fails what waits in a slot and in the backlog with its message, lets the running batch finish, and refuses new requests', async () => {
    const { scheduler, stats } = setup({ name: 'm', max_batch_size: 0, sequence_batching: {} }, 1, 30);
    const running = scheduler.enqueue(request(1, seq(1n, true), false));
    const queued = scheduler.enqueue(request(2, seq(1n), false));
    const backlogged = scheduler.enqueue(request(3, seq(2n, true), false));
    scheduler.stop('the model is unloading');
    const unavailable = (e: unknown): boolean => e instanceof RequestError && e.status === 'UNAVAILABLE' && e.message === 'the model is unloading';
    await Promise.all([assert.rejects(queued, unavailable), assert.rejects(backlogged, unavailable)]);
    await running;
    assert.throws(() => void scheduler.enqueue(request(4, seq(3n, true), false)), unavailable);
    assert.deepEqual([stats.fail.count, scheduler.pending], [2, 0]);
    scheduler.close();
  });

  it('oldest: requests of several sequences batch together, a sequence still one request at a time', async () => {
    const { scheduler, runs, stats } = setup({ name: 'm', max_batch_size: 4, sequence_batching: { oldest: { max_candidate_sequences: 3 } } }, 1, 20);
    // Three starts: the first runs alone (the instance was free, no delay); the next two join one batch while it runs.
    await Promise.all([1n, 2n, 3n].map((id) => scheduler.enqueue(request(Number(id), seq(id, true)))));
    // A fourth sequence finds the three candidate slots taken: it waits for an END.
    const fourth = scheduler.enqueue(request(40, seq(4n, true, true)));
    await Promise.all([1, 2].map((x) => scheduler.enqueue(request(10 + x, seq(1n, false, x === 2)))));
    await fourth;
    assert.deepEqual(
      runs.map((r) => r.x),
      [[1], [2], [3], [11], [12], [40]],
    );
    assert.deepEqual(
      [...stats.batches].map(([n, d]) => [n, d.count]),
      [
        [1, 4],
        [2, 1],
      ],
    );
    assert.equal(settingsOf({ max_batch_size: 4, sequence_batching: { oldest: {} } }).oldest?.candidates, 4);
  });

  it('a START, END or READY control without two false/true values is refused at load', () => {
    for (const control of [
      { kind: 'CONTROL_SEQUENCE_START' as const },
      { kind: 'CONTROL_SEQUENCE_READY' as const, int32_false_true: [0] },
      { kind: 'CONTROL_SEQUENCE_END' as const, bool_false_true: [false, true, true] },
    ]) {
      const refused = sequenceSettings({ name: 'm', sequence_batching: { control_input: [{ name: 'c', control: [control] }] } });
      assert.equal(
        refused,
        `popef serve does not implement a ${control.kind} control without two false/true values of Triton's sequence batcher (model 'm')`,
      );
    }
  });

  it("a control the plugin's input of its name cannot take (another type, or more than one element per row) is refused at load, naming both", async () => {
    await inTempDir(async (dir) => {
      const control = (name: string, kind: string, values: string): string =>
        `sequence_batching { control_input [{ name: "${name}" control [{ kind: ${kind} ${values} }] }] }`;
      const repo = await addMnistVariants(await scaffoldMnist(dir), {
        seqtype: { maxBatchSize: 1, batching: control('END', 'CONTROL_SEQUENCE_END', 'int32_false_true: [0, 1]') },
        seqsize: { maxBatchSize: 1, batching: control('START', 'CONTROL_SEQUENCE_START', 'fp32_false_true: [0, 1]') },
        // The control the plugin does take as configured: served, so the refusals above are not a refusal of every control.
        seqready: { maxBatchSize: 1, batching: control('READY', 'CONTROL_SEQUENCE_READY', 'bool_false_true: [false, true]') },
      });
      // With no name_map.json entry, a control's anchor is its own name; every model gets these inputs.
      const plugin: ExecutionPlugin = {
        ...pluginDouble(),
        open: () =>
          Promise.resolve({
            inputs: [
              { name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] },
              { name: 'END', dtype: 'F32', shape: [1, 1] },
              { name: 'START', dtype: 'F32', shape: [1, 2] },
              { name: 'READY', dtype: 'BOOL', shape: [1, 1] },
            ],
            outputs: [{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] }],
            run: () => Promise.resolve(new Map()),
            close: () => Promise.resolve(),
          }),
      };
      const served = new ModelRepository();
      await served.load([repo], { createPlugin: () => Promise.resolve(plugin) });
      try {
        assert.deepEqual(
          served.list().map((m) => [m.name, m.state, m.reason]),
          [
            ['mnist', 'READY', ''],
            ['seqready', 'READY', ''],
            [
              'seqsize',
              'UNAVAILABLE',
              "control input 'START' (CONTROL_SEQUENCE_START) takes one F32 element per row, but the plugin's 'START' is F32 [1,2]",
            ],
            [
              'seqtype',
              'UNAVAILABLE',
              "control input 'END' (CONTROL_SEQUENCE_END) takes one S32 element per row, but the plugin's 'END' is F32 [1,1]",
            ],
          ],
        );
      } finally {
        await served.close();
      }
    });
  });

  it('the parts of the sequence batcher not implemented are refused at load, by name', () => {
    const cases: [ModelConfig, RegExp][] = [
      [{ name: 'm', sequence_batching: { state: [{ input_name: 'a', output_name: 'b' }] } }, /does not implement implicit state/],
      [{ name: 'm', sequence_batching: { iterative_sequence: true } }, /does not implement iterative sequences/],
      [
        {
          name: 'm',
          sequence_batching: { control_input: [{ name: 'c', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_STRING' }] }] },
        },
        /does not implement a CONTROL_SEQUENCE_CORRID control of TYPE_STRING/,
      ],
    ];
    for (const [config, message] of cases) {
      const refused = sequenceSettings(config);
      assert.ok(typeof refused === 'string');
      assert.match(refused, message);
    }
    assert.equal(settingsOf({ sequence_batching: {} }).idleUs, 1_000_000);
  });
});
