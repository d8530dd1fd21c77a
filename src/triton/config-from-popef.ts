import { ErrorCode, PopefError } from '../errors.js';
import { userAnchors } from '../inspect/anchor-roles.js';
import { DATA_TYPE_INFO, recordOfDataTypes } from '../schema/data-types.js';
import type { Anchor, DataType, Metadata } from '../schema/model.js';
import type { ModelConfig, ModelInput, ModelOutput, TritonDataType } from './model-config.js';

/**
 * config.pbtxt and name_map.json from a PopEF model's anchors, as
 * Graphcore's example repositories have them
 * (https://github.com/graphcore/examples, vision/cnns/pytorch/tests/tritonserver/models):
 * - inputs and outputs are the user-provided anchors (the rule of
 *   `popef dump --user-anchors`), in anchor order;
 * - the leading dimension is the micro-batch and is left out of `dims`
 *   (per-replica anchors of a replicated model carry the replica dimension
 *   first: both are left out);
 * - max_batch_size = micro-batch x device iterations x replication factor x
 *   gradient accumulation, as in every Graphcore example repository;
 * - names default to input_N / output_N, Graphcore's convention.
 */

/** PopEF dtype -> Triton data type (DATA_TYPE_INFO's `triton`); F8 formats have no Triton equivalent. */
export const POPEF_TO_TRITON: Readonly<Record<DataType, TritonDataType | undefined>> = recordOfDataTypes((dtype) => {
  // Typed here so that a registry name model_config.proto does not have fails to compile.
  const triton: TritonDataType | undefined = DATA_TYPE_INFO[dtype].triton;
  return triton;
});

/** Choices configFromPopef leaves to the caller. */
export interface ConfigOptions {
  /** `name:` of the config; omitted when undefined (Triton then uses the directory name). */
  readonly modelName?: string;
  /** Anchor name -> Triton tensor name, for anchors not named input_N / output_N. */
  readonly names?: ReadonlyMap<string, string>;
  /** Defaults to the metadata's deviceIterations (1 when unset). */
  readonly deviceIterations?: number;
  readonly gradientAccumulation?: number;
  /** Overrides the computed max_batch_size. */
  readonly maxBatchSize?: number;
  /** `none`: the first dimension is not a batch (max_batch_size 0, full dims). */
  readonly batching?: 'auto' | 'none';
  /** Extra `parameters` entries, e.g. synchronous_execution=1, timeout_ns=500000. */
  readonly parameters?: readonly (readonly [string, string])[];
  readonly dynamicBatching?: { readonly preferredBatchSizes?: readonly number[]; readonly maxQueueDelayMicroseconds?: number };
}

/** What configFromPopef makes. */
export interface GeneratedConfig {
  readonly config: ModelConfig;
  /** Anchor name -> Triton name, in config order (inputs, then outputs). */
  readonly nameMap: readonly (readonly [string, string])[];
  /** How max_batch_size was computed, for the user. */
  readonly batchExplanation: string;
}

function invalid(message: string, suggestion: string, field?: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, message, { suggestion, field });
}

function positive(value: number | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 1)
    throw invalid(`${what} must be a positive integer, not ${value}`, `give --${what.replace(/ /g, '-')} 1 or more`);
  return value;
}

/** How many leading dimensions are batch dimensions: the micro-batch, plus the replica dimension PopART prepends to per-replica anchors. */
function batchDims(anchor: Anchor, metadata: Metadata): number {
  return anchor.isPerReplica && metadata.replicationFactor > 1 ? 2 : 1;
}

