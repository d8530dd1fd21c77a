import { ErrorCode, PopefError } from '../errors.js';
import type { ModelSet } from '../format/model-set.js';
import { userAnchors } from '../inspect/anchor-roles.js';
import type { DataTypeInfo } from '../schema/data-types.js';
import { elementBytes, sameTensorInfo, type DataType, type Metadata } from '../schema/model.js';
import type { Tensor, TensorSpec } from './plugin-api.js';

/**
 * Tensor bytes <-> numbers. Elements are little-endian; the bytes of a
 * tensor may sit at any offset (frames from a pipe are not aligned), so
 * everything goes through a DataView. 64-bit integers are read as the
 * nearest number; F8 formats have no numeric reading here.
 */

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((p, d) => p * d, 1);
}

export function byteLength(spec: Pick<TensorSpec, 'dtype' | 'shape'>): number {
  return elementCount(spec.shape) * elementBytes(spec.dtype);
}

function f16ToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

function numberToF16(value: number): number {
  if (Number.isNaN(value)) return 0x7e00;
  const sign = value < 0 || Object.is(value, -0) ? 0x8000 : 0;
  const v = Math.abs(value);
  if (v === Infinity) return sign | 0x7c00;
  if (v >= 65520) return sign | 0x7c00;
  if (v < 2 ** -24 / 2) return sign;
  let exponent = Math.floor(Math.log2(v));
  if (exponent < -14) {
    // Subnormal: round to the nearest multiple of 2^-24.
    return sign | Math.round(v / 2 ** -24);
  }
  let mantissa = Math.round((v / 2 ** exponent - 1) * 1024);
  if (mantissa === 1024) {
    mantissa = 0;
    exponent += 1;
  }
  if (exponent > 15) return sign | 0x7c00;
  return sign | ((exponent + 15) << 10) | mantissa;
}

function unsupported(dtype: DataType): PopefError {
  return new PopefError(ErrorCode.InvalidInput, `tensors of dtype ${dtype} cannot be read or written as numbers by popef-toolkit`, {
    suggestion: 'FP8 data can only pass through as raw bytes (.bin)',
  });
}

/** How one element of a dtype reads and writes as a number, at element index `i`. */
interface ElementCodec {
  readonly read: (view: DataView, i: number) => number;
  readonly write: (view: DataView, i: number, value: number) => void;
}

function clampInt(v: number, lo: number, hi: number): number {
  if (Number.isNaN(v)) return 0;
  return Math.min(hi, Math.max(lo, Math.round(v)));
}

/**
 * One codec per dtype that DATA_TYPE_INFO gives a number kind, none for the
 * others: the mapped type makes the compiler ask for an entry for every new
 * dtype, and refuse one the registry says has no numbers. Writes convert:
 * integers are rounded and clamped to the type's range.
 */
const CODECS: { readonly [T in DataType]: DataTypeInfo<T>['numbers'] extends undefined ? undefined : ElementCodec } = {
  BOOL: { read: (view, i) => view.getUint8(i), write: (view, i, v) => view.setUint8(i, v !== 0 && !Number.isNaN(v) ? 1 : 0) },
  U8: { read: (view, i) => view.getUint8(i), write: (view, i, v) => view.setUint8(i, clampInt(v, 0, 255)) },
  S8: { read: (view, i) => view.getInt8(i), write: (view, i, v) => view.setInt8(i, clampInt(v, -128, 127)) },
  U16: { read: (view, i) => view.getUint16(2 * i, true), write: (view, i, v) => view.setUint16(2 * i, clampInt(v, 0, 65535), true) },
  S16: { read: (view, i) => view.getInt16(2 * i, true), write: (view, i, v) => view.setInt16(2 * i, clampInt(v, -32768, 32767), true) },
  U32: { read: (view, i) => view.getUint32(4 * i, true), write: (view, i, v) => view.setUint32(4 * i, clampInt(v, 0, 2 ** 32 - 1), true) },
  S32: { read: (view, i) => view.getInt32(4 * i, true), write: (view, i, v) => view.setInt32(4 * i, clampInt(v, -(2 ** 31), 2 ** 31 - 1), true) },
  U64: {
    read: (view, i) => Number(view.getBigUint64(8 * i, true)),
    write: (view, i, v) => view.setBigUint64(8 * i, BigInt(clampInt(v, 0, Number.MAX_SAFE_INTEGER)), true),
  },
  S64: {
    read: (view, i) => Number(view.getBigInt64(8 * i, true)),
    write: (view, i, v) => view.setBigInt64(8 * i, BigInt(clampInt(v, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)), true),
  },
  F16: { read: (view, i) => f16ToNumber(view.getUint16(2 * i, true)), write: (view, i, v) => view.setUint16(2 * i, numberToF16(v), true) },
  F32: { read: (view, i) => view.getFloat32(4 * i, true), write: (view, i, v) => view.setFloat32(4 * i, v, true) },
  F64: { read: (view, i) => view.getFloat64(8 * i, true), write: (view, i, v) => view.setFloat64(8 * i, v, true) },
  F8: undefined,
  F8143: undefined,
  F8152: undefined,
};

