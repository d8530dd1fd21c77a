/**
 * JSON.stringify(value, null, 2), produced in pieces. A report of a million
 * anchors is some 400 MB of indented JSON: built as one string it costs that
 * much again on top of the report, and V8 refuses strings past ~512 MB.
 * Large arrays are therefore written a batch of elements at a time (each
 * element is small; a batch goes through JSON.stringify as an array of its
 * own and is re-indented); everything else is written whole. The text is
 * byte for byte what JSON.stringify gives (test/present/json-chunks.test.ts
 * holds it to that).
 */

/** Arrays longer than this are written in batches. */
const SPLIT_ABOVE = 256;

/**
 * Elements of a large array stringified together. One JSON.stringify per
 * element, each re-indented, made validate's JSON report of 1,000 models
 * (80 KB) take 2 to 7 ms where one JSON.stringify of it takes 0.2 ms (issue
 * 26); a batch costs about what its share of one call does, and still
 * bounds the text held at once.
 */
export const ELEMENTS_PER_BATCH = 128;

function omittedInObject(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

function isPlainContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  if (typeof value !== 'object' || value === null) return false;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function whole(value: unknown, indent: string): string {
  const text = JSON.stringify(value, null, 2) as string | undefined;
  // Inside an array JSON.stringify writes null for what it cannot represent.
  if (text === undefined) return 'null';
  return indent === '' ? text : text.replace(/\n/g, `\n${indent}`);
}

/** Whether `value` holds, anywhere outside a large array's elements, an array worth splitting. */
function worthSplitting(value: unknown, depth: number): boolean {
  if (!isPlainContainer(value) || depth > 8) return false;
  if (Array.isArray(value)) return value.length > SPLIT_ABOVE || value.some((v) => worthSplitting(v, depth + 1));
  return Object.values(value).some((v) => worthSplitting(v, depth + 1));
}

function* pieces(value: unknown, indent: string): Generator<string> {
  if (!worthSplitting(value, 0)) {
    yield whole(value, indent);
    return;
  }
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    yield '[\n';
    if (value.length > SPLIT_ABOVE) {
      for (let i = 0; i < value.length; i += ELEMENTS_PER_BATCH) {
        // "[\n  a,\n  b\n]": the elements, each line indented by two more than the batch's own brackets.
        const text = JSON.stringify(value.slice(i, i + ELEMENTS_PER_BATCH), null, 2);
        const lines = text.slice(2, -2);
        yield indent === '' ? lines : `${indent}${lines.replace(/\n/g, `\n${indent}`)}`;
        yield i + ELEMENTS_PER_BATCH < value.length ? ',\n' : '\n';
      }
      yield `${indent}]`;
      return;
    }
    for (let i = 0; i < value.length; i++) {
      yield inner;
      yield* pieces(value[i], inner);
      yield i < value.length - 1 ? ',\n' : '\n';
    }
    yield `${indent}]`;
    return;
  }
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).filter((k) => !omittedInObject(object[k]));
  yield '{\n';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] ?? '';
    yield `${inner}${JSON.stringify(key)}: `;
    yield* pieces(object[key], inner);
    yield i < keys.length - 1 ? ',\n' : '\n';
  }
  yield `${indent}}`;
}

/** The JSON text of `value` (as JSON.stringify(value, null, 2)), in pieces of about `chunkBytes` characters. */
export function* jsonChunks(value: unknown, chunkBytes = 1 << 16): Generator<string> {
  let buffer = '';
  for (const piece of pieces(value, '')) {
    buffer += piece;
    if (buffer.length >= chunkBytes) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer !== '') yield buffer;
}
