import { fromNumbers, toNumbers } from '../run/tensor.js';
import { elementBytes } from '../schema/model.js';
import { popefFromProtocol, type ProtocolDataType } from '../triton/protocol-datatypes.js';
import { deserializeBytes, serializeBytes } from './infer-request.js';
import { RequestError, invalidArg } from './status.js';
import { RawJson, jsonNumber, writeDouble } from './triton-json.js';

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

const INTEGER_RANGES: Partial<Record<ProtocolDataType, readonly [number, number]>> = {
  UINT8: [0, 255],
  UINT16: [0, 65535],
  UINT32: [0, 2 ** 32 - 1],
  UINT64: [0, Number.MAX_SAFE_INTEGER],
  INT8: [-128, 127],
  INT16: [-32768, 32767],
  INT32: [-(2 ** 31), 2 ** 31 - 1],
  INT64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
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
  const dtype = popefFromProtocol(datatype as ProtocolDataType);
  if (dtype === undefined) throw invalidArg(`invalid datatype for input ${name}`);
  const numbers = new Float64Array(values.length);
  const range = INTEGER_RANGES[datatype as ProtocolDataType];
  // Elements are read in order; the walk stops at the first bad one, or at the first past the count.
  for (let i = 0; i < values.length; i++) {
    if (i >= count) throw dataError("Shape does not match true shape of 'data' field");
    const v = values[i];
    if (datatype === 'BOOL') {
      if (typeof v !== 'boolean') throw dataError('attempt to access JSON non-boolean as boolean');
      numbers[i] = v ? 1 : 0;
      continue;
    }
    if (range !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < range[0] || v > range[1])) {
      throw dataError(
        datatype.startsWith('U')
          ? 'attempt to access JSON non-unsigned-integer as unsigned-integer'
          : 'attempt to access JSON non-signed-integer as signed-integer',
      );
    }
    // AsDouble takes integers and doubles (a whole double such as 1.0 included), NaN and the infinities too.
    const n = jsonNumber(v);
    if (n === undefined) throw dataError('attempt to access JSON non-number as double');
    numbers[i] = n;
  }
  checkCount(values.length, count);
  return fromNumbers({ name, dtype, shape: [values.length] }, numbers).data;
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
  const numbers = toNumbers({ dtype, shape: [data.byteLength / elementBytes(dtype)], data });
  if (datatype === 'BOOL') return Array.from(numbers, (n) => n !== 0);
  const write = datatype === 'FP32' || datatype === 'FP64' ? writeDouble : String;
  let text = '[';
  for (let i = 0; i < numbers.length; i++) text += (i === 0 ? '' : ',') + write(numbers[i] as number);
  return new RawJson(`${text}]`);
}
