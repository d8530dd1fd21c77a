import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { PopefError } from '../../src/errors.js';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';
import { canonicalize, printPbtxt } from '../../src/triton/pbtxt-printer.js';
import { renderProto } from '../../src/triton/proto-source.js';
import { ENUMS, MESSAGES, isEnumName, isMessageName, type FieldSpec } from '../../src/triton/schema.js';
import { ROOT } from '../helpers.js';
import { validSnippet } from './pbtxt-corpus.js';

const EXAMPLES = join(ROOT, 'fixtures/graphcore-examples');

describe('pbtxt printer', () => {
  it('round-trips every config the generated corpus parses to: parse(print(x)) == canonicalize(x)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const x = parsePbtxt(validSnippet(seed)).message;
        const text = printPbtxt(x, { tritonVersion: 'latest' });
        const back = parsePbtxt(text).message;
        assert.deepEqual(back, canonicalize('inference.ModelConfig', x));
        assert.equal(printPbtxt(back, { tritonVersion: 'latest' }), text, 'printing is idempotent');
      }),
      { numRuns: 400 },
    );
  });

  it('prints the canonical layout', () => {
    const text = printPbtxt({
      name: 'mnist',
      backend: 'poplar',
      max_batch_size: 1,
      input: [{ name: 'digit_image', data_type: 'TYPE_FP32', dims: [1, 28, 28] }],
      output: [{ name: 'output_labels', data_type: 'TYPE_FP32', dims: [10] }],
      dynamic_batching: {},
      instance_group: [{ kind: 'KIND_CPU' }],
      parameters: [
        { key: 'timeout_ns', value: { string_value: '500000' } },
        { key: 'synchronous_execution', value: { string_value: '1' } },
      ],
    });
    assert.equal(
      text,
      `name: "mnist"
backend: "poplar"
max_batch_size: 1
input [
  {
    name: "digit_image"
    data_type: TYPE_FP32
    dims: [ 1, 28, 28 ]
  }
]
output [
  {
    name: "output_labels"
    data_type: TYPE_FP32
    dims: [ 10 ]
  }
]
dynamic_batching { }
instance_group [
  {
    kind: KIND_CPU
  }
]
parameters [
  {
    key: "synchronous_execution"
    value {
      string_value: "1"
    }
  },
  {
    key: "timeout_ns"
    value {
      string_value: "500000"
    }
  }
]
`,
    );
  });

  it('escapes strings so that they read back byte for byte', () => {
    const name = 'quote " backslash \\ tab \t newline \n bell \u0007 ü 😀';
    assert.equal(parsePbtxt(printPbtxt({ name })).message.name, name);
  });

  it('refuses fields and enum values newer than the target release, naming them', () => {
    const tryPrint = (config: Parameters<typeof printPbtxt>[0], version?: string): string => {
      try {
        printPbtxt(config, version === undefined ? {} : { tritonVersion: version });
        return 'printed';
      } catch (error) {
        assert.ok(error instanceof PopefError);
        return error.message;
      }
    };
    assert.equal(
      tryPrint({ input: [{ name: 'a', optional: true }] }),
      'field "input[0].optional" was introduced in Triton 22.01; the target is Triton 21.05',
    );
    assert.equal(tryPrint({ input: [{ name: 'a', optional: true }] }, '22.01'), 'printed');
    assert.equal(tryPrint({ response_cache: { enable: true } }), 'field "response_cache" was introduced in Triton 21.10; the target is Triton 21.05');
    assert.equal(
      tryPrint({ input: [{ data_type: 'TYPE_BF16' }] }),
      'value TYPE_BF16 of input[0].data_type was introduced in Triton 22.05; the target is Triton 21.05',
    );
    assert.equal(
      tryPrint({ sequence_batching: { iterative_sequence: true } }, '23.08'),
      'field "sequence_batching.iterative_sequence" was introduced in Triton 23.11; the target is Triton 23.08',
    );
    assert.equal(tryPrint({ sequence_batching: { iterative_sequence: true } }, '23.11'), 'printed');
    // A default value is not printed, so it cannot trip the check.
    assert.equal(tryPrint({ input: [{ name: 'a', optional: false }] }), 'printed');
  });

  it("parses Graphcore's four example configs and prints them back equivalently", async () => {
    for (const model of ['bert', 'resnet50', 'efficientnet-b0', 'efficientnet-b4']) {
      const text = await readFile(join(EXAMPLES, model, 'config.pbtxt'), 'utf8');
      const parsed = parsePbtxt(text).message;
      assert.equal(parsed.backend, 'poplar');
      assert.deepEqual(parsePbtxt(printPbtxt(parsed)).message, canonicalize('inference.ModelConfig', parsed));
    }
  });
});

describe('schema table', () => {
  it('names only known types', () => {
    const scalars = new Set(['string', 'bool', 'int32', 'int64', 'uint32', 'uint64', 'float', 'double']);
    for (const [message, fields] of Object.entries(MESSAGES as unknown as Record<string, Record<string, FieldSpec>>)) {
      for (const [name, spec] of Object.entries(fields)) {
        assert.ok(scalars.has(spec.t) || isEnumName(spec.t) || isMessageName(spec.t), `${message}.${name} has unknown type ${spec.t}`);
      }
    }
    for (const values of Object.values(ENUMS)) assert.ok(values.length > 0);
  });

  it('schemas/model_config.proto is generated from it (run npm run generate:proto after a change)', async () => {
    assert.equal(await readFile(join(ROOT, 'schemas/model_config.proto'), 'utf8'), renderProto());
  });
});
