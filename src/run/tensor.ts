import { ErrorCode, PopefError } from '../errors.js';
import type { ModelSet } from '../format/model-set.js';
import { userAnchors } from '../inspect/anchor-roles.js';
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

/** The elements as float64 numbers. */
export function toNumbers(t: Pick<Tensor, 'dtype' | 'shape' | 'data'>): Float64Array {
  const n = elementCount(t.shape);
  const view = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const out = new Float64Array(n);
  const read: (i: number) => number = (() => {
    switch (t.dtype) {
      case 'BOOL':
      case 'U8':
        return (i: number) => view.getUint8(i);
      case 'S8':
        return (i: number) => view.getInt8(i);
      case 'U16':
        return (i: number) => view.getUint16(2 * i, true);
      case 'S16':
        return (i: number) => view.getInt16(2 * i, true);
      case 'U32':
        return (i: number) => view.getUint32(4 * i, true);
      case 'S32':
        return (i: number) => view.getInt32(4 * i, true);
      case 'U64':
        return (i: number) => Number(view.getBigUint64(8 * i, true));
      case 'S64':
        return (i: number) => Number(view.getBigInt64(8 * i, true));
      case 'F16':
        return (i: number) => f16ToNumber(view.getUint16(2 * i, true));
      case 'F32':
        return (i: number) => view.getFloat32(4 * i, true);
      case 'F64':
        return (i: number) => view.getFloat64(8 * i, true);
      default:
        throw unsupported(t.dtype);
    }
  })();
  for (let i = 0; i < n; i++) out[i] = read(i);
  return out;
}

function clampInt(v: number, lo: number, hi: number): number {
  if (Number.isNaN(v)) return 0;
  return Math.min(hi, Math.max(lo, Math.round(v)));
}

/** A tensor of `spec` holding `values` (converted: integers rounded and clamped to the type's range). */
export function fromNumbers(spec: TensorSpec, values: ArrayLike<number>): Tensor {
  const n = elementCount(spec.shape);
  if (values.length !== n) throw new RangeError(`${values.length} values for ${n} elements`);
  const data = new Uint8Array(n * elementBytes(spec.dtype));
  const view = new DataView(data.buffer);
  for (let i = 0; i < n; i++) {
    const v = values[i] ?? 0;
    switch (spec.dtype) {
      case 'BOOL':
        view.setUint8(i, v !== 0 && !Number.isNaN(v) ? 1 : 0);
        break;
      case 'U8':
        view.setUint8(i, clampInt(v, 0, 255));
        break;
      case 'S8':
        view.setInt8(i, clampInt(v, -128, 127));
        break;
      case 'U16':
        view.setUint16(2 * i, clampInt(v, 0, 65535), true);
        break;
      case 'S16':
        view.setInt16(2 * i, clampInt(v, -32768, 32767), true);
        break;
      case 'U32':
        view.setUint32(4 * i, clampInt(v, 0, 2 ** 32 - 1), true);
        break;
      case 'S32':
        view.setInt32(4 * i, clampInt(v, -(2 ** 31), 2 ** 31 - 1), true);
        break;
      case 'U64':
        view.setBigUint64(8 * i, BigInt(clampInt(v, 0, Number.MAX_SAFE_INTEGER)), true);
        break;
      case 'S64':
        view.setBigInt64(8 * i, BigInt(clampInt(v, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)), true);
        break;
      case 'F16':
        view.setUint16(2 * i, numberToF16(v), true);
        break;
      case 'F32':
        view.setFloat32(4 * i, v, true);
        break;
      case 'F64':
        view.setFloat64(8 * i, v, true);
        break;
      default:
        throw unsupported(spec.dtype);
    }
  }
  return { ...spec, data };
}

export function isFloat(dtype: DataType): boolean {
  return dtype === 'F16' || dtype === 'F32' || dtype === 'F64';
}

/** Checks a tensor against what the model expects; the message names the input, the expected and the actual. */
export function checkAgainstSpec(t: Tensor, spec: TensorSpec, label: string): void {
  if (!sameTensorInfo(t, spec)) {
    throw new PopefError(ErrorCode.InvalidInput, `input "${label}" is ${t.dtype} [${t.shape.join(', ')}], but the model expects ${spec.dtype} [${spec.shape.join(', ')}]`, {
      suggestion: 'give data of that dtype and shape (a .npy file carries both; .bin must have exactly the right size)',
    });
  }
  if (t.data.byteLength !== byteLength(spec)) {
    throw new PopefError(ErrorCode.InvalidInput, `input "${label}" has ${t.data.byteLength} bytes, but ${spec.dtype} [${spec.shape.join(', ')}] needs ${byteLength(spec)}`, {});
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
