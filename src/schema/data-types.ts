/**
 * Every fact about a PopEF element type, in one record keyed by the type.
 *
 * Adding a dtype is one entry here (and one in schemas/popef.fbs). The
 * tables that need code rather than facts (tensor.ts's number conversions,
 * cpu-plugin.ts's typed arrays) are exhaustive records keyed by the same
 * type, so the compiler names each of them; the JSON schemas, the
 * specifications and the Python tables are checked against this record by
 * test/schema/data-types.test.ts. src/ARCHITECTURE.md ("Adding a dtype")
 * lists the whole path.
 *
 * This module is a leaf: it imports nothing, so every floor may use it.
 */

/** What a dtype's elements are as numbers; `undefined` where popef-toolkit has no conversion (the F8 formats pass through as raw bytes). */
export type NumberKind = 'bool' | 'uint' | 'int' | 'float';

/** The facts DATA_TYPE_INFO holds for each element type. */
export interface DataTypeFacts {
  /** The `DataType` code in the metadata (schemas/popef.fbs, FORMAT.md section 5.2). */
  readonly code: number;
  /** Bytes per element. */
  readonly bytes: number;
  /** How the elements read as numbers (run inputs, JSON, comparison); undefined: raw bytes only. */
  readonly numbers: NumberKind | undefined;
  /** Triton's model-config type (model_config.proto `DataType`); undefined where Triton has none. */
  readonly triton: `TYPE_${string}` | undefined;
  /** NumPy's array-protocol type string, as written in .npy headers; undefined where NumPy has none. */
  readonly npy: string | undefined;
  /** onnxruntime's tensor type name; undefined where onnxruntime takes none. */
  readonly ort: string | undefined;
}

/** The element types, in the order of Graphcore's DataType documentation (which is also their code order). */
export const DATA_TYPE_INFO = {
  BOOL: { code: 0, bytes: 1, numbers: 'bool', triton: 'TYPE_BOOL', npy: '|b1', ort: 'bool' },
  F8: { code: 1, bytes: 1, numbers: undefined, triton: undefined, npy: undefined, ort: undefined },
  F16: { code: 2, bytes: 2, numbers: 'float', triton: 'TYPE_FP16', npy: '<f2', ort: 'float16' },
  F32: { code: 3, bytes: 4, numbers: 'float', triton: 'TYPE_FP32', npy: '<f4', ort: 'float32' },
  F64: { code: 4, bytes: 8, numbers: 'float', triton: 'TYPE_FP64', npy: '<f8', ort: 'float64' },
  S8: { code: 5, bytes: 1, numbers: 'int', triton: 'TYPE_INT8', npy: '|i1', ort: 'int8' },
  U8: { code: 6, bytes: 1, numbers: 'uint', triton: 'TYPE_UINT8', npy: '|u1', ort: 'uint8' },
  S16: { code: 7, bytes: 2, numbers: 'int', triton: 'TYPE_INT16', npy: '<i2', ort: 'int16' },
  U16: { code: 8, bytes: 2, numbers: 'uint', triton: 'TYPE_UINT16', npy: '<u2', ort: 'uint16' },
  S32: { code: 9, bytes: 4, numbers: 'int', triton: 'TYPE_INT32', npy: '<i4', ort: 'int32' },
  U32: { code: 10, bytes: 4, numbers: 'uint', triton: 'TYPE_UINT32', npy: '<u4', ort: 'uint32' },
  S64: { code: 11, bytes: 8, numbers: 'int', triton: 'TYPE_INT64', npy: '<i8', ort: 'int64' },
  U64: { code: 12, bytes: 8, numbers: 'uint', triton: 'TYPE_UINT64', npy: '<u8', ort: 'uint64' },
  F8143: { code: 13, bytes: 1, numbers: undefined, triton: undefined, npy: undefined, ort: undefined },
  F8152: { code: 14, bytes: 1, numbers: undefined, triton: undefined, npy: undefined, ort: undefined },
} as const satisfies Readonly<Record<string, DataTypeFacts>>;

/** A PopEF element type name ("F32"). */
export type DataType = keyof typeof DATA_TYPE_INFO;

/** The facts of one type, with the literal types of its entry (so `DataTypeInfo<'F32'>['triton']` is `'TYPE_FP32'`). */
export type DataTypeInfo<T extends DataType = DataType> = (typeof DATA_TYPE_INFO)[T];

/** Every element type, in code order. */
export const DATA_TYPES: readonly DataType[] = (Object.keys(DATA_TYPE_INFO) as DataType[]).sort(
  (a, b) => DATA_TYPE_INFO[a].code - DATA_TYPE_INFO[b].code,
);

const BY_CODE: ReadonlyMap<number, DataType> = new Map(DATA_TYPES.map((dtype) => [DATA_TYPE_INFO[dtype].code, dtype]));

/** The type a metadata `DataType` code names; undefined for a code this version does not know. */
export function dataTypeOfCode(code: number): DataType | undefined {
  return BY_CODE.get(code);
}

/** A record with one value per element type, made by `valueOf`. */
export function recordOfDataTypes<V>(valueOf: (dtype: DataType) => V): Record<DataType, V> {
  return Object.fromEntries(DATA_TYPES.map((dtype) => [dtype, valueOf(dtype)])) as Record<DataType, V>;
}

/** Whether `value` names an element type. */
export function isDataType(value: string): value is DataType {
  return Object.hasOwn(DATA_TYPE_INFO, value);
}

/** Bytes per element of `dtype`. */
export function elementBytes(dtype: DataType): number {
  return DATA_TYPE_INFO[dtype].bytes;
}

/** Whether `dtype` holds floating-point numbers popef-toolkit can convert (not the F8 formats). */
export function isFloat(dtype: DataType): boolean {
  return DATA_TYPE_INFO[dtype].numbers === 'float';
}
