/**
 * JSON.stringify(value, null, 2), produced in pieces. A report of a million
 * anchors is some 400 MB of indented JSON: built as one string it costs that
 * much again on top of the report, and V8 refuses strings past ~512 MB.
 * Large arrays are therefore written element by element (each element is
 * small and goes through JSON.stringify, re-indented); everything else is
 * written whole. The text is byte for byte what JSON.stringify gives
 * (test/present/json-chunks.test.ts holds it to that).
 */

/** Arrays longer than this are written element by element. */
const SPLIT_ABOVE = 256;

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
    const big = value.length > SPLIT_ABOVE;
    for (let i = 0; i < value.length; i++) {
      const element: unknown = value[i];
      yield inner;
      if (big) yield whole(element, inner);
      else yield* pieces(element, inner);
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
