import { ENUMS, MESSAGES, isEnumName, isMessageName, type FieldSpec } from '../../src/triton/schema.js';

/**
 * Generates config.pbtxt snippets for the protoc differential test: valid
 * ones written in every syntax the text format allows (colons optional on
 * messages, {} and <>, lists and repeated entries, separators, comments,
 * tabs, hex/octal/negative numbers, escapes, adjacent strings, enums by
 * number), and invalid ones made by mutating valid ones. Deterministic for
 * a seed, so a failing case can be replayed.
 */

const FIELDS = MESSAGES as unknown as Record<string, Record<string, FieldSpec>>;

export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0 || 1;
  }
  next(): number {
    // xorshift32
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x >>> 0;
    return this.state / 0x100000000;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    const x = xs[this.int(xs.length)];
    if (x === undefined) throw new Error('pick from empty list');
    return x;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const STRINGS = ['a', 'input_0', 'digit_image', 'softmax/Softmax:0', '', 'x y', 'ümlaut', '#hash', 'poplar', '1'];

function ws(r: Rng): string {
  return r.pick([' ', ' ', ' ', '\n', '\t', '  ', '\n  ', ' # note\n', '\r\n']);
}

function renderString(r: Rng, value: string): string {
  const quote = r.pick(['"', "'"]);
  const escape = (s: string): string =>
    Array.from(s)
      .map((c) => {
        if (c === quote || c === '\\') return `\\${c}`;
        if (c === 'a' && r.chance(0.2)) return r.pick(['\\x61', '\\141', '\\u0061', '\\U00000061']);
        if (c === 'ü' && r.chance(0.5)) return '\\u00fc';
        return c;
      })
      .join('');
  const body = escape(value);
  if (body.length > 1 && r.chance(0.2)) {
    const cut = 1 + r.int(body.length - 1);
    // Do not split an escape sequence.
    if (!body.slice(0, cut).endsWith('\\') && !/\\[0-7xuU][0-9a-fA-F]*$/.test(body.slice(0, cut))) {
      return `${quote}${body.slice(0, cut)}${quote}${ws(r)}${quote}${body.slice(cut)}${quote}`;
    }
  }
  return `${quote}${body}${quote}`;
}

function renderInt(r: Rng, t: string): string {
  const signed = t === 'int32' || t === 'int64';
  const big = t === 'int64' || t === 'uint64';
  const pool = [0, 1, 2, 7, 28, 384, 1000, 2147483647, ...(big ? [9007199254740993n, 2n ** 62n] : [])];
  let v: number | bigint = r.pick(pool);
  const negative = signed && r.chance(0.2);
  if (negative) v = typeof v === 'bigint' ? v : v === 0 ? 0 : v;
  const form = r.int(4);
  let digits = form === 1 ? `0x${v.toString(16)}` : form === 2 && v !== 0 ? `0${v.toString(8)}` : String(v);
  if (form === 1 && r.chance(0.5)) digits = digits.toUpperCase().replace('0X', '0x');
  return negative ? `-${r.chance(0.2) ? ' ' : ''}${digits}` : digits;
}

function renderFloat(r: Rng): string {
  return r.pick(['0', '1.5', '-2.25', '1e3', '1E-2', '.5', '5.', '2f', '1.0F', 'inf', '-inf', 'Infinity', 'nan', 'NaN', '3', '-0', '3.4e38', '1e40']);
}

function renderScalar(r: Rng, t: string): string {
  if (isEnumName(t)) {
    const values: readonly string[] = ENUMS[t];
    if (r.chance(0.2)) return String(r.int(values.length + 1));
    return r.pick(values);
  }
  switch (t) {
    case 'string':
      return renderString(r, r.pick(STRINGS));
    case 'bool':
      return r.pick(['true', 'false', 'True', 'False', 't', 'f', '1', '0']);
    case 'float':
    case 'double':
      return renderFloat(r);
    default:
      return renderInt(r, t);
  }
}

function separator(r: Rng): string {
  return r.pick(['', '', '', ';', ',']);
}

function renderMessageBody(r: Rng, type: string, depth: number, mapValue?: FieldSpec): string {
  if (mapValue !== undefined) {
    const parts: string[] = [];
    const key = `key:${ws(r)}${mapValue.map === 'uint64' ? renderInt(r, 'uint64') : renderString(r, r.pick(STRINGS))}`;
    const value = isMessageName(mapValue.t)
      ? `value${r.chance(0.5) ? ':' : ''}${ws(r)}${r.chance(0.8) ? `{${renderMessageBody(r, mapValue.t, depth + 1)}}` : `<${renderMessageBody(r, mapValue.t, depth + 1)}>`}`
      : `value:${ws(r)}${renderScalar(r, mapValue.t)}`;
    if (r.chance(0.9)) parts.push(key);
    if (r.chance(0.8)) parts.push(value);
    if (r.chance(0.3)) parts.reverse();
    return `${ws(r)}${parts.join(ws(r))}${ws(r)}`;
  }
  const fields = Object.entries(FIELDS[type] ?? {});
  if (fields.length === 0 || depth > 3) return ws(r);
  const count = r.int(depth === 0 ? 7 : 4);
  const used = new Set<string>();
  const oneofs = new Set<string>();
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const [name, spec] = r.pick(fields);
    const repeated = spec.repeated === true || spec.map !== undefined;
    if (!repeated && used.has(name)) continue;
    if (spec.oneof !== undefined && oneofs.has(spec.oneof) && !used.has(name)) continue;
    used.add(name);
    if (spec.oneof !== undefined) oneofs.add(spec.oneof);
    out.push(renderField(r, name, spec, depth));
  }
  return `${ws(r)}${out.join(ws(r))}${ws(r)}`;
}

