import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configDifferences } from '../../src/triton/config-match.js';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';

const NEEDED = parsePbtxt(`
name: "m"
backend: "poplar"
max_batch_size: 1
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "y" data_type: TYPE_INT32 dims: [ 1 ] reshape { shape: [ ] } } ]
output [ { name: "z" data_type: TYPE_FP16 dims: [ 2, 2 ] } ]
instance_group [ { kind: KIND_CPU } ]
`).message;

const differences = (existing: string, needed = NEEDED): string[] =>
  configDifferences(parsePbtxt(existing).message, needed, 'm').map((d) => `${d.field}: existing ${d.existing}, needed ${d.needed}`);

describe('configDifferences: config.pbtxt on disk against the one a PopEF needs', () => {
  it('is empty for the same messages however written: comments, order, defaults, no name, user fields', () => {
    assert.deepEqual(
      differences(`
# by hand
output { dims: [2, 2] data_type: TYPE_FP16 name: "z" label_filename: "l.txt" }
input { name: "y" dims: 1 data_type: TYPE_INT32 reshape: { } optional: false }
input { name: "x" data_type: TYPE_FP32 dims: 4 allow_ragged_batch: false }
backend: 'poplar' max_batch_size: 1
instance_group { kind: KIND_CPU count: 4 }
version_policy { specific { versions: 1 } }
dynamic_batching { }
parameters { key: "k" value { string_value: "v" } }
`),
      [],
    );
  });

  it('names each field that differs, existing against needed, as config.pbtxt writes it', () => {
    assert.deepEqual(
      differences(`
name: "other"
backend: "poplar"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP16 dims: [ 1, 4 ] }, { name: "y" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "w" data_type: TYPE_FP16 dims: [ 2, 2 ] } ]
`),
      [
        'name: existing "other", needed "m"',
        'max_batch_size: existing 8, needed 1',
        'input "x" data_type: existing TYPE_FP16, needed TYPE_FP32',
        'input "x" dims: existing [ 1, 4 ], needed [ 4 ]',
        'input "y" reshape: existing (unset), needed { }',
        'output "z": existing (none), needed { name: "z" data_type: TYPE_FP16 dims: [ 2, 2 ] }',
        'output "w": existing { name: "w" data_type: TYPE_FP16 dims: [ 2, 2 ] }, needed (none)',
      ],
    );
  });

  it('compares dynamic_batching and parameters only when the new config has them, parameters by key', () => {
    const needed = parsePbtxt(`
backend: "poplar"
max_batch_size: 1
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "y" data_type: TYPE_INT32 dims: [ 1 ] reshape { shape: [ ] } } ]
output [ { name: "z" data_type: TYPE_FP16 dims: [ 2, 2 ] } ]
dynamic_batching { preferred_batch_size: [ 1 ] }
parameters [ { key: "timeout_ns" value { string_value: "500" } } ]
`).message;
    const base = `backend: "poplar" max_batch_size: 1
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "y" data_type: TYPE_INT32 dims: [ 1 ] reshape { } } ]
output [ { name: "z" data_type: TYPE_FP16 dims: [ 2, 2 ] } ]`;
    assert.deepEqual(differences(base, needed), [
      'dynamic_batching: existing (unset), needed { preferred_batch_size: [ 1 ] }',
      'parameters "timeout_ns": existing (unset), needed { string_value: "500" }',
    ]);
    assert.deepEqual(
      differences(
        `${base}
dynamic_batching { preferred_batch_size: 1 max_queue_delay_microseconds: 5 }
parameters { key: "mine" value { string_value: "x" } }
parameters { key: "timeout_ns" value { string_value: "9" } }`,
        needed,
      ),
      ['parameters "timeout_ns" string_value: existing "9", needed "500"'],
    );
  });
});
