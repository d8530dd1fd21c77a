/**
 * The PopEF logical model as plain readonly data: what every layer above
 * `schema/` sees. No generated FlatBuffers type escapes `schema/`.
 */

import { elementBytes, type DataType } from './data-types.js';

// The element types and their facts live in data-types.ts, one record keyed by the type.
export { DATA_TYPES, elementBytes, isDataType, type DataType } from './data-types.js';

/** Anchor types, in code order. */
export const TENSOR_TYPES = ['UNKNOWN', 'INPUT', 'OUTPUT'] as const;
/** An anchor type: `UNKNOWN`, `INPUT` or `OUTPUT`. */
export type TensorType = (typeof TENSOR_TYPES)[number];

/** Whether `value` names an anchor type. */
export function isTensorType(value: string): value is TensorType {
  return (TENSOR_TYPES as readonly string[]).includes(value);
}

/** A tensor's element type and shape. */
export interface TensorInfo {
  readonly dtype: DataType;
  /** Dimensions; [] is a scalar (one element). */
  readonly shape: readonly number[];
}

/** product(shape) x element size, as bigint: hostile shapes can overflow 2^53. */
export function sizeInBytes(info: TensorInfo): bigint {
  let count = 1n;
  for (const dim of info.shape) count *= BigInt(dim);
  return count * BigInt(elementBytes(info.dtype));
}

/** Whether two tensor infos have the same dtype and shape. */
export function sameTensorInfo(a: TensorInfo, b: TensorInfo): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

/** A named tensor stream between host and device: a model input, output, weight or seed. */
export interface Anchor {
  readonly name: string;
  readonly handle: string;
  readonly tensorInfo: TensorInfo;
  readonly isPerReplica: boolean;
  readonly type: TensorType;
  readonly programs: readonly number[];
}

/** The programs run to load, run once and save, by index. */
export interface ProgramFlow {
  readonly load: readonly number[];
  readonly main: readonly number[];
  readonly save: readonly number[];
}

/** A program index and its name. */
export interface ProgramName {
  readonly index: number;
  readonly name: string;
}

/** An engine or device option: a name and its value, both text. */
export interface Option {
  readonly name: string;
  readonly value: string;
}

/** One executable's metadata: its anchors, program flow and device settings. */
export interface Metadata {
  readonly executable: string;
  readonly anchors: readonly Anchor[];
  readonly programFlow: ProgramFlow;
  readonly programsMap: readonly ProgramName[];
  readonly replicationFactor: number;
  readonly numIpus: number;
  readonly ipuVersion: number;
  readonly isPOD: boolean;
  readonly numProcesses: number;
  readonly isInference: boolean;
  readonly deviceIterations: number;
  readonly seedHandle: string;
  readonly engineOptions: readonly Option[];
  readonly deviceOptions: readonly Option[];
}

/** Descriptor of a POPLAR_EXECUTABLE blob. */
export interface ExecutableDescriptor {
  readonly name: string;
  /** Decompressed length; equal to the stored length when uncompressed. */
  readonly uncompressedSize: number;
}

/** Descriptor of a DATA_TENSOR blob. */
export interface TensorDataDescriptor {
  readonly name: string;
  readonly tensorInfo: TensorInfo;
}

/** Descriptor of a DATA_FEED blob: `sampleCount` samples of `tensorInfo`. */
export interface FeedDataDescriptor {
  readonly name: string;
  readonly tensorInfo: TensorInfo;
  readonly sampleCount: number;
}

/** Descriptor of an OPAQUE blob. */
export interface OpaqueDescriptor {
  readonly name: string;
  readonly executable: string;
}

/** An empty metadata with every field at its default, for builders. */
export function emptyMetadata(executable: string): Metadata {
  return {
    executable,
    anchors: [],
    programFlow: { load: [], main: [], save: [] },
    programsMap: [],
    replicationFactor: 1,
    numIpus: 1,
    ipuVersion: 2,
    isPOD: false,
    numProcesses: 1,
    isInference: true,
    deviceIterations: 1,
    seedHandle: '',
    engineOptions: [],
    deviceOptions: [],
  };
}
