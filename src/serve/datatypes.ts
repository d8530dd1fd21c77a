import type { DataType } from '../schema/model.js';
import type { TritonDataType } from '../triton/model-config.js';

/**
 * The three spellings of an element type that meet in `popef serve`: the
 * inference protocol's ("FP32", what clients send), the model config's
 * ("TYPE_FP32") and PopEF's ("F32", what plugins take). Facts from Triton's
 * protocol documentation and common/src/model_config.cc
 * (DataTypeToProtocolString); the tables are this project's own.
 */

export type ProtocolDataType = 'BOOL' | 'UINT8' | 'UINT16' | 'UINT32' | 'UINT64' | 'INT8' | 'INT16' | 'INT32' | 'INT64' | 'FP16' | 'FP32' | 'FP64' | 'BYTES' | 'BF16';

const CONFIG_TO_PROTOCOL: Readonly<Record<TritonDataType, ProtocolDataType | ''>> = {
  TYPE_INVALID: '',
  TYPE_BOOL: 'BOOL',
  TYPE_UINT8: 'UINT8',
  TYPE_UINT16: 'UINT16',
  TYPE_UINT32: 'UINT32',
  TYPE_UINT64: 'UINT64',
  TYPE_INT8: 'INT8',
  TYPE_INT16: 'INT16',
  TYPE_INT32: 'INT32',
  TYPE_INT64: 'INT64',
  TYPE_FP16: 'FP16',
  TYPE_FP32: 'FP32',
  TYPE_FP64: 'FP64',
  TYPE_STRING: 'BYTES',
  TYPE_BF16: 'BF16',
};

const PROTOCOL_TO_POPEF: Readonly<Record<ProtocolDataType, DataType | undefined>> = {
  BOOL: 'BOOL',
  UINT8: 'U8',
  UINT16: 'U16',
  UINT32: 'U32',
  UINT64: 'U64',
  INT8: 'S8',
  INT16: 'S16',
  INT32: 'S32',
  INT64: 'S64',
  FP16: 'F16',
  FP32: 'F32',
  FP64: 'F64',
  BYTES: undefined,
  BF16: undefined,
};

/** Bytes per element; 0 for BYTES, whose elements carry their own lengths. */
const ELEMENT_BYTES: Readonly<Record<ProtocolDataType, number>> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
  BYTES: 0,
  BF16: 2,
};

export function isProtocolDataType(value: string): value is ProtocolDataType {
  return Object.hasOwn(ELEMENT_BYTES, value);
}

/** "TYPE_FP32" -> "FP32"; "" for TYPE_INVALID or a number the enum does not name (Triton prints "<invalid>"). */
export function protocolFromConfig(type: TritonDataType | number | undefined): ProtocolDataType | '' {
  if (typeof type !== 'string') return '';
  return CONFIG_TO_PROTOCOL[type];
}

/** The PopEF element type a plugin takes for a protocol type, if any. */
export function popefFromProtocol(type: ProtocolDataType): DataType | undefined {
  return PROTOCOL_TO_POPEF[type];
}

export function protocolFromPopef(type: DataType): ProtocolDataType | undefined {
  for (const [protocol, popef] of Object.entries(PROTOCOL_TO_POPEF)) if (popef === type) return protocol as ProtocolDataType;
  return undefined;
}

export function protocolElementBytes(type: ProtocolDataType): number {
  return ELEMENT_BYTES[type];
}
