/**
 * Triton's ModelConfig (package `inference`) as data: every message, field,
 * field number, type, enum value and the Triton release that introduced it.
 * The text-format parser, the printer and the protobuf binary decoder used
 * by the tests are all driven by this table, and schemas/model_config.proto
 * is generated from it (scripts/generate-proto.ts), so the three can never
 * disagree.
 *
 * Facts from Triton's public model_config.proto
 * (https://github.com/triton-inference-server/common/blob/main/protobuf/model_config.proto,
 * and its release branches for `since`); the table's wording and layout
 * are this project's own.
 *
 * `since` is the first Triton release whose proto has the field. Fields
 * without it exist in 21.05, the release the Poplar backend documents.
 * `since: 'unknown'` marks a field whose first release is not recorded;
 * printers targeting a release refuse it. The values were checked against
 * the release branches (r20.10 to r26.07) of Triton's common repository.
 */

export type ScalarType = 'string' | 'bool' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'float' | 'double';

/** Enum values in numeric order: every enum of ModelConfig numbers its values 0, 1, 2... */
export const ENUMS = {
  'inference.DataType': [
    'TYPE_INVALID',
    'TYPE_BOOL',
    'TYPE_UINT8',
    'TYPE_UINT16',
    'TYPE_UINT32',
    'TYPE_UINT64',
    'TYPE_INT8',
    'TYPE_INT16',
    'TYPE_INT32',
    'TYPE_INT64',
    'TYPE_FP16',
    'TYPE_FP32',
    'TYPE_FP64',
    'TYPE_STRING',
    'TYPE_BF16',
  ],
  'inference.ModelInstanceGroup.Kind': ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL'],
  'inference.ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind': ['KIND_NVDLA'],
  'inference.ModelInput.Format': ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'],
  'inference.BatchInput.Kind': [
    'BATCH_ELEMENT_COUNT',
    'BATCH_ACCUMULATED_ELEMENT_COUNT',
    'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
    'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE',
    'BATCH_ITEM_SHAPE',
    'BATCH_ITEM_SHAPE_FLATTEN',
  ],
  'inference.BatchOutput.Kind': ['BATCH_SCATTER_WITH_INPUT_SHAPE'],
  'inference.ModelOptimizationPolicy.ModelPriority': ['PRIORITY_DEFAULT', 'PRIORITY_MAX', 'PRIORITY_MIN'],
  'inference.ModelQueuePolicy.TimeoutAction': ['REJECT', 'DELAY'],
  'inference.ModelSequenceBatching.Control.Kind': [
    'CONTROL_SEQUENCE_START',
    'CONTROL_SEQUENCE_READY',
    'CONTROL_SEQUENCE_END',
    'CONTROL_SEQUENCE_CORRID',
  ],
} as const;

export type EnumName = keyof typeof ENUMS;

/** Enum values introduced after 21.05. */
export const ENUM_VALUE_SINCE: Readonly<Record<string, string>> = {
  'inference.DataType.TYPE_BF16': '22.05',
  'inference.BatchInput.Kind.BATCH_ITEM_SHAPE': '22.03',
  'inference.BatchInput.Kind.BATCH_ITEM_SHAPE_FLATTEN': '22.03',
};

/** One field: number, type, cardinality, and where known the release that introduced it. */
export interface FieldSpec {
  readonly n: number;
  /** A scalar type, or the full name of an enum or message (checked by a test). */
  readonly t: string;
  readonly repeated?: true;
  /** A map field: the key's scalar type; `t` is the value type. */
  readonly map?: 'string' | 'uint64';
  readonly oneof?: string;
  readonly since?: string;
}

/** A scalar field; generic so the literal types survive for the typed model (model-config.ts). */
function S<T extends ScalarType, E extends Partial<FieldSpec> = { readonly since?: undefined }>(
  n: number,
  t: T,
  extra?: E,
): { readonly n: number; readonly t: T } & E {
  return { n, t, ...(extra ?? ({} as E)) };
}

