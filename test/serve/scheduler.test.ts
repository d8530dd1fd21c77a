// The dynamic batcher's choices and the priority queue, as tables: what
// batch Triton's GetDynamicBatch forms from a queue, in which order the
// priority levels and delayed requests are taken, and what the queue
// policies refuse. (batching.test.ts compares whole patterns with the real
// Triton server.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseBatch } from '../../src/serve/scheduler/dynamic-batcher.js';
import { batcherSettings, priorityOf, PriorityQueue, type Queued } from '../../src/serve/scheduler/queue-policy.js';
import type { ModelConfig } from '../../src/triton/model-config.js';
import { RequestError } from '../../src/serve/status.js';
import { InstanceSet, type StartedInstance } from '../../src/serve/scheduler/instances.js';
import { ModelScheduler } from '../../src/serve/scheduler/model-scheduler.js';
import { emptyStats } from '../../src/serve/scheduler/model-stats.js';
import { pluginDouble } from './serving.js';

interface Item extends Queued {
  readonly id: string;
}

function item(id: string, rows = 1, enqueuedNs = 0, timeoutUs = 0): Item {
  return { id, rows, timeoutUs, enqueuedNs, cancelled: () => false, logPrefix: `[request id: ${id}] ` };
}

function settingsOf(config: ModelConfig): NonNullable<ReturnType<typeof batcherSettings>> {
  const s = batcherSettings(config);
  assert.ok(s !== undefined);
  return s;
}

const MS = 1e6;

describe('chooseBatch (GetDynamicBatch)', () => {
  const cases: [string, ModelConfig, number[], number, ReturnType<typeof chooseBatch>][] = [
    // [title, config, rows of the queued requests, ms since the oldest arrived, choice]
    [
      'a preferred size reached is sent at once',
      { max_batch_size: 8, dynamic_batching: { preferred_batch_size: [2, 4], max_queue_delay_microseconds: 100_000 } },
      [1, 1, 1],
      0,
      { take: 2 },
    ],
    [
      'the largest preferred size reached wins',
      { max_batch_size: 8, dynamic_batching: { preferred_batch_size: [2, 4], max_queue_delay_microseconds: 100_000 } },
      [1, 1, 1, 1, 1],
      0,
      { take: 4 },
    ],
    [
      'below every preferred size it waits for the rest of the delay',
      { max_batch_size: 8, dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 100_000 } },
      [1, 1],
      30,
      { waitUs: 70_000 },
    ],
    [
      'once the delay is over, all that fits is sent',
      { max_batch_size: 8, dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 100_000 } },
      [1, 1, 1, 1, 1],
      100,
      { take: 5 },
    ],
    [
      'no preferred size: max_batch_size is the preferred one',
      { max_batch_size: 4, dynamic_batching: { max_queue_delay_microseconds: 100_000 } },
      [1, 1, 1, 1, 1],
      0,
      { take: 4 },
    ],
    ['no delay: whatever is queued goes', { max_batch_size: 4, dynamic_batching: {} }, [1, 1], 0, { take: 2 }],
    [
      'a request that would pass max_batch_size starts the next batch',
      { max_batch_size: 4, dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 100_000 } },
      [3, 2],
      0,
      { take: 1 },
    ],
    [
      'a request larger than every preferred size still starts a batch',
      { max_batch_size: 8, dynamic_batching: { preferred_batch_size: [2], max_queue_delay_microseconds: 100_000 } },
      [5, 1],
      0,
      { take: 1 },
    ],
  ];
  for (const [title, config, rows, ageMs, expected] of cases) {
    it(title, () => {
      const settings = settingsOf(config);
      const queue = new PriorityQueue<Item>(settings);
      rows.forEach((r, i) => queue.enqueue(0, item(String(i), r, 0)));
      assert.deepEqual(chooseBatch(queue, settings, ageMs * MS), expected);
    });
  }
});

