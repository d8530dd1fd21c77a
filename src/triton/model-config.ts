import type { ENUMS, EnumName, MESSAGES, MessageName, ScalarType } from './schema.js';

/**
 * TypeScript types for every ModelConfig message, derived from the schema
 * table in schema.ts, so the types, the parser and the printer share one
 * source. Field names are the proto names, as written in config.pbtxt.
 *
 * Conventions: enum values are their names (a number only for a value the
 * enum does not name); 64-bit integers are numbers when they fit in 2^53,
 * else bigints; a map is a list of `{ key, value }` entries in file order
 * (duplicates kept, so a validator can report them); absent fields are
 * undefined.
 */

export type Int64 = number | bigint;

type ScalarValue<T extends ScalarType> = T extends 'string' ? string : T extends 'bool' ? boolean : T extends 'int64' | 'uint64' ? Int64 : number;

type Resolve<T> = T extends ScalarType
  ? ScalarValue<T>
  : T extends EnumName
    ? (typeof ENUMS)[T][number] | number
    : T extends MessageName
      ? Message<T>
      : never;

/** One entry of a protobuf map field. */
export interface MapEntry<K, V> {
  key: K;
  value: V;
}

type FieldValue<F> = F extends { readonly map: infer K extends ScalarType; readonly t: infer V }
  ? MapEntry<ScalarValue<K>, Resolve<V>>[]
  : F extends { readonly repeated: true; readonly t: infer V }
    ? Resolve<V>[]
    : F extends { readonly t: infer V }
      ? Resolve<V>
      : never;

/** A message of the given full name, e.g. `Message<'inference.ModelInput'>`. */
export type Message<M extends MessageName> = {
  -readonly [K in keyof (typeof MESSAGES)[M]]?: FieldValue<(typeof MESSAGES)[M][K]>;
};

/** Triton's ModelConfig message (model_config.proto), as plain data. */
export type ModelConfig = Message<'inference.ModelConfig'>;
/** Triton's ModelInput message. */
export type ModelInput = Message<'inference.ModelInput'>;
/** Triton's ModelOutput message. */
export type ModelOutput = Message<'inference.ModelOutput'>;
/** Triton's ModelInstanceGroup message. */
export type ModelInstanceGroup = Message<'inference.ModelInstanceGroup'>;
/** Triton's ModelDynamicBatching message. */
export type ModelDynamicBatching = Message<'inference.ModelDynamicBatching'>;
/** Triton's ModelParameter message. */
export type ModelParameter = Message<'inference.ModelParameter'>;
/** A value of Triton's DataType enum (`TYPE_FP32`, ...). */
export type TritonDataType = (typeof ENUMS)['inference.DataType'][number];