function renderMessageValue(r: Rng, spec: FieldSpec, depth: number): string {
  const body = spec.map !== undefined ? renderMessageBody(r, '', depth, spec) : renderMessageBody(r, spec.t, depth + 1);
  return r.chance(0.8) ? `{${body}}` : `<${body}>`;
}

function renderField(r: Rng, name: string, spec: FieldSpec, depth: number): string {
  const repeated = spec.repeated === true || spec.map !== undefined;
  const isMessage = spec.map !== undefined || isMessageName(spec.t);
  const colon = isMessage ? (r.chance(0.5) ? ':' : '') : ':';
  const one = (): string => (isMessage ? renderMessageValue(r, spec, depth) : renderScalar(r, spec.t));
  if (repeated && r.chance(0.6)) {
    const n = r.int(4);
    const items = Array.from({ length: n }, one);
    return `${name}${colon}${ws(r)}[${ws(r)}${items.join(`,${ws(r)}`)}${ws(r)}]${separator(r)}`;
  }
  return `${name}${colon}${ws(r)}${one()}${separator(r)}`;
}

/** A valid config.pbtxt snippet (per the schema; values may still break Triton's semantic rules). */
export function validSnippet(seed: number): string {
  const r = new Rng(seed);
  return renderMessageBody(r, 'inference.ModelConfig', 0);
}

const INSERTS = [
  '}',
  '{',
  ']',
  '[',
  ':',
  ',',
  ';',
  '"',
  "'",
  '<',
  '>',
  '-',
  'foo: 1',
  'name: "x"',
  'TYPE_FLOAT',
  '1.5',
  '0x',
  '08',
  '1e',
  '\\',
  '\n',
  '#',
  'max_batch_size',
  '{}',
  '"\\q"',
  '[ext.y]',
  'é',
  '\u0001',
  '1abc',
];

/** A valid snippet damaged by one to three random edits (most, but not all, are then invalid). */
export function mutatedSnippet(seed: number): string {
  const r = new Rng(seed ^ 0x9e3779b9);
  let text = validSnippet(seed);
  const edits = 1 + r.int(3);
  for (let e = 0; e < edits; e++) {
    const at = r.int(text.length + 1);
    switch (r.int(4)) {
      case 0:
        text = text.slice(0, at) + text.slice(at + 1 + r.int(4));
        break;
      case 1:
      case 2:
        text = text.slice(0, at) + r.pick(INSERTS) + text.slice(at);
        break;
      default:
        text = text.slice(0, at);
    }
  }
  return text;
}
