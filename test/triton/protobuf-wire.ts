import { ENUMS, MESSAGES, isEnumName, isMessageName, type FieldSpec } from '../../src/triton/schema.js';

/**
 * Test helpers for the protoc differential test: a protobuf binary decoder
 * driven by the same schema table, and one normal form for messages from
 * either side (defaults dropped, maps last-wins and sorted, enums as
 * numbers, floats rounded to 32 bits), so that "the same message" can be
 * checked without depending on protoc's map serialisation order.
 */

export type Normal = string | boolean | null | Normal[] | { [key: string]: Normal };

const FIELDS = MESSAGES as unknown as Record<string, Record<string, FieldSpec>>;

function num(t: string, v: unknown): string {
  if (t === 'float' || t === 'double') {
    const x = t === 'float' ? Math.fround(Number(v)) : Number(v);
    return Object.is(x, -0) ? '-0' : String(x);
  }
  return String(v);
}

function scalarNormal(t: string, v: unknown): Normal {
  if (isEnumName(t)) return String(typeof v === 'string' ? (ENUMS[t] as readonly string[]).indexOf(v) : Number(v));
  if (t === 'bool') return Boolean(v);
  if (t === 'string') return String(v);
  return num(t, v);
}

function isDefaultNormal(t: string, v: Normal): boolean {
  if (isEnumName(t)) return v === '0';
  if (t === 'bool') return v === false;
  if (t === 'string') return v === '';
  return v === '0';
}

/** The normal form of a parsed (plain-object) message of `type`. */
export function normalize(type: string, message: Record<string, unknown>): Normal {
  const out: Record<string, Normal> = {};
  for (const [name, spec] of Object.entries(FIELDS[type] ?? {})) {
    const v = message[name];
    if (v === undefined) continue;
    if (spec.map !== undefined) {
      const entries = new Map<string, Normal>();
      for (const e of v as { key: unknown; value: unknown }[]) {
        entries.set(String(e.key), isMessageName(spec.t) ? normalize(spec.t, e.value as Record<string, unknown>) : scalarNormal(spec.t, e.value));
      }
      if (entries.size > 0) out[name] = Object.fromEntries([...entries.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    } else if (spec.repeated === true) {
      const list = (v as unknown[]).map((x) => (isMessageName(spec.t) ? normalize(spec.t, x as Record<string, unknown>) : scalarNormal(spec.t, x)));
      if (list.length > 0) out[name] = list;
    } else if (isMessageName(spec.t)) {
      out[name] = normalize(spec.t, v as Record<string, unknown>);
    } else {
      const n = scalarNormal(spec.t, v);
      if (spec.oneof !== undefined || !isDefaultNormal(spec.t, n)) out[name] = n;
    }
  }
  return out;
}

class Reader {
  pos = 0;
  constructor(private readonly bytes: Uint8Array) {}
  get done(): boolean {
    return this.pos >= this.bytes.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.bytes[this.pos++];
      if (b === undefined) throw new Error('truncated varint');
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  take(n: number): Uint8Array {
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

function signed(t: string, v: bigint): bigint {
  if (t === 'int32' || isEnumName(t)) return BigInt.asIntN(32, v);
  if (t === 'int64') return BigInt.asIntN(64, v);
  return v;
}

/** Decodes protobuf binary of `type` into the plain-object shape the text parser produces. */
export function decodeBinary(type: string, bytes: Uint8Array): Record<string, unknown> {
  const fields = FIELDS[type] ?? {};
  const byNumber = new Map(Object.entries(fields).map(([name, spec]) => [spec.n, [name, spec] as const]));
  const out: Record<string, unknown> = {};
  const r = new Reader(bytes);
  const push = (name: string, value: unknown): void => {
    const list = (out[name] ?? []) as unknown[];
    list.push(value);
    out[name] = list;
  };
  const scalarFrom = (t: string, reader: Reader): unknown => {
    if (t === 'float') return new DataView(reader.take(4).slice().buffer).getFloat32(0, true);
    if (t === 'double') return new DataView(reader.take(8).slice().buffer).getFloat64(0, true);
    const v = signed(t, reader.varint());
    if (t === 'bool') return v !== 0n;
    if (isEnumName(t)) return Number(v);
    return v;
  };
  while (!r.done) {
    const key = Number(r.varint());
    const number = key >> 3;
    const wire = key & 7;
    const entry = byNumber.get(number);
    if (entry === undefined) throw new Error(`unknown field ${number} in ${type}`);
    const [name, spec] = entry;
    if (spec.map !== undefined) {
      const body = new Reader(r.take(Number(r.varint())));
      const e: Record<string, unknown> = { key: spec.map === 'string' ? '' : 0n, value: isMessageName(spec.t) ? {} : '' };
      while (!body.done) {
        const k = Number(body.varint());
        if (k >> 3 === 1) e.key = spec.map === 'string' ? Buffer.from(body.take(Number(body.varint()))).toString('utf8') : body.varint();
        else if (isMessageName(spec.t)) e.value = decodeBinary(spec.t, body.take(Number(body.varint())));
        else e.value = Buffer.from(body.take(Number(body.varint()))).toString('utf8');
      }
      push(name, e);
    } else if (isMessageName(spec.t)) {
      const value = decodeBinary(spec.t, r.take(Number(r.varint())));
      if (spec.repeated === true) push(name, value);
      else out[name] = value;
    } else if (spec.t === 'string') {
      const value = Buffer.from(r.take(Number(r.varint()))).toString('utf8');
      if (spec.repeated === true) push(name, value);
      else out[name] = value;
    } else if (wire === 2) {
      const packed = new Reader(r.take(Number(r.varint())));
      while (!packed.done) push(name, scalarFrom(spec.t, packed));
    } else {
      const value = scalarFrom(spec.t, r);
      if (spec.repeated === true) push(name, value);
      else out[name] = value;
    }
  }
  return out;
}
