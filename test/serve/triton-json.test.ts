import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseInferBody } from '../../src/serve/http-infer-body.js';
import { readJsonData, writeJsonData } from '../../src/serve/json-tensors.js';
import {
  JsonDouble,
  JsonSyntaxError,
  isJsonInt,
  isJsonNumber,
  isJsonUInt,
  jsonNumber,
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

describe('Triton JSON integers past 2^53', () => {
  it('reads integer tokens exactly across 64 bits: a number while safe, a bigint past it, a double past 64 bits', () => {
    const cases: [string, unknown][] = [
      ['9007199254740991', 2 ** 53 - 1],
      ['-9007199254740991', -(2 ** 53 - 1)],
      ['9007199254740992', 2n ** 53n],
      ['9007199254740993', 2n ** 53n + 1n],
      ['-9007199254740993', -(2n ** 53n) - 1n],
      ['9223372036854775807', 2n ** 63n - 1n],
      ['-9223372036854775808', -(2n ** 63n)],
      ['9223372036854775808', 2n ** 63n],
      ['18446744073709551615', 2n ** 64n - 1n],
      ['0', 0],
      ['-0', 0],
    ];
    for (const [text, expected] of cases) assert.equal(parse(text), expected, text);
    // Past RapidJSON's 64 bits the token is a double, rounded once: not an integer to Triton's accessors.
    for (const [text, value] of [
      ['18446744073709551616', 2 ** 64],
      ['-9223372036854775809', -(2 ** 63)],
    ] as const) {
      const v = parse(text);
      assert.ok(v instanceof JsonDouble, text);
      assert.equal(v.value, value, text);
    }
    // Digits past 64 bits go on as RapidJSON's double arithmetic (its value is checked against Triton in json-numbers.test.ts).
    assert.ok(parse('123456789012345678901234567890') instanceof JsonDouble);
    // A fraction or an exponent keeps a long integer part a double, as before.
    assert.ok(parse('9007199254740993.0') instanceof JsonDouble);
  });

  it('gives the same values inside arrays and objects, and sliced at any size', async () => {
    const text = '{"id":18446744073709551615,"data":[9007199254740993,-9223372036854775808,1,18446744073709551616]}';
    const whole = parse(text) as { id: unknown; data: unknown[] };
    assert.equal(whole.id, 2n ** 64n - 1n);
    assert.deepEqual(whole.data.slice(0, 3), [2n ** 53n + 1n, -(2n ** 63n), 1]);
    for (const size of [1, 2, 7]) assert.deepEqual(await parseTritonJsonSliced(new TextEncoder().encode(text), size), whole);
  });

  it("answers as Triton's accessors do: AsUInt to 2^64 - 1, AsInt to 2^63 - 1, AsDouble for any number", () => {
    const [max53, big, int64Max, int64Min, uint64Max, past, whole] = parse(
      '[9007199254740991,9007199254740993,9223372036854775807,-9223372036854775808,18446744073709551615,18446744073709551616,1.0]',
    ) as unknown[];
    assert.deepEqual([max53, big, int64Max, int64Min, uint64Max, past, whole].map(isJsonUInt), [true, true, true, false, true, false, false]);
    assert.deepEqual([max53, big, int64Max, int64Min, uint64Max, past, whole].map(isJsonInt), [true, true, true, true, false, false, false]);
    assert.deepEqual([max53, big, uint64Max, past, whole, 'x'].map(isJsonNumber), [true, true, true, true, true, false]);
    // GetDouble: the nearest double.
    assert.deepEqual([big, uint64Max, past, whole].map(jsonNumber), [2 ** 53, 2 ** 64, 2 ** 64, 1]);
  });

  it('stores INT64 and UINT64 elements exactly and writes them back digit for digit', () => {
    const int64 = parse('[9007199254740993,-9223372036854775808,9223372036854775807,-1,0]') as unknown[];
    const bytes = readJsonData('x', 'INT64', [5], int64);
    assert.deepEqual([...new BigInt64Array(bytes.slice().buffer)], [2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n, -1n, 0n]);
    assert.deepEqual(writeJsonData('INT64', bytes), new RawJson('[9007199254740993,-9223372036854775808,9223372036854775807,-1,0]'));
    const uint64 = parse('[18446744073709551615,9223372036854775808,9007199254740993,1]') as unknown[];
    const ubytes = readJsonData('x', 'UINT64', [4], uint64);
    assert.deepEqual([...new BigUint64Array(ubytes.slice().buffer)], [2n ** 64n - 1n, 2n ** 63n, 2n ** 53n + 1n, 1n]);
    assert.deepEqual(writeJsonData('UINT64', ubytes), new RawJson('[18446744073709551615,9223372036854775808,9007199254740993,1]'));
    // Safe negative numbers take the no-bigint path: their two's complement halves.
    const small = readJsonData('x', 'INT64', [3], [-(2 ** 53 - 1), -(2 ** 32), 2 ** 32 + 1]);
    assert.deepEqual([...new BigInt64Array(small.slice().buffer)], [-(2n ** 53n - 1n), -(2n ** 32n), 2n ** 32n + 1n]);
    // AsInt refuses a Uint64 past 2^63 - 1; AsUInt refuses a negative; a double past 64 bits is neither.
    const refuses = (datatype: string, text: string, message: RegExp): void =>
      assert.throws(
        () => readJsonData('x', datatype, [1], parse(text)),
        (e: Error) => message.test(e.message),
      );
    refuses('INT64', '[9223372036854775808]', /^Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer$/);
    refuses('UINT64', '[-1]', /^Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer$/);
    refuses('UINT64', '[18446744073709551616]', /non-unsigned-integer as unsigned-integer/);
    // Narrower types take Triton's C casts (low bits), and FP64 the nearest double.
    assert.deepEqual([...readJsonData('x', 'UINT8', [2], parse('[18446744073709551615,9007199254740993]') as unknown[])], [255, 1]);
    assert.deepEqual([...new Float64Array(readJsonData('x', 'FP64', [1], parse('[9007199254740993]') as unknown[]).slice().buffer)], [2 ** 53]);
  });

  it('keeps a shape dimension past 2^53 exact, as the int64 Triton keeps a uint64 dimension in (2^64 - 1 is -1)', () => {
    const header = parse(
      '{"inputs":[{"name":"x","datatype":"FP32","shape":[9007199254740993,18446744073709551615,2],"parameters":{"binary_data_size":0}}]}',
    );
    const { request } = parseInferBody('m', '', header as Record<string, unknown>, Buffer.alloc(0), true);
    const input = request.inputs[0];
    assert.ok(input !== undefined);
    assert.deepEqual(input.exactShape, [2n ** 53n + 1n, -1n, 2n]);
    assert.deepEqual(input.shape, [2 ** 53, -1, 2]);
    // Safe dimensions need no exact copy.
    const small = parse('{"inputs":[{"name":"x","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":0}}]}');
    assert.equal(parseInferBody('m', '', small as Record<string, unknown>, Buffer.alloc(0), true).request.inputs[0]?.exactShape, undefined);
  });

  it('writes a bigint as its digits, as RapidJSON writes an Int64 or Uint64', () => {
    const text = '{"a":18446744073709551615,"b":[-9223372036854775808,1,"x"],"c":9007199254740993}';
    assert.equal(writeTritonJson(parse(text)), text);
  });

  it('passes sequence ids 2^53 + 1 and 2^64 - 1 to the scheduler exactly', () => {
    for (const id of ['9007199254740993', '18446744073709551615', '9223372036854775808']) {
      const header = parse(`{"parameters":{"sequence_id":${id},"sequence_start":true,"priority":${id},"timeout":${id}},"inputs":[]}`);
      const { request } = parseInferBody('m', '', header as Record<string, unknown>, Buffer.alloc(0), false);
      assert.deepEqual(request.sequence, { id: BigInt(id), start: true, end: false });
    }
    for (const id of ['18446744073709551616', '-1', '-9223372036854775808']) {
      const header = parse(`{"parameters":{"sequence_id":${id}},"inputs":[]}`) as Record<string, unknown>;
      assert.throws(
        () => parseInferBody('m', '', header, Buffer.alloc(0), false),
        (e: Error) => /^Unable to parse 'sequence_id': attempt to access JSON non-string as string$/.test(e.message),
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
