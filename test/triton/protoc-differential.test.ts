import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { PopefError } from '../../src/errors.js';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';
import { mutatedSnippet, validSnippet } from './pbtxt-corpus.js';
import { protocEncode } from './protoc-oracle.js';
import { decodeBinary, normalize } from './protobuf-wire.js';

/**
 * protoc 3.21 (Debian's protobuf-compiler, the parser Triton links) is the
 * oracle: for every snippet our parser must accept exactly when
 * `protoc --encode=inference.ModelConfig schemas/model_config.proto` does,
 * yield the same message, and otherwise fail at the same line:column with
 * the same message as protoc's first error.
 */
function outcome(text: string): { ours: string; protoc: string } {
  let ours: string;
  try {
    ours = `ok ${JSON.stringify(normalize('inference.ModelConfig', parsePbtxt(text).message))}`;
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    ours = `${error.line}:${error.column}: ${error.message}`;
  }
  const o = protocEncode(text);
  const protoc = o.ok
    ? `ok ${JSON.stringify(normalize('inference.ModelConfig', decodeBinary('inference.ModelConfig', o.bytes)))}`
    : `${o.line}:${o.column}: ${o.message}`;
  return { ours, protoc };
}

describe('pbtxt parser vs protoc', () => {
  it('agrees on generated valid snippets (every syntax form)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const text = validSnippet(seed);
        const { ours, protoc } = outcome(text);
        assert.equal(ours, protoc, `seed ${seed}: ${JSON.stringify(text)}`);
      }),
      { numRuns: 250 },
    );
  });

  it('agrees on generated damaged snippets (errors, positions, messages)', () => {
    let rejected = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const text = mutatedSnippet(seed);
        const { ours, protoc } = outcome(text);
        if (!protoc.startsWith('ok ')) rejected += 1;
        assert.equal(ours, protoc, `seed ${seed}: ${JSON.stringify(text)}`);
      }),
      { numRuns: 350 },
    );
    // The corpus must really exercise the error paths.
    assert.ok(rejected > 100, `only ${rejected} of 350 damaged snippets were rejected`);
  });

  // Hand-picked cases of protoc 3.21.12's text-format parse errors, and edge cases found along the way.
  const cases = [
    'input { data_type: TYPE_FLOAT }',
    'input { data_type: "TYPE_FP32" }',
    'name: abc',
    'input { name "a" }',
    'name: "a" name: "b"',
    'dynamic_batching {} sequence_batching {}',
    'input { dims: [1,] }',
    'input { dims: [1 2] }',
    'max_batch_size: 1.0',
    'max_batch_size: 3000000000',
    'version_policy { latest { num_versions: -1 } }',
    'response_cache { enable: yes }',
    '// comment',
    'name: "a\nb"',
    'max_batch_size: 08',
    'max_batch_size: 0 max_batch_size: 0',
    'max_batch_size: 0 max_batch_size: 5 max_batch_size: 1',
    'parameters { key: "k" value: "v" }',
    'parameters [{ key: "a" value: { string_value: "1" } }, { value { string_value: "2" } key: "a" }]',
    'input [ name: "a" ]',
    '[ext.x]: 1',
    'name: "\\U0001F600\\U00110000"',
    'name:\t\t"x" foo: 1',
    'name: "x"\u0001 foo: 1',
    'not1.5e',
    'input { data_type: 99 }',
    'sequence_batching { control_input { control { fp32_false_true: [1.5, inf, -inf, nan, 1e3, 2f, .5, 5., -0] } } }',
    'sequence_batching { direct { minimum_slot_utilization: 01.5 } }',
    'model_warmup { inputs { key: "a" value { zero_data: false random_data: true } } }',
    'version_policy { all {} latest {} }',
    'input { dims: [-1, 0x7fffffffffffffff, -9223372036854775808] }',
    // A NUL byte is where protobuf's tokenizer reads the end of its buffer: it ends a string and a comment.
    'name: "a\u0000b"',
    "name: '\u0000",
    'name: "x" # comment\u0000 foo: 1',
    '# comment\u0000',
    'name: "x"\u0000',
    // Names of Object.prototype's members are no fields (the parser once looked fields up on plain objects).
    'constructor: 1',
    '__proto__ {}',
    'toString: 1',
    'parameters { value { constructor: 1 } }',
  ];
  for (const text of cases) {
    it(`agrees on ${JSON.stringify(text)}`, () => {
      const { ours, protoc } = outcome(text);
      assert.equal(ours, protoc);
    });
  }
});