describe('PriorityQueue (scheduler_utils.cc)', () => {
  it('takes lower levels first, each in arrival order; a priority of 0 or above priority_levels is the default level', () => {
    const settings = settingsOf({ max_batch_size: 8, dynamic_batching: { priority_levels: 3, default_priority_level: 2 } });
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((p) => priorityOf(settings, p)),
      [2, 1, 2, 3, 2],
    );
    const queue = new PriorityQueue<Item>(settings);
    for (const [id, p] of [
      ['a', 3],
      ['b', 2],
      ['c', 1],
      ['d', 2],
    ] as const)
      queue.enqueue(priorityOf(settings, p), item(id));
    assert.deepEqual(
      queue.take(4).map((i) => i.id),
      ['c', 'b', 'd', 'a'],
    );
  });

  it("max_queue_size per level, with Triton's message; other levels are not affected", () => {
    const settings = settingsOf({
      max_batch_size: 8,
      dynamic_batching: {
        priority_levels: 2,
        default_priority_level: 1,
        default_queue_policy: { max_queue_size: 1 },
        priority_queue_policy: [{ key: 2, value: { max_queue_size: 2 } }],
      },
    });
    const queue = new PriorityQueue<Item>(settings);
    queue.enqueue(1, item('a'));
    assert.throws(
      () => queue.enqueue(1, item('b')),
      (e: unknown) => e instanceof RequestError && e.status === 'UNAVAILABLE' && e.message === '[request id: b] Exceeds maximum queue size',
    );
    queue.enqueue(2, item('c'));
    queue.enqueue(2, item('d'));
    assert.throws(() => queue.enqueue(2, item('e')), /Exceeds maximum queue size/);
    assert.equal(queue.size, 3);
  });

  it('expired requests: REJECT takes them out, DELAY puts them behind the unexpired ones; a request may only shorten the timeout', () => {
    const now = performance.now() * 1e6;
    const reject = settingsOf({
      max_batch_size: 8,
      dynamic_batching: { default_queue_policy: { default_timeout_microseconds: 1000, allow_timeout_override: true } },
    });
    const q1 = new PriorityQueue<Item>(reject);
    q1.enqueue(0, item('a'));
    q1.enqueue(0, item('b', 1, 0, 10_000_000));
    const skipped = q1.sweep(now + 5 * MS);
    assert.deepEqual([skipped.rejected.map((i) => i.id), q1.size], [['a', 'b'], 0]);

    const delay = settingsOf({
      max_batch_size: 8,
      dynamic_batching: { default_queue_policy: { timeout_action: 'DELAY', default_timeout_microseconds: 5_000_000, allow_timeout_override: true } },
    });
    const q2 = new PriorityQueue<Item>(delay);
    q2.enqueue(0, item('a', 1, 0, 1000));
    q2.enqueue(0, item('b'));
    assert.deepEqual(q2.sweep(now + 5 * MS).rejected, []);
    assert.deepEqual(
      q2.take(2).map((i) => i.id),
      ['b', 'a'],
    );

    // With no default timeout there is nothing to shorten: the request's own timeout is ignored.
    const none = settingsOf({ max_batch_size: 8, dynamic_batching: { default_queue_policy: { allow_timeout_override: true } } });
    const q3 = new PriorityQueue<Item>(none);
    q3.enqueue(0, item('a', 1, 0, 1000));
    assert.deepEqual([q3.sweep(now + 5 * MS).rejected, q3.size], [[], 1]);
  });
});

describe('ModelScheduler', () => {
  /** Two instances of a plugin double whose runs take as long as the first input value says (ms); it records the order runs finish in. */
  function setup(config: ModelConfig, finished: number[]): ModelScheduler {
    const opened = (): StartedInstance => ({
      plugin: pluginDouble(),
      model: {
        inputs: [{ name: 'x', dtype: 'F32', shape: [1, 1] }],
        outputs: [{ name: 'y', dtype: 'F32', shape: [1, 1] }],
        run: async (inputs) => {
          const x = inputs.get('x')?.data ?? new Uint8Array(4);
          const ms = new DataView(x.buffer, x.byteOffset, 4).getFloat32(0, true);
          await new Promise((r) => setTimeout(r, ms));
          finished.push(ms);
          return new Map([['y', { name: 'y', dtype: 'F32' as const, shape: [1, 1], data: x }]]);
        },
        close: () => Promise.resolve(),
      },
    });
    const scheduler = new ModelScheduler({
      modelName: 'm',
      modelVersion: '1',
      batcher: batcherSettings(config),
      layout: { inputs: [{ name: 'x', dtype: 'F32', shape: [1, 1] }], outputs: [{ name: 'y', dtype: 'F32', shape: [1, 1] }], batched: true },
      stats: emptyStats(),
    });
    scheduler.attach(
      new InstanceSet([opened(), opened()], {
        model: 'm',
        start: () => Promise.resolve(opened()),
        onChange: () => undefined,
        onAllDown: () => undefined,
      }),
    );
    return scheduler;
  }

  const request = (ms: number, priority = 0): Parameters<ModelScheduler['enqueue']>[0] => {
    const data = new Uint8Array(4);
    new DataView(data.buffer).setFloat32(0, ms, true);
    return { batch: 1, tensors: new Map([['x', { name: 'x', dtype: 'F32', shape: [1, 1], data }]]), priority, logPrefix: '' };
  };

  it('preserve_ordering answers in queue order across instances; without it, as the runs finish', async () => {
    for (const preserve of [true, false]) {
      const finished: number[] = [];
      const answered: number[] = [];
      const scheduler = setup({ max_batch_size: 1, dynamic_batching: { preserve_ordering: preserve } }, finished);
      await Promise.all([150, 10].map((ms) => scheduler.enqueue(request(ms)).then(() => answered.push(ms))));
      assert.deepEqual(finished, [10, 150]);
      assert.deepEqual(answered, preserve ? [150, 10] : [10, 150]);
    }
  });

  it('joins a batch in priority order; each request gets its own row back', async () => {
    const finished: number[] = [];
    const scheduler = setup(
      { max_batch_size: 4, dynamic_batching: { max_queue_delay_microseconds: 100_000, priority_levels: 2, default_priority_level: 2 } },
      finished,
    );
    const answers = await Promise.all(
      [
        [1, 2],
        [2, 1],
        [3, 0],
        [4, 1],
      ].map(([ms, p]) =>
        scheduler
          .enqueue(request(ms ?? 0, p))
          .then((out) => new DataView((out.get('y')?.data ?? new Uint8Array(4)).buffer).getFloat32(out.get('y')?.data.byteOffset ?? 0, true)),
      ),
    );
    // One batch of four, run row by row: level 1 first (2, 4), then level 2 (1, 3).
    assert.deepEqual(finished, [2, 4, 1, 3]);
    assert.deepEqual(answers, [1, 2, 3, 4]);
  });
});