/** Messages by full name; fields in declaration order. */
export const MESSAGES = {
  'inference.ModelRateLimiter': {
    resources: { n: 1, t: 'inference.ModelRateLimiter.Resource', repeated: true },
    priority: S(2, 'uint32'),
  },
  'inference.ModelRateLimiter.Resource': {
    name: S(1, 'string'),
    global: S(2, 'bool'),
    count: S(3, 'uint32'),
  },
  'inference.ModelInstanceGroup': {
    name: S(1, 'string'),
    kind: { n: 4, t: 'inference.ModelInstanceGroup.Kind' },
    count: S(2, 'int32'),
    rate_limiter: { n: 6, t: 'inference.ModelRateLimiter' },
    gpus: S(3, 'int32', { repeated: true }),
    secondary_devices: { n: 8, t: 'inference.ModelInstanceGroup.SecondaryDevice', repeated: true, since: '21.06' },
    profile: S(5, 'string', { repeated: true }),
    passive: S(7, 'bool', { since: '21.06' }),
    host_policy: S(9, 'string', { since: '21.06' }),
  },
  'inference.ModelInstanceGroup.SecondaryDevice': {
    kind: { n: 1, t: 'inference.ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind' },
    device_id: S(2, 'int64'),
  },
  'inference.ModelTensorReshape': {
    shape: S(1, 'int64', { repeated: true }),
  },
  'inference.ModelInput': {
    name: S(1, 'string'),
    data_type: { n: 2, t: 'inference.DataType' },
    format: { n: 3, t: 'inference.ModelInput.Format' },
    dims: S(4, 'int64', { repeated: true }),
    reshape: { n: 5, t: 'inference.ModelTensorReshape' },
    is_shape_tensor: S(6, 'bool'),
    allow_ragged_batch: S(7, 'bool'),
    optional: S(8, 'bool', { since: '22.01' }),
    is_non_linear_format_io: S(9, 'bool', { since: '24.08' }),
  },
  'inference.ModelOutput': {
    name: S(1, 'string'),
    data_type: { n: 2, t: 'inference.DataType' },
    dims: S(3, 'int64', { repeated: true }),
    reshape: { n: 5, t: 'inference.ModelTensorReshape' },
    label_filename: S(4, 'string'),
    is_shape_tensor: S(6, 'bool'),
    is_non_linear_format_io: S(7, 'bool', { since: '24.08' }),
  },
  'inference.BatchInput': {
    kind: { n: 1, t: 'inference.BatchInput.Kind' },
    target_name: S(2, 'string', { repeated: true }),
    data_type: { n: 3, t: 'inference.DataType' },
    source_input: S(4, 'string', { repeated: true }),
  },
  'inference.BatchOutput': {
    target_name: S(1, 'string', { repeated: true }),
    kind: { n: 2, t: 'inference.BatchOutput.Kind' },
    source_input: S(3, 'string', { repeated: true }),
  },
  'inference.ModelVersionPolicy': {
    latest: { n: 1, t: 'inference.ModelVersionPolicy.Latest', oneof: 'policy_choice' },
    all: { n: 2, t: 'inference.ModelVersionPolicy.All', oneof: 'policy_choice' },
    specific: { n: 3, t: 'inference.ModelVersionPolicy.Specific', oneof: 'policy_choice' },
  },
  'inference.ModelVersionPolicy.Latest': {
    num_versions: S(1, 'uint32'),
  },
  'inference.ModelVersionPolicy.All': {},
  'inference.ModelVersionPolicy.Specific': {
    versions: S(1, 'int64', { repeated: true }),
  },
  'inference.ModelOptimizationPolicy': {
    graph: { n: 1, t: 'inference.ModelOptimizationPolicy.Graph' },
    priority: { n: 2, t: 'inference.ModelOptimizationPolicy.ModelPriority' },
    cuda: { n: 3, t: 'inference.ModelOptimizationPolicy.Cuda' },
    execution_accelerators: { n: 4, t: 'inference.ModelOptimizationPolicy.ExecutionAccelerators' },
    input_pinned_memory: { n: 5, t: 'inference.ModelOptimizationPolicy.PinnedMemoryBuffer' },
    output_pinned_memory: { n: 6, t: 'inference.ModelOptimizationPolicy.PinnedMemoryBuffer' },
    gather_kernel_buffer_threshold: S(7, 'uint32'),
    eager_batching: S(8, 'bool'),
  },
  'inference.ModelOptimizationPolicy.Graph': {
    level: S(1, 'int32'),
  },
  'inference.ModelOptimizationPolicy.Cuda': {
    graphs: S(1, 'bool'),
    busy_wait_events: S(2, 'bool'),
    graph_spec: { n: 3, t: 'inference.ModelOptimizationPolicy.Cuda.GraphSpec', repeated: true },
    output_copy_stream: S(4, 'bool'),
  },
  'inference.ModelOptimizationPolicy.Cuda.GraphSpec': {
    batch_size: S(1, 'int32'),
    input: { n: 2, t: 'inference.ModelOptimizationPolicy.Cuda.GraphSpec.Shape', map: 'string' },
    graph_lower_bound: { n: 3, t: 'inference.ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound' },
  },
  'inference.ModelOptimizationPolicy.Cuda.GraphSpec.Shape': {
    dim: S(1, 'int64', { repeated: true }),
  },
  'inference.ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound': {
    batch_size: S(1, 'int32'),
    input: { n: 2, t: 'inference.ModelOptimizationPolicy.Cuda.GraphSpec.Shape', map: 'string' },
  },
  'inference.ModelOptimizationPolicy.ExecutionAccelerators': {
    gpu_execution_accelerator: { n: 1, t: 'inference.ModelOptimizationPolicy.ExecutionAccelerators.Accelerator', repeated: true },
    cpu_execution_accelerator: { n: 2, t: 'inference.ModelOptimizationPolicy.ExecutionAccelerators.Accelerator', repeated: true },
  },
  'inference.ModelOptimizationPolicy.ExecutionAccelerators.Accelerator': {
    name: S(1, 'string'),
    parameters: S(2, 'string', { map: 'string' }),
  },
  'inference.ModelOptimizationPolicy.PinnedMemoryBuffer': {
    enable: S(1, 'bool'),
  },
  'inference.ModelQueuePolicy': {
    timeout_action: { n: 1, t: 'inference.ModelQueuePolicy.TimeoutAction' },
    default_timeout_microseconds: S(2, 'uint64'),
    allow_timeout_override: S(3, 'bool'),
    max_queue_size: S(4, 'uint32'),
  },
  'inference.ModelDynamicBatching': {
    preferred_batch_size: S(1, 'int32', { repeated: true }),
    max_queue_delay_microseconds: S(2, 'uint64'),
    preserve_ordering: S(3, 'bool'),
    priority_levels: S(4, 'uint64'),
    default_priority_level: S(5, 'uint64'),
    default_queue_policy: { n: 6, t: 'inference.ModelQueuePolicy' },
    priority_queue_policy: { n: 7, t: 'inference.ModelQueuePolicy', map: 'uint64' },
  },
  'inference.ModelSequenceBatching': {
    direct: { n: 3, t: 'inference.ModelSequenceBatching.StrategyDirect', oneof: 'strategy_choice' },
    oldest: { n: 4, t: 'inference.ModelSequenceBatching.StrategyOldest', oneof: 'strategy_choice' },
    max_sequence_idle_microseconds: S(1, 'uint64'),
    control_input: { n: 2, t: 'inference.ModelSequenceBatching.ControlInput', repeated: true },
    state: { n: 5, t: 'inference.ModelSequenceBatching.State', repeated: true, since: '21.11' },
    iterative_sequence: S(6, 'bool', { since: '23.11' }),
  },
  'inference.ModelSequenceBatching.Control': {
    kind: { n: 1, t: 'inference.ModelSequenceBatching.Control.Kind' },
    int32_false_true: S(2, 'int32', { repeated: true }),
    fp32_false_true: S(3, 'float', { repeated: true }),
    bool_false_true: S(5, 'bool', { repeated: true, since: '21.09' }),
    data_type: { n: 4, t: 'inference.DataType' },
  },
  'inference.ModelSequenceBatching.ControlInput': {
    name: S(1, 'string'),
    control: { n: 2, t: 'inference.ModelSequenceBatching.Control', repeated: true },
  },
  'inference.ModelSequenceBatching.InitialState': {
    data_type: { n: 1, t: 'inference.DataType' },
    dims: S(2, 'int64', { repeated: true }),
    zero_data: S(3, 'bool', { oneof: 'state_data' }),
    data_file: S(4, 'string', { oneof: 'state_data' }),
    name: S(5, 'string'),
  },
  'inference.ModelSequenceBatching.State': {
    input_name: S(1, 'string'),
    output_name: S(2, 'string'),
    data_type: { n: 3, t: 'inference.DataType' },
    dims: S(4, 'int64', { repeated: true }),
    initial_state: { n: 5, t: 'inference.ModelSequenceBatching.InitialState', repeated: true, since: '22.01' },
    use_same_buffer_for_input_output: S(6, 'bool', { since: '23.11' }),
    use_growable_memory: S(7, 'bool', { since: '23.11' }),
  },
  'inference.ModelSequenceBatching.StrategyDirect': {
    max_queue_delay_microseconds: S(1, 'uint64'),
    minimum_slot_utilization: S(2, 'float'),
  },
  'inference.ModelSequenceBatching.StrategyOldest': {
    max_candidate_sequences: S(1, 'int32'),
    preferred_batch_size: S(2, 'int32', { repeated: true }),
    max_queue_delay_microseconds: S(3, 'uint64'),
    preserve_ordering: S(4, 'bool', { since: '23.08' }),
  },
  'inference.ModelEnsembling': {
    step: { n: 1, t: 'inference.ModelEnsembling.Step', repeated: true },
    max_inflight_requests: S(2, 'uint32', { since: '25.11' }),
  },
  'inference.ModelEnsembling.Step': {
    model_name: S(1, 'string'),
    model_version: S(2, 'int64'),
    input_map: S(3, 'string', { map: 'string' }),
    output_map: S(4, 'string', { map: 'string' }),
    model_namespace: S(5, 'string', { since: '23.03' }),
  },
  'inference.ModelParameter': {
    string_value: S(1, 'string'),
  },
  'inference.ModelWarmup': {
    name: S(1, 'string'),
    batch_size: S(2, 'uint32'),
    inputs: { n: 3, t: 'inference.ModelWarmup.Input', map: 'string' },
    count: S(4, 'uint32', { since: '22.07' }),
  },
  'inference.ModelWarmup.Input': {
    data_type: { n: 1, t: 'inference.DataType' },
    dims: S(2, 'int64', { repeated: true }),
    zero_data: S(3, 'bool', { oneof: 'input_data_type' }),
    random_data: S(4, 'bool', { oneof: 'input_data_type' }),
    input_data_file: S(5, 'string', { oneof: 'input_data_type' }),
  },
  'inference.ModelOperations': {
    op_library_filename: S(1, 'string', { repeated: true }),
  },
  'inference.ModelTransactionPolicy': {
    decoupled: S(1, 'bool'),
  },
  'inference.ModelRepositoryAgents': {
    agents: { n: 1, t: 'inference.ModelRepositoryAgents.Agent', repeated: true },
  },
  'inference.ModelRepositoryAgents.Agent': {
    name: S(1, 'string'),
    parameters: S(2, 'string', { map: 'string' }),
  },
  'inference.ModelResponseCache': {
    enable: S(1, 'bool'),
  },
  'inference.ModelMetrics': {
    metric_control: { n: 1, t: 'inference.ModelMetrics.MetricControl', repeated: true },
  },
  'inference.ModelMetrics.MetricControl': {
    metric_identifier: { n: 1, t: 'inference.ModelMetrics.MetricControl.MetricIdentifier' },
    histogram_options: { n: 2, t: 'inference.ModelMetrics.MetricControl.HistogramOptions', oneof: 'metric_options' },
  },
  'inference.ModelMetrics.MetricControl.MetricIdentifier': {
    family: S(1, 'string'),
  },
  'inference.ModelMetrics.MetricControl.HistogramOptions': {
    buckets: S(1, 'double', { repeated: true }),
  },
  'inference.ModelConfig': {
    name: S(1, 'string'),
    platform: S(2, 'string'),
    backend: S(17, 'string'),
    runtime: S(25, 'string', { since: '24.01' }),
    version_policy: { n: 3, t: 'inference.ModelVersionPolicy' },
    max_batch_size: S(4, 'int32'),
    input: { n: 5, t: 'inference.ModelInput', repeated: true },
    output: { n: 6, t: 'inference.ModelOutput', repeated: true },
    batch_input: { n: 20, t: 'inference.BatchInput', repeated: true },
    batch_output: { n: 21, t: 'inference.BatchOutput', repeated: true },
    optimization: { n: 12, t: 'inference.ModelOptimizationPolicy' },
    dynamic_batching: { n: 11, t: 'inference.ModelDynamicBatching', oneof: 'scheduling_choice' },
    sequence_batching: { n: 13, t: 'inference.ModelSequenceBatching', oneof: 'scheduling_choice' },
    ensemble_scheduling: { n: 15, t: 'inference.ModelEnsembling', oneof: 'scheduling_choice' },
    instance_group: { n: 7, t: 'inference.ModelInstanceGroup', repeated: true },
    default_model_filename: S(8, 'string'),
    cc_model_filenames: S(9, 'string', { map: 'string' }),
    metric_tags: S(10, 'string', { map: 'string' }),
    parameters: { n: 14, t: 'inference.ModelParameter', map: 'string' },
    model_warmup: { n: 16, t: 'inference.ModelWarmup', repeated: true },
    model_operations: { n: 18, t: 'inference.ModelOperations' },
    model_transaction_policy: { n: 19, t: 'inference.ModelTransactionPolicy' },
    model_repository_agents: { n: 23, t: 'inference.ModelRepositoryAgents' },
    response_cache: { n: 24, t: 'inference.ModelResponseCache', since: '21.10' },
    model_metrics: { n: 26, t: 'inference.ModelMetrics', since: '24.11' },
  },
} as const satisfies Record<string, Record<string, FieldSpec>>;

/** The name of a ModelConfig message type (`inference.ModelConfig`, ...). */
export type MessageName = keyof typeof MESSAGES;

export function isEnumName(t: string): t is EnumName {
  return t in ENUMS;
}

export function isMessageName(t: string): t is MessageName {
  return t in MESSAGES;
}

export function fieldsOf(message: MessageName): Readonly<Record<string, FieldSpec>> {
  return MESSAGES[message];
}

/** Triton releases as comparable numbers: "21.05" -> 2105. */
export function releaseNumber(release: string): number {
  const m = /^(\d{2})\.(\d{2})$/.exec(release);
  if (m === null) return Number.NaN;
  return Number(m[1]) * 100 + Number(m[2]);
}

/** Does `target` know a field or value introduced in `since`? Unknown releases count as newer. */
export function knownIn(since: string | undefined, target: string): boolean {
  if (since === undefined) return true;
  if (since === 'unknown') return false;
  return releaseNumber(since) <= releaseNumber(target);
}
