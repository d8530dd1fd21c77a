import { DATA_TYPES, elementBytes, type DataType } from '../schema/model.js';
import { POPEF_TO_TRITON } from './config-from-popef.js';
import type { TritonDataType } from './model-config.js';

/**
 * The three spellings of an element type that meet in the inference
 * protocol: the protocol's ("FP32", what clients send), the model config's
 * ("TYPE_FP32") and PopEF's ("F32", what plugins take). PopEF <-> config is
 * POPEF_TO_TRITON (config-from-popef.ts); this adds the protocol's names
 * (Triton's DataTypeToProtocolString, common/src/model_config.cc) and
 * derives the rest from the two.
 */

export type ProtocolDataType =
  'BOOL' | 'UINT8' | 'UINT16' | 'UINT32' | 'UINT64' | 'INT8' | 'INT16' | 'INT32' | 'INT64' | 'FP16' | 'FP32' | 'FP64' | 'BYTES' | 'BF16';

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

const PROTOCOL_TYPES = new Set<string>(Object.values(CONFIG_TO_PROTOCOL).filter((p) => p !== ''));

/** Protocol name -> PopEF type, for the types PopEF has (not BYTES, BF16). */
const PROTOCOL_TO_POPEF: ReadonlyMap<ProtocolDataType, DataType> = new Map(
  DATA_TYPES.flatMap((popef) => {
    const protocol = protocolFromPopef(popef);
    return protocol === undefined ? [] : [[protocol, popef] as const];
  }),
);

export function isProtocolDataType(value: string): value is ProtocolDataType {
  return PROTOCOL_TYPES.has(value);
}

/** "TYPE_FP32" -> "FP32"; "" for TYPE_INVALID or a number the enum does not name (Triton prints "<invalid>"). */
export function protocolFromConfig(type: TritonDataType | number | undefined): ProtocolDataType | '' {
  if (typeof type !== 'string') return '';
  return CONFIG_TO_PROTOCOL[type];
}

/** The PopEF element type a plugin takes for a protocol type, if any. */
export function popefFromProtocol(type: ProtocolDataType): DataType | undefined {
  return PROTOCOL_TO_POPEF.get(type);
}

/** The protocol name of a PopEF element type, if Triton has one (not for the F8 types). */
export function protocolFromPopef(type: DataType): ProtocolDataType | undefined {
  const config = POPEF_TO_TRITON[type];
  const protocol = config === undefined ? '' : CONFIG_TO_PROTOCOL[config];
  return protocol === '' ? undefined : protocol;
}

/** Bytes per element; 0 for BYTES, whose elements carry their own lengths. */
export function protocolElementBytes(type: ProtocolDataType): number {
  if (type === 'BYTES') return 0;
  if (type === 'BF16') return 2;
  const popef = popefFromProtocol(type);
  return popef === undefined ? 0 : elementBytes(popef);
}
