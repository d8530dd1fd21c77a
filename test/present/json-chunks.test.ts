import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ELEMENTS_PER_BATCH, jsonChunks } from '../../src/present/json-chunks.js';

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
    // A large array at the top, split into batches with a short last one.
    const top = Array.from({ length: 3 * 128 + 5 }, (_, i) => (i % 5 === 0 ? [i, { v: i }] : { i, s: `x${i}`, u: undefined }));
    assert.equal(text(top), JSON.stringify(top, null, 2));
  });

  it('never holds the whole text in one piece for a large array: a chunk is at most its size and one batch of elements', () => {
    const anchors = Array.from({ length: 100_000 }, (_, i) => ({ name: `anchor_${i}` }));
    const chunks = [...jsonChunks({ anchors }, 1 << 16)];
    assert.ok(chunks.length > 10);
    // The largest batch, as JSON.stringify writes it at this depth (its brackets and an indent per line more).
    const batch = JSON.stringify(anchors.slice(-ELEMENTS_PER_BATCH), null, 4).length;
    assert.ok(batch < 8 * 1024, `batch of ${batch} characters`);
    const longest = Math.max(...chunks.map((c) => c.length));
    assert.ok(longest <= (1 << 16) + batch, `longest chunk ${longest}`);
  });

  it('keeps a batch of large elements as small as one of them: the batch size follows the elements’ size', () => {
    // 300 models of 250 findings each, some 100 KB of JSON apiece (validate --max-findings-per-rule all).
    const models = Array.from({ length: 300 }, (_, i) => ({
      name: `m${i}`,
      findings: Array.from({ length: 250 }, (_, j) => ({ message: `f${j} `.repeat(80) })),
    }));
    const value = { models };
    const chunks = [...jsonChunks(value)];
    assert.equal(chunks.join(''), JSON.stringify(value, null, 2));
    const element = JSON.stringify(models[0], null, 4).length;
    assert.ok(element > 90_000, `element of ${element} characters`);
    const longest = Math.max(...chunks.map((c) => c.length));
    assert.ok(longest <= (1 << 16) + 2 * element, `longest chunk ${longest}, an element ${element}`);
  });

  it('writes fewer elements at a time when a batch is too long for one string, down to one', () => {
    const stringify = JSON.stringify;
    const sizes: number[] = [];
    // A stand-in for V8's string limit: any array of more than 3 of these elements is "too long".
    JSON.stringify = ((v: unknown, r?: never, s?: number) => {
      if (Array.isArray(v) && v.length > 0 && (v[0] as { big?: true } | undefined)?.big === true) {
        sizes.push(v.length);
        if (v.length > 3) throw new RangeError('Invalid string length');
      }
      return stringify(v, r, s);
    }) as typeof JSON.stringify;
    try {
      const value = Array.from({ length: 300 }, (_, i) => ({ big: true as const, i }));
      assert.equal(text(value), stringify(value, null, 2));
      // The first element alone, then one descent from a full batch to one that fits, and no full batch tried again.
      assert.deepEqual(sizes.slice(0, 9), [1, 128, 64, 32, 16, 8, 4, 2, 2]);
      assert.ok(
        sizes.slice(8).every((n) => n <= 2),
        sizes.join(','),
      );
    } finally {
      JSON.stringify = stringify;
    }
  });
});
