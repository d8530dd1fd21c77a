/**
 * The PopEF logical model as plain readonly data: what every layer above
 * `schema/` sees. No generated FlatBuffers type escapes `schema/`.
 */

/** Element types, in the order of Graphcore's DataType documentation. */
export const DATA_TYPES = [
  'BOOL', 'F8', 'F16', 'F32', 'F64', 'S8', 'U8', 'S16', 'U16', 'S32', 'U32', 'S64', 'U64', 'F8143', 'F8152',
] as const;
export type DataType = (typeof DATA_TYPES)[number];

export const TENSOR_TYPES = ['UNKNOWN', 'INPUT', 'OUTPUT'] as const;
export type TensorType = (typeof TENSOR_TYPES)[number];

const ELEMENT_BYTES: Readonly<Record<DataType, number>> = {
  BOOL: 1, F8: 1, F16: 2, F32: 4, F64: 8, S8: 1, U8: 1, S16: 2, U16: 2, S32: 4, U32: 4, S64: 8, U64: 8, F8143: 1, F8152: 1,
};

export function isDataType(value: string): value is DataType {
  return (DATA_TYPES as readonly string[]).includes(value);
}

export function isTensorType(value: string): value is TensorType {
  return (TENSOR_TYPES as readonly string[]).includes(value);
}

export function elementBytes(dtype: DataType): number {
  return ELEMENT_BYTES[dtype];
}

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

/** Blob descriptor fields as stored (decode.ts reads them, encode.ts writes them); which ones matter depends on the blob type. */
export interface RawDescriptor {
  readonly name: string;
  readonly executable: string;
  readonly tensorInfo: TensorInfo | undefined;
  readonly sampleCount: bigint;
  readonly uncompressedSize: bigint;
}

export function sameTensorInfo(a: TensorInfo, b: TensorInfo): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

export interface Anchor {
  readonly name: string;
  readonly handle: string;
  readonly tensorInfo: TensorInfo;
  readonly isPerReplica: boolean;
  readonly type: TensorType;
  readonly programs: readonly number[];
}

export interface ProgramFlow {
  readonly load: readonly number[];
  readonly main: readonly number[];
  readonly save: readonly number[];
}

export interface ProgramName {
  readonly index: number;
  readonly name: string;
}

export interface Option {
  readonly name: string;
  readonly value: string;
}

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