/** A Triton config.pbtxt (as a ModelConfig) and name map for one executable's metadata; `storedTensorNames` are the tensors with a data blob, which are not inputs. */
export function configFromPopef(metadata: Metadata, storedTensorNames: ReadonlySet<string>, options: ConfigOptions = {}): GeneratedConfig {
  const { inputs, outputs } = userAnchors(metadata, storedTensorNames);
  if (inputs.length === 0 && outputs.length === 0) {
    throw invalid(`executable "${metadata.executable}" has no user-provided anchors to serve`, 'check the model with popef dump --all');
  }
  const names = new Map(options.names ?? []);
  const userNames = new Set([...inputs, ...outputs].map((a) => a.name));
  for (const anchor of names.keys()) {
    if (!userNames.has(anchor)) {
      const known = [...userNames].map((n) => JSON.stringify(n)).join(', ');
      throw invalid(
        `--name names anchor "${anchor}", which is not a user-provided anchor of "${metadata.executable}" (those are: ${known})`,
        'use an anchor name shown by popef dump --user-anchors',
        'name',
      );
    }
  }

  const batching = options.batching ?? 'auto';
  const tritonType = (a: Anchor): TritonDataType => {
    const t = POPEF_TO_TRITON[a.tensorInfo.dtype];
    if (t === undefined) {
      throw invalid(
        `anchor "${a.name}" has dtype ${a.tensorInfo.dtype}, which Triton has no data type for`,
        'FP8 tensors cannot be served by Triton; export the model with F16 or F32 inputs and outputs',
      );
    }
    return t;
  };

  // The micro-batch every anchor must agree on.
  let micro: { size: number; anchor: string } | undefined;
  const dimsOf = (a: Anchor): number[] => {
    const shape = [...a.tensorInfo.shape];
    if (batching === 'none') return shape.length === 0 ? [1] : shape;
    const skip = batchDims(a, metadata);
    if (shape.length < skip) {
      throw invalid(
        `anchor "${a.name}" has shape [${shape.join(', ')}], with no batch dimension`,
        'use --batching none for models whose first dimension is not a batch',
      );
    }
    const size = shape[skip - 1] ?? 1;
    if (micro === undefined) micro = { size, anchor: a.name };
    else if (micro.size !== size) {
      throw invalid(
        `anchors disagree on the micro-batch: "${micro.anchor}" has ${micro.size}, "${a.name}" has ${size}`,
        'use --batching none (no batch dimension) or set --max-batch-size explicitly',
      );
    }
    return shape.slice(skip);
  };

  const taken = new Map<string, string>();
  const nameFor = (a: Anchor, fallback: string): string => {
    const name = names.get(a.name) ?? fallback;
    if (name === '') throw invalid(`the Triton name for anchor "${a.name}" is empty`, 'give a non-empty name with --name ANCHOR=NAME');
    const previous = taken.get(name);
    if (previous !== undefined) {
      throw invalid(`anchors "${previous}" and "${a.name}" would both be called "${name}"`, 'give each anchor its own name with --name ANCHOR=NAME');
    }
    taken.set(name, a.name);
    return name;
  };

  const tensor = (a: Anchor, name: string): ModelInput & ModelOutput => {
    const dims = dimsOf(a);
    const entry: ModelInput & ModelOutput = { name, data_type: tritonType(a), dims: dims.length === 0 ? [1] : dims };
    // A per-sample scalar: Triton needs non-empty dims, so [1] reshaped to [].
    if (dims.length === 0 && batching !== 'none') entry.reshape = { shape: [] };
    return entry;
  };
  const input = inputs.map((a, i) => tensor(a, nameFor(a, `input_${i}`)));
  const output = outputs.map((a, i) => tensor(a, nameFor(a, `output_${i}`)));

  const deviceIterations = positive(options.deviceIterations, 'device iterations') ?? Math.max(1, metadata.deviceIterations);
  const gradientAccumulation = positive(options.gradientAccumulation, 'gradient accumulation') ?? 1;
  const replication = Math.max(1, metadata.replicationFactor);
  let maxBatchSize: number;
  let batchExplanation: string;
  if (batching === 'none') {
    maxBatchSize = 0;
    batchExplanation = 'max_batch_size 0: --batching none, dims are the full anchor shapes';
  } else if (options.maxBatchSize !== undefined) {
    maxBatchSize = positive(options.maxBatchSize, 'max batch size') ?? 1;
    batchExplanation = `max_batch_size ${maxBatchSize}: given with --max-batch-size`;
  } else {
    const m = micro?.size ?? 1;
    maxBatchSize = m * deviceIterations * replication * gradientAccumulation;
    batchExplanation = `max_batch_size ${maxBatchSize} = micro-batch ${m} x device iterations ${deviceIterations} x replication factor ${replication} x gradient accumulation ${gradientAccumulation}`;
  }
  if (maxBatchSize > 2 ** 31 - 1)
    throw invalid(`max_batch_size ${maxBatchSize} does not fit in Triton's int32 field`, 'set --max-batch-size explicitly');

  const config: ModelConfig = {
    ...(options.modelName === undefined ? {} : { name: options.modelName }),
    backend: 'poplar',
    max_batch_size: maxBatchSize,
    input,
    output,
    instance_group: [{ kind: 'KIND_CPU' }],
  };
  if (options.dynamicBatching !== undefined) {
    if (maxBatchSize === 0)
      throw invalid('dynamic batching needs a batching model, but max_batch_size is 0', 'drop --dynamic-batching, or do not use --batching none');
    const preferred = [...(options.dynamicBatching.preferredBatchSizes ?? [])];
    for (const p of preferred) {
      if (!Number.isSafeInteger(p) || p < 1 || p > maxBatchSize) {
        throw invalid(
          `preferred batch size ${p} is outside 1..${maxBatchSize} (max_batch_size)`,
          'choose preferred batch sizes no larger than max_batch_size',
        );
      }
    }
    config.dynamic_batching = {
      ...(preferred.length > 0 ? { preferred_batch_size: preferred } : {}),
      ...(options.dynamicBatching.maxQueueDelayMicroseconds === undefined
        ? {}
        : { max_queue_delay_microseconds: options.dynamicBatching.maxQueueDelayMicroseconds }),
    };
  }
  const parameters = new Map<string, string>();
  for (const [key, value] of options.parameters ?? []) {
    if (key === '') throw invalid('a --parameter has an empty key', 'write --parameter KEY=VALUE');
    if (parameters.has(key)) throw invalid(`--parameter ${key} is given twice`, 'give each parameter once');
    parameters.set(key, value);
  }
  if (parameters.size > 0) config.parameters = [...parameters].map(([key, value]) => ({ key, value: { string_value: value } }));

  const anchors = [...inputs, ...outputs];
  const nameMap = [...input, ...output].map((t, i) => [anchors[i]?.name ?? '', t.name ?? ''] as const);
  return { config, nameMap, batchExplanation };
}
