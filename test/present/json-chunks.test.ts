import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { jsonChunks } from '../../src/present/json-chunks.js';

const text = (value: unknown, chunk?: number): string => [...jsonChunks(value, chunk)].join('');

describe('jsonChunks', () => {
  it('gives exactly what JSON.stringify(value, null, 2) gives, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.integer({ min: 1, max: 64 }), (value, chunk) => {
        assert.equal(text(value, chunk), JSON.stringify(value, null, 2));
      }),
      { numRuns: 300 },
    );
  });

  it('matches it where arrays are split: large arrays at any depth, undefined members, objects with toJSON', () => {
    const anchors = Array.from({ length: 1000 }, (_, i) => ({ name: `a${i}`, shape: [1, i], skipped: undefined, at: i % 7 === 0 ? undefined : i }));
    const value = {
      file: 'x.popef',
      models: [{ metadata: { anchors, programs: Array.from({ length: 300 }, (_, i) => i) }, when: new Date(0) }],
      holes: [undefined, () => 1, ...Array.from({ length: 300 }, () => null)],
      empty: [],
      nested: { deep: { list: Array.from({ length: 257 }, (_, i) => [i, { v: `s${i}` }]) } },
    };
    assert.equal(text(value), JSON.stringify(value, null, 2));
    assert.equal(text(value, 10), JSON.stringify(value, null, 2));
  });

  it('never holds the whole text in one piece for a large array', () => {
    const value = { anchors: Array.from({ length: 100_000 }, (_, i) => ({ name: `anchor_${i}` })) };
    const chunks = [...jsonChunks(value, 1 << 16)];
    assert.ok(chunks.length > 10);
    assert.ok(chunks.every((c) => c.length < (1 << 16) + 200));
  });
});