function codecOf(dtype: DataType): ElementCodec {
  const codec: ElementCodec | undefined = CODECS[dtype];
  if (codec === undefined) throw unsupported(dtype);
  return codec;
}

/** The elements as float64 numbers. */
export function toNumbers(t: Pick<Tensor, 'dtype' | 'shape' | 'data'>): Float64Array {
  const { read } = codecOf(t.dtype);
  const n = elementCount(t.shape);
  const view = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = read(view, i);
  return out;
}

/** A tensor of `spec` holding `values` (converted: integers rounded and clamped to the type's range). */
export function fromNumbers(spec: TensorSpec, values: ArrayLike<number>): Tensor {
  const n = elementCount(spec.shape);
  if (values.length !== n) throw new RangeError(`${values.length} values for ${n} elements`);
  const { write } = codecOf(spec.dtype);
  const data = new Uint8Array(n * elementBytes(spec.dtype));
  const view = new DataView(data.buffer);
  for (let i = 0; i < n; i++) write(view, i, values[i] ?? 0);
  return { ...spec, data };
}

/** Whether `dtype` holds floating-point numbers (DATA_TYPE_INFO's number kind). */
export { isFloat } from '../schema/data-types.js';

/** Checks a tensor against what the model expects; the message names the input, the expected and the actual. */
export function checkAgainstSpec(t: Tensor, spec: TensorSpec, label: string): void {
  if (!sameTensorInfo(t, spec)) {
    throw new PopefError(
      ErrorCode.InvalidInput,
      `input "${label}" is ${t.dtype} [${t.shape.join(', ')}], but the model expects ${spec.dtype} [${spec.shape.join(', ')}]`,
      {
        suggestion: 'give data of that dtype and shape (a .npy file carries both; .bin must have exactly the right size)',
      },
    );
  }
  if (t.data.byteLength !== byteLength(spec)) {
    throw new PopefError(
      ErrorCode.InvalidInput,
      `input "${label}" has ${t.data.byteLength} bytes, but ${spec.dtype} [${spec.shape.join(', ')}] needs ${byteLength(spec)}`,
      {},
    );
  }
}

/** The user-provided tensors of one executable of an open model set (what ModelRequest.tensors holds). */
export function modelTensorSpecs(set: ModelSet, executable: string): { inputs: TensorSpec[]; outputs: TensorSpec[] } {
  const model = set.model(executable);
  if (model.metadata === undefined) return { inputs: [], outputs: [] };
  return userTensorSpecs(model.metadata, new Set(model.tensors.map((t) => t.name)));
}

/** The tensors a plugin exposes for a model: its user-provided anchors, by anchor name, dtype and full shape. */
export function userTensorSpecs(metadata: Metadata, storedTensorNames: ReadonlySet<string>): { inputs: TensorSpec[]; outputs: TensorSpec[] } {
  const user = userAnchors(metadata, storedTensorNames);
  const spec = (a: (typeof user.inputs)[number]): TensorSpec => ({ name: a.name, dtype: a.tensorInfo.dtype, shape: a.tensorInfo.shape });
  return { inputs: user.inputs.map(spec), outputs: user.outputs.map(spec) };
}
