import { toNumbers } from '../run/tensor.js';
import { elementBytes } from '../schema/model.js';
import { popefFromProtocol, type ProtocolDataType } from '../triton/protocol-datatypes.js';
import { deserializeBytes, serializeBytes } from './infer-request.js';
import { RequestError, invalidArg } from './status.js';
import { RawJson, isJsonInt, isJsonUInt, jsonNumber, writeDouble } from './triton-json.js';

/**
 * Tensor data as JSON, both ways, with the rules and messages of Triton's
 * HTTP frontend (server r24.10, http_server.cc ReadDataFromJson and
 * WriteDataToJson): nested or flat arrays, booleans for BOOL, strings for
 * BYTES, no FP16/BF16 in JSON.
 */

/** Flattens nested arrays in row-major order, without recursion (a deeply nested body must not overflow the stack). */
function flatten(data: unknown): unknown[] {
  const out: unknown[] = [];
  const stack: { items: readonly unknown[]; at: number }[] = [{ items: Array.isArray(data) ? data : [data], at: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    if (top === undefined) break;
    if (top.at >= top.items.length) {
      stack.pop();
      continue;
    }
    const item = top.items[top.at++];
    if (Array.isArray(item)) stack.push({ items: item, at: 0 });
    else out.push(item);
  }
  return out;
}

/**
 * How ReadDataFromJsonHelper stores one element of each numeric datatype:
 * its width, whether it reads the element with AsUInt (0 to 2^64 - 1) or
 * AsInt (-2^63 to 2^63 - 1), and the store. The integer stores are C casts
 * (`(uint8_t)ui`, `(int32_t)si`): an element outside a narrower type's range
 * is not refused but wrapped modulo 2^bits, as DataView's setters wrap a
 * number; a 64-bit element is stored exactly (a bigint past 2^53).
 */
type ElementStore = (view: DataView, offset: number, value: number | bigint) => void;
interface NumericKind {
  readonly bytes: number;
  readonly read: 'uint' | 'int' | 'double';
  readonly store: ElementStore;
}

/** A value of up to 64 bits reduced to `bits` as a C cast does (two's complement), as a number; a safe integer needs no bigint. */
function wrapped(value: number | bigint, bits: number): number {
  return typeof value === 'number' ? value : Number(BigInt.asUintN(bits, value));
}

/** A 64-bit two's-complement store: a safe integer as two 32-bit halves (no bigint), a bigint as it is. */
function store64(view: DataView, offset: number, value: number | bigint): void {
  if (typeof value === 'bigint') {
    view.setBigUint64(offset, BigInt.asUintN(64, value), true);
    return;
  }
  // ToUint32 reduces modulo 2^32, so a negative value's halves are its two's complement.
  view.setUint32(offset, value >>> 0, true);
  view.setUint32(offset + 4, Math.floor(value / 2 ** 32) >>> 0, true);
}

const NUMERIC: Partial<Record<ProtocolDataType, NumericKind>> = {
  UINT8: { bytes: 1, read: 'uint', store: (view, o, v) => view.setUint8(o, wrapped(v, 8)) },
  UINT16: { bytes: 2, read: 'uint', store: (view, o, v) => view.setUint16(o, wrapped(v, 16), true) },
  UINT32: { bytes: 4, read: 'uint', store: (view, o, v) => view.setUint32(o, wrapped(v, 32), true) },
  UINT64: { bytes: 8, read: 'uint', store: store64 },
  INT8: { bytes: 1, read: 'int', store: (view, o, v) => view.setInt8(o, wrapped(v, 8)) },
  INT16: { bytes: 2, read: 'int', store: (view, o, v) => view.setInt16(o, wrapped(v, 16), true) },
  INT32: { bytes: 4, read: 'int', store: (view, o, v) => view.setInt32(o, wrapped(v, 32), true) },
  INT64: { bytes: 8, read: 'int', store: store64 },
  // AsDouble, then a float's conversion for FP32 (setFloat32 rounds to nearest as the C assignment does).
  FP32: { bytes: 4, read: 'double', store: (view, o, v) => view.setFloat32(o, Number(v), true) },
  FP64: { bytes: 8, read: 'double', store: (view, o, v) => view.setFloat64(o, Number(v), true) },
};

/** An error of Triton's JSON accessors (TritonJson): INTERNAL, as Triton's frontends define them. */
export function jsonAccess(message: string): RequestError {
  return new RequestError('INTERNAL', message);
}

/**
 * ReadDataFromJson wraps every error of its element walk (a wrong element
 * type, too many elements) as "Unable to parse 'data': ...", and finds too
 * few at its end, with the same words.
 */
function dataError(message: string): RequestError {
  return new RequestError('INTERNAL', `Unable to parse 'data': ${message}`);
}

function checkCount(found: number, expected: number): void {
  if (found !== expected) throw dataError("Shape does not match true shape of 'data' field");
}

/** The bytes of an input given as JSON `data`, for `elements` elements of `datatype`. */
export function readJsonData(name: string, datatype: string, shape: readonly number[], data: unknown): Uint8Array {
  const values = flatten(data);
  const count = shape.reduce((p, d) => p * d, 1);
  if (datatype === 'BYTES') {
    // JsonBytesArrayByteSize reads every element as a string before any is copied.
    if (values.some((v) => typeof v !== 'string')) throw jsonAccess('Unable to parse JSON bytes array: attempt to access JSON non-string as string');
    checkCount(values.length, count);
    return serializeBytes(values as string[]);
  }
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw invalidArg(`receiving ${datatype} data via JSON is not supported. Please use the binary data format for input ${name}`);
  }
  const kind = datatype === 'BOOL' ? undefined : NUMERIC[datatype as ProtocolDataType];
  if (datatype !== 'BOOL' && kind === undefined) throw invalidArg(`invalid datatype for input ${name}`);
  const bytes = kind?.bytes ?? 1;
  const out = new Uint8Array(values.length * bytes);
  const view = new DataView(out.buffer);
  // Elements are read in order; the walk stops at the first bad one, or at the first past the count.
  for (let i = 0; i < values.length; i++) {
    if (i >= count) throw dataError("Shape does not match true shape of 'data' field");
    const v = values[i];
    if (kind === undefined) {
      if (typeof v !== 'boolean') throw dataError('attempt to access JSON non-boolean as boolean');
      out[i] = v ? 1 : 0;
      continue;
    }
    if (kind.read === 'uint') {
      if (!isJsonUInt(v)) throw dataError('attempt to access JSON non-unsigned-integer as unsigned-integer');
      kind.store(view, i * bytes, v);
    } else if (kind.read === 'int') {
      if (!isJsonInt(v)) throw dataError('attempt to access JSON non-signed-integer as signed-integer');
      kind.store(view, i * bytes, v);
    } else {
      // AsDouble takes integers (a bigint as its nearest double) and doubles (a whole double such as 1.0 included), NaN and the infinities too.
      const n = jsonNumber(v);
      if (n === undefined) throw dataError('attempt to access JSON non-number as double');
      kind.store(view, i * bytes, n);
    }
  }
  checkCount(values.length, count);
  return out;
}

