// Where parsePbtxt says each field is (ParseResult.positions): what validate's
// findings point at. They are made on demand, by a second parse, the first
// time they are looked at (src/triton/pbtxt-parser.ts, PositionsOnDemand).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';

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

describe('config positions', () => {
  it('give the line and column of each field, element and scalar element, with tabs at stops of 8', () => {
    const { positions } = parsePbtxt(CONFIG);
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
    const { positions } = parsePbtxt(CONFIG);
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
    const { positions } = parsePbtxt(`input { name: "a" data_type: TYPE_FP32 dims: [ ${dims} ] }`);
    assert.ok(positions.has('input[0].dims[63]'));
    assert.ok(!positions.has('input[0].dims[64]'));
    assert.ok(positions.has('input[0].dims'));
  });
});
