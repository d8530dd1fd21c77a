import type { ModelConfig } from '../triton/model-config.js';
import { ENUMS, MESSAGES, type FieldSpec } from '../triton/schema.js';

/**
 * A ModelConfig as Triton's endpoints return it, driven by the schema
 * table: the JSON of GET /v2/models/{m}/config (core r24.10,
 * ModelConfigToJson: protobuf JSON with proto field names and every
 * primitive printed, 64-bit integers as strings except the fields Triton
 * fixes to numbers), and the plain object protobufjs encodes for gRPC's
 * ModelConfigResponse.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const SCALARS = new Set(['string', 'bool', 'int32', 'int64', 'uint32', 'uint64', 'float', 'double']);

/** The 64-bit fields ModelConfigToJson turns back into numbers, as message.field. */
const NUMERIC_INT64 = new Set([
  'inference.ModelInput.dims',
  'inference.ModelOutput.dims',
  'inference.ModelTensorReshape.shape',
  'inference.ModelVersionPolicy.Specific.versions',
  'inference.ModelDynamicBatching.max_queue_delay_microseconds',
  'inference.ModelDynamicBatching.priority_levels',
  'inference.ModelDynamicBatching.default_priority_level',
  'inference.ModelQueuePolicy.default_timeout_microseconds',
  'inference.ModelSequenceBatching.max_sequence_idle_microseconds',
  'inference.ModelSequenceBatching.StrategyOldest.max_queue_delay_microseconds',
  'inference.ModelSequenceBatching.StrategyDirect.max_queue_delay_microseconds',
  'inference.ModelSequenceBatching.State.dims',
  'inference.ModelSequenceBatching.InitialState.dims',
  'inference.ModelEnsembling.Step.model_version',
  'inference.ModelWarmup.Input.dims',
]);

function fieldsOf(message: string): Readonly<Record<string, FieldSpec>> {
  return (MESSAGES as Record<string, Record<string, FieldSpec>>)[message] ?? {};
}

function enumName(type: string, value: unknown): string {
  if (typeof value === 'string') return value;
  const names = (ENUMS as Record<string, readonly string[]>)[type] ?? [];
  return names[Number(value)] ?? String(value);
}

function scalarDefault(type: string): Json {
  if (type === 'string') return '';
  if (type === 'bool') return false;
  if (type === 'int64' || type === 'uint64') return '0';
  return 0;
}

function jsonScalar(type: string, value: unknown, numeric: boolean): Json {
  if (type === 'int64' || type === 'uint64') return numeric ? Number(value) : String(value);
  if (type === 'bool') return value === true;
  if (type === 'string') return String(value);
  return Number(value);
}

function jsonValue(spec: FieldSpec, value: unknown, numeric: boolean): Json {
  if (SCALARS.has(spec.t)) return jsonScalar(spec.t, value, numeric);
  if (spec.t in ENUMS) return enumName(spec.t, value);
  return messageJson(spec.t, value as Record<string, unknown>);
}

function messageJson(message: string, value: Readonly<Record<string, unknown>>): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  for (const [name, spec] of Object.entries(fieldsOf(message))) {
    const v = value[name];
    const numeric = NUMERIC_INT64.has(`${message}.${name}`);
    if (spec.map !== undefined) {
      const entries = (v as { key: unknown; value: unknown }[] | undefined) ?? [];
      const object: { [key: string]: Json } = {};
      for (const e of entries) object[String(e.key)] = jsonValue({ ...spec, map: undefined }, e.value, numeric);
      out[name] = object;
    } else if (spec.repeated === true) {
      out[name] = ((v as unknown[] | undefined) ?? []).map((item) => jsonValue(spec, item, numeric));
    } else if (v !== undefined) {
      out[name] = jsonValue(spec, v, numeric);
    } else if (spec.oneof === undefined && SCALARS.has(spec.t)) {
      out[name] = numeric ? 0 : scalarDefault(spec.t);
    } else if (spec.oneof === undefined && spec.t in ENUMS) {
      out[name] = enumName(spec.t, 0);
    }
  }
  return out;
}

/** GET /v2/models/{m}/config. */
export function configToJson(config: ModelConfig): { [key: string]: Json } {
  return messageJson('inference.ModelConfig', config);
}

/** The config as protobufjs's fromObject takes it: maps as objects, 64-bit values as strings. */
export function configToProtoObject(config: ModelConfig): Record<string, unknown> {
  return protoObject('inference.ModelConfig', config);
}

function protoValue(spec: FieldSpec, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (SCALARS.has(spec.t) || spec.t in ENUMS) return value;
  return protoObject(spec.t, value as Record<string, unknown>);
}

function protoObject(message: string, value: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(fieldsOf(message))) {
    const v = value[name];
    if (v === undefined) continue;
    if (spec.map !== undefined) {
      out[name] = Object.fromEntries((v as { key: unknown; value: unknown }[]).map((e) => [String(e.key), protoValue(spec, e.value)]));
    } else if (spec.repeated === true) {
      out[name] = (v as unknown[]).map((item) => protoValue(spec, item));
    } else {
      out[name] = protoValue(spec, v);
    }
  }
  return out;
}
