// Where parsePbtxt says each field is (ParseResult.positions): what validate's
// findings point at. Validate's own parse makes them on demand, by a second
// parse, the first time they are looked at (parsePbtxtPositionsOnDemand):
// each case runs on both, which must agree.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePbtxt, parsePbtxtPositionsOnDemand } from '../../src/triton/pbtxt-parser.js';

const PARSERS = [
  ['parsePbtxt', parsePbtxt],
  ['parsePbtxtPositionsOnDemand', parsePbtxtPositionsOnDemand],
] as const;

const CONFIG = [
  'name: "m"',
  'max_batch_size: 4',
  'input [',
  '  {',
  '    name: "a"',
  '    data_type: TYPE_FP32',
  '    dims: [ 1, 28, 28 ]',
  '  },',
  '  {',
  '\tname: "b"',
  '  }',
  ']',
  'parameters { key: "k" value { string_value: "v" } }',
  '',
].join('\n');

for (const [name, parse] of PARSERS) {
  describe(`config positions (${name})`, () => {
    it('give the line and column of each field, element and scalar element, with tabs at stops of 8', () => {
      const { positions } = parse(CONFIG);
      const at = (path: string): string | undefined => {
        const p = positions.get(path);
        return p === undefined ? undefined : `${p.line}:${p.column}`;
      };
      assert.equal(at('name'), '1:1');
      assert.equal(at('max_batch_size'), '2:1');
      assert.equal(at('input'), '3:1');
      assert.equal(at('input[0]'), '4:3');
      assert.equal(at('input[0].name'), '5:5');
      assert.equal(at('input[0].dims'), '7:5');
      assert.equal(at('input[0].dims[2]'), '7:20');
      assert.equal(at('input[1]'), '9:3');
      assert.equal(at('input[1].name'), '10:9');
      assert.equal(at('parameters[0].key'), '13:14');
      assert.equal(at('parameters[0].value.string_value'), '13:31');
      assert.equal(at('output'), undefined);
    });

    it('behave as a map in every way: size, has, keys, entries and forEach agree', () => {
      const { positions } = parse(CONFIG);
      const keys = [...positions.keys()];
      assert.equal(positions.size, keys.length);
      assert.ok(keys.every((k) => positions.has(k)));
      assert.deepEqual(
        [...positions.entries()].map(([k]) => k),
        keys,
      );
      assert.deepEqual(
        [...positions].map(([k]) => k),
        keys,
      );
      assert.deepEqual(
        [...positions.values()],
        keys.map((k) => positions.get(k)),
      );
      const seen: string[] = [];
      positions.forEach((_value, key, map) => {
        assert.equal(map, positions);
        seen.push(key);
      });
      assert.deepEqual(seen, keys);
      // In the order they were stored: an element after its fields.
      assert.deepEqual(keys.slice(0, 7), [
        'name',
        'max_batch_size',
        'input',
        'input[0].name',
        'input[0].data_type',
        'input[0].dims',
        'input[0].dims[0]',
      ]);
      assert.ok(keys.indexOf('input[0]') > keys.indexOf('input[0].dims[2]'));
    });

    it('keep the first 64 scalar elements of a list, then only the field', () => {
      const dims = Array.from({ length: 70 }, (_, i) => String(i + 1)).join(', ');
      const { positions } = parse(`input { name: "a" data_type: TYPE_FP32 dims: [ ${dims} ] }`);
      assert.ok(positions.has('input[0].dims[63]'));
      assert.ok(!positions.has('input[0].dims[64]'));
      assert.ok(positions.has('input[0].dims'));
    });
  });
}

describe('positions on demand', () => {
  it('are those the eager parse keeps, entry for entry and in order, past the limits on kept positions too', () => {
    const many = (n: number, item: (i: number) => string, between = '\n'): string => Array.from({ length: n }, (_, i) => item(i)).join(between);
    const texts = [
      CONFIG,
      // Past FINE_ELEMENTS (1,000) elements only an element's own position is kept; fields nested in it keep none.
      many(1005, (i) => `input { name: "t${i}" data_type: TYPE_FP32 dims: [ ${i % 7}, 2 ] }`),
      `ensemble_scheduling { step [ ${many(1003, (i) => `{ model_name: "m${i}" input_map { key: "a" value: "b${i}" } }`, ',\n')} ] }`,
      `parameters [ { key: "x" value: { string_value: "y" } }, { key: "z" value { string_value: "w" } } ]\nname: "n"; backend: "b",`,
    ];
    for (const text of texts) {
      const eager = [...parsePbtxt(text).positions];
      const onDemand = [...parsePbtxtPositionsOnDemand(text).positions];
      assert.deepEqual(onDemand, eager);
      assert.deepEqual([...parsePbtxtPositionsOnDemand(Buffer.from(text)).positions], eager, 'from bytes as from text');
    }
  });

  it('leave parsePbtxt, the library function, with a Map that can be cloned', () => {
    const { positions } = parsePbtxt(CONFIG);
    assert.ok(positions instanceof Map);
    assert.deepEqual(structuredClone(positions), positions);
  });
});
