/**
 * JSON.stringify(value, null, 2), produced in pieces. A report of a million
 * anchors is some 400 MB of indented JSON: built as one string it costs that
 * much again on top of the report, and V8 refuses strings past ~512 MB.
 * Large arrays are therefore written a batch of elements at a time (a batch
 * goes through JSON.stringify as an array of its own and is re-indented);
 * everything else is written whole. The text is byte for byte what
 * JSON.stringify gives (test/present/json-chunks.test.ts holds it to that),
 * but for one thing no value this project writes has: an element's own
 * toJSON(key) is given its index within its batch.
 */

/** Arrays longer than this are written in batches. */
const SPLIT_ABOVE = 256;

/**
 * Elements of a large array stringified together, at most. One
 * JSON.stringify per element, each re-indented, made validate's JSON report
 * of 1,000 models (80 KB) take 2 to 7 ms where one JSON.stringify of it
 * takes 0.2 ms (issue 26); a batch costs about what its share of one call
 * does.
 */
export const ELEMENTS_PER_BATCH = 128;

/**
 * The text a batch aims at, in characters: the next batch takes as many
 * elements as would fill it at the size of the last one's, so that a batch
 * of large elements (models with thousands of findings each) stays as small
 * as one element would be.
 */
export const BATCH_TEXT = 64 * 1024;

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

/** JSON.stringify(v, null, 2)'s text, its lines after the first indented by `indent` more: as it stands at that depth. */
function reindent(text: string, indent: string): string {
  return indent === '' ? text : text.replace(/\n/g, `\n${indent}`);
}

function whole(value: unknown, indent: string): string {
  const text = JSON.stringify(value, null, 2) as string | undefined;
  // Inside an array JSON.stringify writes null for what it cannot represent.
  if (text === undefined) return 'null';
  return reindent(text, indent);
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
      yield* batches(value, indent);
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

/** The elements of a large array, a batch at a time; the first alone, so that its size picks the second batch's. */
function* batches(value: readonly unknown[], indent: string): Generator<string> {
  let size = 1;
  // Lowered for good by a batch too long for one string: the elements that follow are likely as large.
  let cap = ELEMENTS_PER_BATCH;
  for (let i = 0; i < value.length;) {
    const n = Math.min(size, value.length - i);
    let text: string;
    try {
      text = JSON.stringify(value.slice(i, i + n), null, 2);
    } catch (error) {
      // Too long for one string (or nested too deep): fewer at a time, down to one element, whose error stands.
      if (!(error instanceof RangeError) || n === 1) throw error;
      cap = Math.max(1, n >> 1);
      size = cap;
      continue;
    }
    // "[\n  a,\n  b\n]": the elements, each line indented by two more than the batch's own brackets.
    const lines = text.slice(2, -2);
    yield `${indent}${reindent(lines, indent)}`;
    i += n;
    yield i < value.length ? ',\n' : '\n';
    size = Math.max(1, Math.min(cap, Math.floor((BATCH_TEXT * n) / text.length)));
  }
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