/**
 * An output's data as a flat JSON array: strings for BYTES, booleans for
 * BOOL, and numbers as Triton writes them (WriteDataToJson: AppendDouble for
 * FP32 and FP64, so `1.0`, `NaN`, `-Infinity`; AppendInt/AppendUInt for the
 * integers), as text for the response writer.
 */
export function writeJsonData(datatype: ProtocolDataType, data: Uint8Array): unknown[] | RawJson {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw new RequestError('INVALID_ARG', `sending ${datatype} data via JSON is not supported. Please use the binary data format for output`);
  }
  if (datatype === 'BYTES') {
    const elements = deserializeBytes(data);
    if (elements === undefined) throw new RequestError('INTERNAL', 'output tensor of BYTES is not a valid serialisation');
    return elements.map((b) => b.toString('utf8'));
  }
  const dtype = popefFromProtocol(datatype);
  if (dtype === undefined) throw new RequestError('INTERNAL', 'Invalid data type for output tensor');
  if (datatype === 'INT64' || datatype === 'UINT64') {
    // AppendInt / AppendUInt write the 64-bit value exactly; a float64 would round it past 2^53.
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    let text = '[';
    for (let o = 0; o + 8 <= data.byteLength; o += 8) {
      text += (o === 0 ? '' : ',') + String(datatype === 'INT64' ? view.getBigInt64(o, true) : view.getBigUint64(o, true));
    }
    return new RawJson(`${text}]`);
  }
  const numbers = toNumbers({ dtype, shape: [data.byteLength / elementBytes(dtype)], data });
  if (datatype === 'BOOL') return Array.from(numbers, (n) => n !== 0);
  const write = datatype === 'FP32' || datatype === 'FP64' ? writeDouble : String;
  let text = '[';
  for (let i = 0; i < numbers.length; i++) text += (i === 0 ? '' : ',') + write(numbers[i] as number);
  return new RawJson(`${text}]`);
}
