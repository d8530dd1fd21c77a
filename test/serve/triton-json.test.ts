import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  JsonDouble,
  JsonSyntaxError,
  parseTritonJson,
  parseTritonJsonSliced,
  writeDouble,
  writeTritonJson,
  RawJson,
} from '../../src/serve/triton-json.js';

/**
 * The RapidJSON-compatible reader and writer (src/serve/triton-json.ts) on
 * their own. What Triton itself does with each case is checked against the
 * real server in test/serve/json-numbers.test.ts; these are the properties
 * that need no server: agreement with JSON.parse where the grammars agree,
 * slices, depth, and the members RapidJSON keeps.
 */

const parse = (text: string): unknown => parseTritonJson(Buffer.from(text));
/** JsonDouble unwrapped, objects given a normal prototype: comparable with JSON.parse's output. */
function plain(value: unknown): unknown {
  if (value instanceof JsonDouble) return value.value;
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

// Numbers of at most 15 significant digits and no exponent: there correct rounding (JSON.parse) and RapidJSON's
// normal precision (one multiplication or division by a power of ten; test/serve/json-numbers.test.ts) agree.
const shortNumber = fc.oneof(
  fc.integer(),
  fc.integer().map((i) => i / 1000),
  fc.integer().map((i) => i / 1e6),
);
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, shortNumber, fc.string(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(fc.string(), tie('value'), { maxKeys: 5 }),
})).value;

describe('Triton JSON reader', () => {
  it('reads what JSON.parse reads, for documents within both grammars', () => {
    fc.assert(
      fc.property(jsonValue, fc.constantFrom('', ' ', '\n\t '), (value, space) => {
        const text = JSON.stringify(value, null, space);
        assert.deepEqual(plain(parse(text)), JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it('reads a document sliced at any size to the same value as at once', async () => {
    await fc.assert(
      fc.asyncProperty(jsonValue, fc.integer({ min: 1, max: 64 }), async (value, slice) => {
        const bytes = Buffer.from(JSON.stringify(value));
        assert.deepEqual(plain(await parseTritonJsonSliced(bytes, slice)), plain(parseTritonJson(bytes)));
      }),
      { numRuns: 100 },
    );
  });

  it('lets the event loop run between slices of a large document', async () => {
    const bytes = Buffer.from(`[${'0.5,'.repeat(1_000_000)}1]`);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const value = (await parseTritonJsonSliced(bytes, 64 * 1024)) as unknown[];
    clearInterval(timer);
    assert.equal(value.length, 1_000_001);
    assert.ok(ticks > 0, 'no timer ran while the document was parsed');
  });

  it('takes nesting a million deep without overflowing the stack', () => {
    const depth = 1_000_000;
    let value = parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);
    let seen = 0;
    while (Array.isArray(value) && value.length > 0) {
      value = value[0];
      seen++;
    }
    assert.equal(seen, depth - 1);
  });

  it('keeps the first of duplicate keys, as RapidJSON FindMember does, and __proto__ as a plain key', () => {
    const value = parse('{"a":1,"a":2,"__proto__":{"polluted":true}}') as Record<string, unknown>;
    assert.equal(value.a, 1);
    assert.deepEqual(plain(value.__proto__), { polluted: true });
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('reads NaN, Inf, Infinity with or without a minus, and marks whole doubles', () => {
    const value = parse('[NaN,-NaN,Inf,-Inf,Infinity,-Infinity,1,1.0,1e2,-0.0,2e308,1.5]') as unknown[];
    assert.deepEqual(value.slice(0, 6), [NaN, NaN, Infinity, -Infinity, Infinity, -Infinity]);
    assert.equal(value[6], 1);
    assert.deepEqual(
      value.slice(7, 10).map((v) => v instanceof JsonDouble && v.value),
      [1, 100, -0],
    );
    assert.deepEqual(value.slice(10), [Infinity, 1.5]);
  });

  it('stops at the first NUL byte, and reports errors with their offsets', () => {
    assert.deepEqual(plain(parse('{"a":1}\u0000garbage')), { a: 1 });
    for (const [text, reason, offset] of [
      ['', 'The document is empty.', 0],
      ['[1e400]', 'Number too big to be stored in double.', 1],
      ['[1,2', "Missing a comma or ']' after an array element.", 4],
    ] as const) {
      assert.throws(
        () => parse(text),
        (e: unknown) => e instanceof JsonSyntaxError && e.reason === reason && e.offset === offset,
      );
    }
  });
});

describe('Triton JSON writer', () => {
  it('writes doubles that read back to themselves (correctly rounded), in RapidJSON notation', () => {
    fc.assert(
      fc.property(fc.double(), (d) => {
        const text = writeDouble(d);
        assert.ok(Object.is(Number(text), d) || (Number.isNaN(d) && text === 'NaN'), `${d} -> ${text}`);
        assert.match(text, /^(-?\d+\.\d+|-?\d(\.\d+)?e-?\d+|NaN|-?Infinity)$/);
      }),
    );
  });

  it('writes raw JSON in place and everything else as JSON.stringify', () => {
    assert.equal(writeTritonJson({ a: [1, 'x'], b: new RawJson('[NaN]'), c: undefined, d: null }), '{"a":[1,"x"],"b":[NaN],"d":null}');
  });
});
