// The corpus of the Triton differential test: one model repository holding
// every fixture model, the configs popef scaffold writes, and several
// hundred configs made by mutating valid ones through the parsed config
// (or, for syntax, the text), each in its own model directory.
import { cp, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelConfig, ModelInput, ModelOutput } from '../../../src/triton/model-config.js';
import { parsePbtxt } from '../../../src/triton/pbtxt-parser.js';
import { printPbtxt } from '../../../src/triton/pbtxt-printer.js';
import { FIXTURES } from '../../helpers.js';

export interface CorpusModel {
  readonly name: string;
  /** Where it came from: a fixture, a base and a mutation. */
  readonly origin: string;
  /**
   * Load it in a tritonserver of its own, retried when that server crashes:
   * a model with implicit state that Triton refuses makes tritonserver 2.51
   * crash now and then (SIGSEGV in TritonBackendThread::StopBackendThread,
   * from ~TritonModel on TritonModel::Create's error path, after the model's
   * instances exist; about 3 starts in 10 with the stand-in backend, seen
   * with a core dump on 2026-12-02), which would take the whole corpus down.
   */
  readonly alone?: true;
}

interface Base {
  readonly slug: string;
  /** The model directory to copy (its config is replaced). */
  readonly dir: string;
  readonly config: ModelConfig;
}

type Files = Record<string, string | Buffer>;
interface Mutation {
  readonly slug: string;
  /** Applies only to the bases this accepts (warmup sizes follow the first input), when set. */
  readonly only?: (base: Base) => boolean;
  readonly config?: (c: ModelConfig) => ModelConfig;
  /** A text-level change of the printed config (syntax the typed config cannot hold). */
  readonly text?: (t: string) => string;
  readonly files?: (c: ModelConfig) => Files;
  /** Leave the name out so the directory name applies (default: set it). */
  readonly keepName?: boolean;
  /** See CorpusModel.alone. */
  readonly alone?: true;
}

const clone = <T>(x: T): T => structuredClone(x);
const in0 = (c: ModelConfig): ModelInput => c.input?.[0] ?? {};
const out0 = (c: ModelConfig): ModelOutput => c.output?.[0] ?? {};
const withIn0 = (c: ModelConfig, patch: Partial<ModelInput>): ModelConfig => ({
  ...c,
  input: [{ ...in0(c), ...patch }, ...(c.input ?? []).slice(1)],
});
const withOut0 = (c: ModelConfig, patch: Partial<ModelOutput>): ModelConfig => ({
  ...c,
  output: [{ ...out0(c), ...patch }, ...(c.output ?? []).slice(1)],
});
const dims0 = (c: ModelConfig): number[] => (in0(c).dims ?? []).map(Number);
const bytesOf = (c: ModelConfig): number => dims0(c).reduce((a, b) => a * b, 1) * 4;
const fixedFp32 = (b: Base): boolean => in0(b.config).data_type === 'TYPE_FP32' && dims0(b.config).every((d) => d > 0);
/** A warmup entry of zeros for every config input, with the config's type and dims. */
const warmAll = (c: ModelConfig): { key: string; value: { data_type?: ModelInput['data_type']; dims?: ModelInput['dims']; zero_data: boolean } }[] =>
  (c.input ?? []).map((t) => ({ key: t.name ?? '', value: { data_type: t.data_type, dims: t.dims, zero_data: true } }));
const isMnist = (b: Base): boolean => b.slug === 'mnist';
type State = NonNullable<NonNullable<ModelConfig['sequence_batching']>['state']>[number];
type InitialState = NonNullable<State['initial_state']>[number];
const initial = (patch: Partial<InitialState> = {}): InitialState => ({ name: 'init', data_type: 'TYPE_FP32', dims: [2], zero_data: true, ...patch });
const state = (patch: Partial<State> = {}): State => ({
  input_name: 'INPUT_STATE',
  output_name: 'OUTPUT_STATE',
  data_type: 'TYPE_FP32',
  dims: [2],
  initial_state: [initial()],
  ...patch,
});
const withState = (c: ModelConfig, states: State[]): ModelConfig => ({ ...c, dynamic_batching: undefined, sequence_batching: { state: states } });
const control = (kind: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ kind, ...extra });
const seq = (c: ModelConfig, inputs: { name?: string; control: Record<string, unknown>[] }[], extra: Record<string, unknown> = {}): ModelConfig => ({
  ...c,
  dynamic_batching: undefined,
  sequence_batching: { control_input: inputs, ...extra },
});

const MUTATIONS: readonly Mutation[] = [
  { slug: 'valid' },
  { slug: 'unnamed', keepName: true },
  { slug: 'name-mismatch', config: (c) => ({ ...c, name: 'another_name' }) },
  { slug: 'mbs-negative', config: (c) => ({ ...c, max_batch_size: -1 }) },
  { slug: 'mbs-zero', config: (c) => ({ ...c, max_batch_size: 0 }) },
  { slug: 'mbs-large', config: (c) => ({ ...c, max_batch_size: 2147483647 }) },
  { slug: 'no-backend', config: (c) => ({ ...c, backend: undefined }) },
  { slug: 'unknown-platform', config: (c) => ({ ...c, backend: undefined, platform: 'poplar_popef' }) },
  { slug: 'platform-with-custom-backend', config: (c) => ({ ...c, platform: 'tensorrt_plan' }) },
  { slug: 'platform-backend-pair', config: (c) => ({ ...c, backend: 'onnxruntime', platform: 'tensorrt_plan' }) },
  { slug: 'default-filename-onnx', config: (c) => ({ ...c, backend: undefined, default_model_filename: 'model.onnx' }) },
  { slug: 'ensemble-platform-with-backend', config: (c) => ({ ...c, platform: 'ensemble' }) },
  { slug: 'ensemble-platform-no-scheduling', config: (c) => ({ ...c, backend: undefined, platform: 'ensemble' }) },
  {
    slug: 'ensemble-scheduling-not-ensemble',
    config: (c) => ({
      ...c,
      dynamic_batching: undefined,
      sequence_batching: undefined,
      ensemble_scheduling: { step: [{ model_name: 'x', input_map: [{ key: 'a', value: 'b' }], output_map: [{ key: 'c', value: 'd' }] }] },
    }),
  },
  // Dynamic batching.
  { slug: 'db-empty', config: (c) => ({ ...c, sequence_batching: undefined, dynamic_batching: {} }) },
  { slug: 'db-preferred-zero', config: (c) => ({ ...c, sequence_batching: undefined, dynamic_batching: { preferred_batch_size: [0] } }) },
  {
    slug: 'db-preferred-over',
    config: (c) => ({ ...c, sequence_batching: undefined, dynamic_batching: { preferred_batch_size: [(c.max_batch_size ?? 0) + 1] } }),
  },
  {
    slug: 'db-preferred-ok',
    config: (c) => ({ ...c, sequence_batching: undefined, dynamic_batching: { preferred_batch_size: [Math.max(1, c.max_batch_size ?? 0)] } }),
  },
  { slug: 'db-priority-default-zero', config: (c) => ({ ...c, sequence_batching: undefined, dynamic_batching: { priority_levels: 2 } }) },
  {
    slug: 'db-priority-default-over',
    config: (c) => ({ ...c, sequence_batching: undefined, dynamic_batching: { priority_levels: 2, default_priority_level: 3 } }),
  },
  {
    slug: 'db-priority-ok',
    config: (c) => ({ ...c, sequence_batching: undefined, dynamic_batching: { priority_levels: 2, default_priority_level: 1 } }),
  },
  {
    slug: 'db-priority-policy-over',
    config: (c) => ({
      ...c,
      sequence_batching: undefined,
      dynamic_batching: { priority_levels: 2, default_priority_level: 1, priority_queue_policy: [{ key: 3, value: { max_queue_size: 4 } }] },
    }),
  },
  {
    slug: 'db-preserve-levels',
    config: (c) => ({
      ...c,
      sequence_batching: undefined,
      dynamic_batching: { priority_levels: 2, default_priority_level: 1, preserve_ordering: true },
    }),
  },
  {
    slug: 'db-preserve-delay',
    config: (c) => ({
      ...c,
      sequence_batching: undefined,
      dynamic_batching: { preserve_ordering: true, default_queue_policy: { timeout_action: 'DELAY', default_timeout_microseconds: 100 } },
    }),
  },
  {
    slug: 'db-preserve-delay-no-timeout',
    config: (c) => ({
      ...c,
      sequence_batching: undefined,
      dynamic_batching: { preserve_ordering: true, default_queue_policy: { timeout_action: 'DELAY' } },
    }),
  },
  // Sequence batching.
  { slug: 'sb-empty', config: (c) => seq(c, []) },
  { slug: 'sb-start-no-values', config: (c) => seq(c, [{ name: 'START', control: [control('CONTROL_SEQUENCE_START')] }]) },
  { slug: 'sb-start-ok', config: (c) => seq(c, [{ name: 'START', control: [control('CONTROL_SEQUENCE_START', { int32_false_true: [0, 1] })] }]) },
  { slug: 'sb-start-one-value', config: (c) => seq(c, [{ name: 'START', control: [control('CONTROL_SEQUENCE_START', { int32_false_true: [0] })] }]) },
  {
    slug: 'sb-start-two-kinds',
    config: (c) => seq(c, [{ name: 'START', control: [control('CONTROL_SEQUENCE_START', { int32_false_true: [0, 1], fp32_false_true: [0, 1] })] }]),
  },
  {
    slug: 'sb-two-start',
    config: (c) =>
      seq(c, [
        { name: 'S1', control: [control('CONTROL_SEQUENCE_START', { int32_false_true: [0, 1] })] },
        { name: 'S2', control: [control('CONTROL_SEQUENCE_START', { int32_false_true: [0, 1] })] },
      ]),
  },
  {
    slug: 'sb-two-end',
    config: (c) =>
      seq(c, [
        { name: 'E1', control: [control('CONTROL_SEQUENCE_END', { int32_false_true: [0, 1] })] },
        { name: 'E2', control: [control('CONTROL_SEQUENCE_END', { int32_false_true: [0, 1] })] },
      ]),
  },
  {
    slug: 'sb-two-ready-one-input',
    config: (c) =>
      seq(c, [
        {
          name: 'R',
          control: [control('CONTROL_SEQUENCE_READY', { int32_false_true: [0, 1] }), control('CONTROL_SEQUENCE_READY', { int32_false_true: [0, 1] })],
        },
      ]),
  },
  {
    slug: 'sb-same-name',
    config: (c) =>
      seq(c, [
        { name: 'C', control: [control('CONTROL_SEQUENCE_START', { int32_false_true: [0, 1] })] },
        { name: 'C', control: [control('CONTROL_SEQUENCE_END', { int32_false_true: [0, 1] })] },
      ]),
  },
  { slug: 'sb-no-name', config: (c) => seq(c, [{ control: [control('CONTROL_SEQUENCE_START', { int32_false_true: [0, 1] })] }]) },
  { slug: 'sb-ready-bool', config: (c) => seq(c, [{ name: 'R', control: [control('CONTROL_SEQUENCE_READY', { bool_false_true: [false, true] })] }]) },
  { slug: 'sb-end-fp32-three', config: (c) => seq(c, [{ name: 'E', control: [control('CONTROL_SEQUENCE_END', { fp32_false_true: [0, 1, 1] })] }]) },
  { slug: 'sb-corrid-fp32', config: (c) => seq(c, [{ name: 'ID', control: [control('CONTROL_SEQUENCE_CORRID', { data_type: 'TYPE_FP32' })] }]) },
  { slug: 'sb-corrid-uint64', config: (c) => seq(c, [{ name: 'ID', control: [control('CONTROL_SEQUENCE_CORRID', { data_type: 'TYPE_UINT64' })] }]) },
  {
    slug: 'sb-corrid-values',
    config: (c) => seq(c, [{ name: 'ID', control: [control('CONTROL_SEQUENCE_CORRID', { data_type: 'TYPE_INT32', int32_false_true: [0, 1] })] }]),
  },
  { slug: 'sb-corrid-no-type', config: (c) => seq(c, [{ name: 'ID', control: [control('CONTROL_SEQUENCE_CORRID')] }]) },
  {
    slug: 'sb-full',
    config: (c) =>
      seq(c, [
        { name: 'START', control: [control('CONTROL_SEQUENCE_START', { int32_false_true: [0, 1] })] },
        { name: 'READY', control: [control('CONTROL_SEQUENCE_READY', { int32_false_true: [0, 1] })] },
        { name: 'END', control: [control('CONTROL_SEQUENCE_END', { int32_false_true: [0, 1] })] },
        { name: 'CORRID', control: [control('CONTROL_SEQUENCE_CORRID', { data_type: 'TYPE_UINT64' })] },
      ]),
  },
  { slug: 'sb-oldest-over', config: (c) => seq(c, [], { oldest: { preferred_batch_size: [(c.max_batch_size ?? 0) + 1] } }) },
  { slug: 'sb-oldest-zero', config: (c) => seq(c, [], { oldest: { preferred_batch_size: [0] } }) },
  { slug: 'sb-oldest-ok', config: (c) => seq(c, [], { oldest: { max_candidate_sequences: 4 } }) },
  { slug: 'sb-direct-util-high', config: (c) => seq(c, [], { direct: { minimum_slot_utilization: 1.5 } }) },
  { slug: 'sb-direct-util-negative', config: (c) => seq(c, [], { direct: { minimum_slot_utilization: -0.5 } }) },
  { slug: 'sb-direct-util-ok', config: (c) => seq(c, [], { direct: { minimum_slot_utilization: 0.5 } }) },
  { slug: 'sb-response-cache', config: (c) => ({ ...seq(c, []), response_cache: { enable: true } }) },
  {
    slug: 'sb-batch-strategy',
    config: (c) => ({ ...seq(c, []), parameters: [{ key: 'TRITON_BATCH_STRATEGY_PATH', value: { string_value: '/nonexistent/batchstrategy.so' } }] }),
  },
  { slug: 'decoupled-response-cache', config: (c) => ({ ...c, model_transaction_policy: { decoupled: true }, response_cache: { enable: true } }) },
  // Implicit state (SequenceBatchScheduler::Create), each model in a server of its own (CorpusModel.alone).
  // Only states Triton refuses: with the stand-in backend, tritonserver 2.51 crashes (SIGSEGV) while
  // loading one of the models that pass these checks.
  {
    slug: 'st-two-initial',
    only: isMnist,
    alone: true,
    config: (c) => withState(c, [state({ initial_state: [initial(), initial({ name: 'again' })] })]),
  },
  { slug: 'st-type', only: isMnist, alone: true, config: (c) => withState(c, [state({ initial_state: [initial({ data_type: 'TYPE_INT32' })] })]) },
  { slug: 'st-no-name', only: isMnist, alone: true, config: (c) => withState(c, [state({ initial_state: [initial({ name: undefined })] })]) },
  { slug: 'st-twice', only: isMnist, alone: true, config: (c) => withState(c, [state(), state({ output_name: 'OUTPUT_STATE2' })]) },
  { slug: 'st-dims-count', only: isMnist, alone: true, config: (c) => withState(c, [state({ initial_state: [initial({ dims: [2, 1] })] })]) },
  { slug: 'st-dims-differ', only: isMnist, alone: true, config: (c) => withState(c, [state({ initial_state: [initial({ dims: [3] })] })]) },
  { slug: 'st-no-data', only: isMnist, alone: true, config: (c) => withState(c, [state({ initial_state: [initial({ zero_data: undefined })] })]) },
  {
    slug: 'st-file-missing',
    only: isMnist,
    alone: true,
    config: (c) => withState(c, [state({ initial_state: [initial({ zero_data: undefined, data_file: 'init0' })] })]),
  },
  {
    slug: 'st-file-short',
    only: isMnist,
    alone: true,
    config: (c) => withState(c, [state({ initial_state: [initial({ zero_data: undefined, data_file: 'init0' })] })]),
    files: () => ({ 'initial_state/init0': Buffer.alloc(5) }),
  },
  { slug: 'decoupled', config: (c) => ({ ...c, model_transaction_policy: { decoupled: true } }) },
  // Instance groups.
  { slug: 'ig-gpu', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_GPU' }] }) },
  { slug: 'ig-gpu-negative', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_GPU', gpus: [-1] }] }) },
  { slug: 'ig-gpu-zero', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_GPU', gpus: [0] }] }) },
  { slug: 'ig-cpu-gpus', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_CPU', gpus: [0] }] }) },
  { slug: 'ig-model', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_MODEL' }] }) },
  { slug: 'ig-model-gpus', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_MODEL', gpus: [1] }] }) },
  { slug: 'ig-auto-negative', config: (c) => ({ ...c, instance_group: [{ gpus: [-1] }] }) },
  { slug: 'ig-named', config: (c) => ({ ...c, instance_group: [{ name: 'ipus', kind: 'KIND_CPU', count: 2 }] }) },
  { slug: 'ig-none', config: (c) => ({ ...c, instance_group: undefined }) },
  { slug: 'ig-profile', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_CPU', profile: ['0'] }] }) },
  { slug: 'ig-count-zero', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_CPU', count: 0 }] }) },
  { slug: 'ig-second-bad', config: (c) => ({ ...c, instance_group: [{ kind: 'KIND_CPU' }, { kind: 'KIND_CPU', gpus: [0] }] }) },
  // Inputs and outputs.
  { slug: 'in-no-name', config: (c) => withIn0(c, { name: undefined }) },
  { slug: 'in-no-type', config: (c) => withIn0(c, { data_type: undefined }) },
  { slug: 'in-no-dims', config: (c) => withIn0(c, { dims: [] }) },
  { slug: 'in-dim-zero', config: (c) => withIn0(c, { dims: [0, ...dims0(c).slice(1)] }) },
  { slug: 'in-dim-minus-two', config: (c) => withIn0(c, { dims: [-2, ...dims0(c).slice(1)] }) },
  { slug: 'in-dim-variable', config: (c) => withIn0(c, { dims: [-1, ...dims0(c).slice(1)] }) },
  { slug: 'in-reshape-flat', config: (c) => withIn0(c, { reshape: { shape: [dims0(c).reduce((a, b) => a * b, 1)] } }) },
  { slug: 'in-reshape-size', config: (c) => withIn0(c, { reshape: { shape: [dims0(c).reduce((a, b) => a * b, 1) + 1] } }) },
  { slug: 'in-reshape-zero', config: (c) => withIn0(c, { reshape: { shape: [0] } }) },
  { slug: 'in-reshape-empty', config: (c) => withIn0(c, { reshape: {} }) },
  { slug: 'in-reshape-empty-no-batch', config: (c) => withIn0({ ...c, max_batch_size: 0, dynamic_batching: undefined }, { dims: [1], reshape: {} }) },
  { slug: 'in-reshape-empty-scalar', config: (c) => withIn0(c, { dims: [1], reshape: {} }) },
  {
    slug: 'in-reshape-variable-ok',
    config: (c) =>
      withIn0(c, {
        dims: [-1, ...dims0(c).slice(1)],
        reshape: {
          shape: [
            -1,
            dims0(c)
              .slice(1)
              .reduce((a, b) => a * b, 1),
          ],
        },
      }),
  },
  {
    slug: 'in-reshape-variable-fixed',
    config: (c) => withIn0(c, { dims: [-1, ...dims0(c).slice(1)], reshape: { shape: [dims0(c).reduce((a, b) => a * b, 1)] } }),
  },
  {
    slug: 'in-reshape-variable-count',
    config: (c) => withIn0(c, { dims: [-1, -1, ...dims0(c).slice(1)], reshape: { shape: [-1, ...dims0(c).slice(1)] } }),
  },
  { slug: 'in-reshape-variable-trunk', config: (c) => withIn0(c, { dims: [-1, 2, 3], reshape: { shape: [3, -1, 2] } }) },
  { slug: 'in-nchw-ok', config: (c) => withIn0(c, { format: 'FORMAT_NCHW', dims: [1, 28, 28] }) },
  { slug: 'in-nhwc-flat', config: (c) => withIn0(c, { format: 'FORMAT_NHWC', dims: [784] }) },
  { slug: 'in-shape-tensor', config: (c) => withIn0(c, { is_shape_tensor: true }) },
  { slug: 'in-non-linear', config: (c) => withIn0(c, { is_non_linear_format_io: true }) },
  { slug: 'in-optional', config: (c) => withIn0(c, { optional: true }) },
  { slug: 'in-duplicate', config: (c) => ({ ...c, input: [in0(c), ...(c.input ?? [])] }) },
  { slug: 'out-no-name', config: (c) => withOut0(c, { name: undefined }) },
  { slug: 'out-no-type', config: (c) => withOut0(c, { data_type: undefined }) },
  { slug: 'out-dim-zero', config: (c) => withOut0(c, { dims: [0] }) },
  { slug: 'out-no-dims', config: (c) => withOut0(c, { dims: [] }) },
  { slug: 'out-shape-tensor', config: (c) => withOut0(c, { is_shape_tensor: true }) },
  { slug: 'out-label-missing', config: (c) => withOut0(c, { label_filename: 'labels.txt' }) },
  { slug: 'decoupled', only: isMnist, config: (c) => ({ ...c, model_transaction_policy: { decoupled: true } }) },
  { slug: 'out-label-outside', config: (c) => withOut0(c, { label_filename: '../labels.txt' }) },
  {
    slug: 'out-label-ok',
    config: (c) => withOut0(c, { label_filename: 'labels.txt' }),
    files: () => ({ 'labels.txt': Array.from({ length: 10 }, (_, i) => String(i)).join('\n') }),
  },
  // Batch inputs and outputs.
  { slug: 'bi-no-source', config: (c) => ({ ...c, batch_input: [{ kind: 'BATCH_ELEMENT_COUNT', target_name: ['N'], data_type: 'TYPE_INT32' }] }) },
  {
    slug: 'bi-max-element-no-source',
    config: (c) => ({ ...c, batch_input: [{ kind: 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE', target_name: ['N'], data_type: 'TYPE_INT32' }] }),
  },
  {
    slug: 'bi-ok',
    config: (c) => ({
      ...c,
      batch_input: [{ kind: 'BATCH_ACCUMULATED_ELEMENT_COUNT', target_name: ['N'], data_type: 'TYPE_FP32', source_input: [in0(c).name ?? ''] }],
    }),
  },
  {
    slug: 'bi-type',
    config: (c) => ({
      ...c,
      batch_input: [{ kind: 'BATCH_ELEMENT_COUNT', target_name: ['N'], data_type: 'TYPE_FP16', source_input: [in0(c).name ?? ''] }],
    }),
  },
  {
    slug: 'bi-unknown-source',
    config: (c) => ({ ...c, batch_input: [{ kind: 'BATCH_ITEM_SHAPE', target_name: ['N'], data_type: 'TYPE_INT32', source_input: ['nosuch'] }] }),
  },
  {
    slug: 'bi-two-sources',
    config: (c) => ({
      ...c,
      batch_input: [
        { kind: 'BATCH_ITEM_SHAPE_FLATTEN', target_name: ['N'], data_type: 'TYPE_INT32', source_input: [in0(c).name ?? '', in0(c).name ?? ''] },
      ],
    }),
  },
  { slug: 'bo-no-source', config: (c) => ({ ...c, batch_output: [{ kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', target_name: [out0(c).name ?? ''] }] }) },
  {
    slug: 'bo-ok',
    config: (c) => ({
      ...c,
      batch_output: [{ kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', target_name: [out0(c).name ?? ''], source_input: [in0(c).name ?? ''] }],
    }),
  },
  { slug: 'bo-unknown-target', config: (c) => ({ ...c, batch_output: [{ target_name: ['nosuch'], source_input: [in0(c).name ?? ''] }] }) },
  {
    slug: 'bo-target-twice',
    config: (c) => ({ ...c, batch_output: [{ target_name: [out0(c).name ?? '', out0(c).name ?? ''], source_input: [in0(c).name ?? ''] }] }),
  },
  // Versions.
  { slug: 'vp-specific-missing', config: (c) => ({ ...c, version_policy: { specific: { versions: [7] } } }) },
  { slug: 'vp-specific-some', config: (c) => ({ ...c, version_policy: { specific: { versions: [1, 7] } } }) },
  { slug: 'vp-latest-zero', config: (c) => ({ ...c, version_policy: { latest: { num_versions: 0 } } }) },
  { slug: 'vp-all', config: (c) => ({ ...c, version_policy: { all: {} } }) },
  // Warmup (sizes follow the first input, so only for fixed FP32 inputs).
  {
    slug: 'wu-zero',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        {
          name: 'w',
          batch_size: 1,
          inputs: (c.input ?? []).map((t) => ({ key: t.name ?? '', value: { data_type: t.data_type, dims: t.dims, zero_data: true } })),
        },
      ],
    }),
  },
  {
    slug: 'wu-variable',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        { name: 'w', batch_size: 1, inputs: [{ key: in0(c).name ?? '', value: { data_type: 'TYPE_FP32', dims: [-1], zero_data: true } }] },
      ],
    }),
  },
  {
    slug: 'wu-variable-batch-zero',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        { name: 'w', batch_size: 0, inputs: [{ key: in0(c).name ?? '', value: { data_type: 'TYPE_FP32', dims: [-1], zero_data: true } }] },
      ],
    }),
  },
  {
    slug: 'wu-no-data',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [{ name: 'w', batch_size: 1, inputs: [{ key: in0(c).name ?? '', value: { data_type: 'TYPE_FP32', dims: in0(c).dims } }] }],
    }),
  },
  {
    slug: 'wu-file-missing',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        {
          name: 'w',
          batch_size: 1,
          inputs: [{ key: in0(c).name ?? '', value: { data_type: 'TYPE_FP32', dims: in0(c).dims, input_data_file: 'input0' } }],
        },
      ],
    }),
  },
  {
    slug: 'wu-file-short',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        {
          name: 'w',
          batch_size: 1,
          inputs: [{ key: in0(c).name ?? '', value: { data_type: 'TYPE_FP32', dims: in0(c).dims, input_data_file: 'input0' } }],
        },
      ],
    }),
    files: (c) => ({ 'warmup/input0': Buffer.alloc(bytesOf(c) - 4) }),
  },
  // The request Triton builds from a sample (InferenceRequest::PrepareForInference).
  { slug: 'wu-missing-input', only: fixedFp32, config: (c) => ({ ...c, model_warmup: [{ name: 'w', batch_size: 1, inputs: [] }] }) },
  {
    slug: 'wu-missing-optional',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      input: [...(c.input ?? []), { name: 'OPTIONAL_EXTRA', data_type: 'TYPE_FP32', dims: [1], optional: true }],
      model_warmup: [{ name: 'w', batch_size: 1, inputs: [] }],
    }),
  },
  {
    slug: 'wu-extra-input',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        { name: 'w', batch_size: 1, inputs: [...warmAll(c), { key: 'NOT_AN_INPUT', value: { data_type: 'TYPE_FP32', dims: [1], zero_data: true } }] },
      ],
    }),
  },
  {
    slug: 'wu-wrong-shape',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        { name: 'w', batch_size: 1, inputs: warmAll(c).map((e, i) => (i === 0 ? { ...e, value: { ...e.value, dims: [...dims0(c), 1] } } : e)) },
      ],
    }),
  },
  {
    slug: 'wu-wrong-type',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        { name: 'w', batch_size: 1, inputs: warmAll(c).map((e, i) => (i === 0 ? { ...e, value: { ...e.value, data_type: 'TYPE_INT32' } } : e)) },
      ],
    }),
  },
  {
    slug: 'wu-batch-over',
    only: fixedFp32,
    config: (c) => ({ ...c, model_warmup: [{ name: 'w', batch_size: (c.max_batch_size ?? 0) + 3, inputs: warmAll(c) }] }),
  },
  {
    slug: 'wu-file-ok',
    only: fixedFp32,
    config: (c) => ({
      ...c,
      model_warmup: [
        {
          name: 'w',
          batch_size: 1,
          inputs: (c.input ?? []).map((t) => ({ key: t.name ?? '', value: { data_type: t.data_type, dims: t.dims, input_data_file: 'input0' } })),
        },
      ],
    }),
    files: (c) => ({ 'warmup/input0': Buffer.alloc(bytesOf(c)) }),
  },
  // Parameters and files.
  {
    slug: 'param-duplicate',
    config: (c) => ({
      ...c,
      parameters: [
        { key: 'timeout_ns', value: { string_value: '1' } },
        { key: 'timeout_ns', value: { string_value: '2' } },
      ],
    }),
  },
  { slug: 'param-unknown', config: (c) => ({ ...c, parameters: [{ key: 'timeout_nanos', value: { string_value: '1' } }] }) },
  { slug: 'runtime-missing', config: (c) => ({ ...c, runtime: 'libtriton_other.so' }) },
  { slug: 'runtime-escapes', config: (c) => ({ ...c, runtime: '../../escape.so' }) },
  {
    slug: 'metrics-newer',
    config: (c) => ({ ...c, model_metrics: { metric_control: [{ metric_identifier: { family: 'f' }, histogram_options: { buckets: [1] } }] } }),
  },
  // Syntax.
  { slug: 'syntax-float-int', text: (t) => t.replace(/max_batch_size: \d+/, 'max_batch_size: 1.0') },
  { slug: 'syntax-unknown-field', text: (t) => `${t}colour: "blue"\n` },
  { slug: 'syntax-duplicate-scalar', text: (t) => `${t}max_batch_size: 4\n` },
  { slug: 'syntax-unknown-enum', text: (t) => t.replace(/data_type: TYPE_\w+/, 'data_type: TYPE_FLOAT32') },
  { slug: 'syntax-unclosed', text: (t) => `${t}input [ {\n` },
];

/** Ensembles over the valid MNIST model (their steps need a loaded model). */
function ensembles(step: string): { slug: string; config: ModelConfig }[] {
  const io = {
    input: [{ name: 'IMAGE', data_type: 'TYPE_FP32' as const, dims: [1, 28, 28] }],
    output: [{ name: 'LABELS', data_type: 'TYPE_FP32' as const, dims: [10] }],
  };
  const valid: ModelConfig = {
    platform: 'ensemble',
    max_batch_size: 1,
    ...io,
    ensemble_scheduling: {
      step: [
        {
          model_name: step,
          model_version: -1,
          input_map: [{ key: 'digit_image', value: 'IMAGE' }],
          output_map: [{ key: 'output_labels', value: 'LABELS' }],
        },
      ],
    },
  };
  const step0 = valid.ensemble_scheduling?.step?.[0] ?? {};
  const withStep = (patch: Record<string, unknown>): ModelConfig => ({ ...valid, ensemble_scheduling: { step: [{ ...step0, ...patch }] } });
  return [
    { slug: 'ens-valid', config: valid },
    { slug: 'ens-with-backend', config: { ...valid, backend: 'poplar' } },
    { slug: 'ens-instance-group', config: { ...valid, instance_group: [{ kind: 'KIND_CPU' }] } },
    {
      slug: 'ens-warmup',
      config: {
        ...valid,
        model_warmup: [
          { name: 'w', batch_size: 1, inputs: [{ key: 'IMAGE', value: { data_type: 'TYPE_FP32', dims: [1, 28, 28], zero_data: true } }] },
        ],
      },
    },
    { slug: 'ens-optimization', config: { ...valid, optimization: { priority: 'PRIORITY_MAX' } } },
    { slug: 'ens-no-steps', config: { ...valid, ensemble_scheduling: {} } },
    { slug: 'ens-step-no-model', config: withStep({ model_name: undefined }) },
    { slug: 'ens-step-no-input-map', config: withStep({ input_map: undefined }) },
    { slug: 'ens-step-no-output-map', config: withStep({ output_map: undefined }) },
    { slug: 'ens-unused-input', config: { ...valid, input: [...io.input, { name: 'EXTRA', data_type: 'TYPE_FP32', dims: [1] }] } },
    { slug: 'ens-output-not-written', config: { ...valid, output: [{ name: 'OTHER', data_type: 'TYPE_FP32', dims: [10] }] } },
    { slug: 'ens-output-disconnected', config: withStep({ input_map: [{ key: 'digit_image', value: 'NOT_AN_INPUT' }] }) },
    { slug: 'ens-tensor-written-twice', config: { ...valid, ensemble_scheduling: { step: [step0, { ...step0 }] } } },
    { slug: 'ens-missing-model', config: withStep({ model_name: 'no_such_model' }) },
    { slug: 'ens-failing-model', config: withStep({ model_name: 'mnist__mbs-negative' }) },
    { slug: 'ens-dims-zero', config: { ...valid, input: [{ ...io.input[0], dims: [0] }] } },
    { slug: 'ens-type-mismatch', config: { ...valid, input: [{ ...io.input[0], data_type: 'TYPE_FP16' }] } },
    { slug: 'ens-shape-mismatch', config: { ...valid, output: [{ ...io.output[0], dims: [11] }] } },
    { slug: 'ens-variable-shape', config: { ...valid, input: [{ ...io.input[0], dims: [-1, 28, 28] }] } },
    { slug: 'ens-mbs-over', config: { ...valid, max_batch_size: 4 } },
    {
      slug: 'ens-no-batch',
      config: { ...valid, max_batch_size: 0, input: [{ ...io.input[0], dims: [-1, 1, 28, 28] }], output: [{ ...io.output[0], dims: [-1, 10] }] },
    },
    // The decoupled-flow walk of ValidateEnsembleConfig: the outputs come from a decoupled and a plain model.
    { slug: 'ens-decoupled-only', config: withStep({ model_name: 'mnist__decoupled' }) },
    {
      slug: 'ens-decoupled-mixed',
      config: {
        ...valid,
        output: [...io.output, { name: 'LABELS2', data_type: 'TYPE_FP32', dims: [10] }],
        ensemble_scheduling: {
          step: [step0, { ...step0, model_name: 'mnist__decoupled', output_map: [{ key: 'output_labels', value: 'LABELS2' }] }],
        },
      },
    },
    {
      slug: 'ens-nonexistent-input',
      config: withStep({
        input_map: [
          { key: 'digit_image', value: 'IMAGE' },
          { key: 'nosuch', value: 'IMAGE' },
        ],
      }),
    },
    {
      slug: 'ens-nonexistent-output',
      config: withStep({
        output_map: [
          { key: 'output_labels', value: 'LABELS' },
          { key: 'nosuch', value: 'MORE' },
        ],
      }),
    },
  ];
}

async function readBase(slug: string, dir: string): Promise<Base> {
  const config = parsePbtxt(await readFile(join(dir, 'config.pbtxt'), 'utf8')).message;
  return { slug, dir, config };
}

async function copyVersionFiles(from: string, to: string): Promise<void> {
  await cp(from, to, { recursive: true, filter: (src) => !src.endsWith('config.pbtxt') });
}

async function writeFiles(dir: string, files: Files): Promise<void> {
  for (const [path, data] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), data);
  }
}

/** Writes the corpus into `root` (an empty directory); returns what each model directory holds. */
export async function buildCorpus(root: string): Promise<CorpusModel[]> {
  const models: CorpusModel[] = [];
  const bases: Base[] = [await readBase('mnist', join(FIXTURES, 'repos/clean/mnist'))];
  for (const name of ['bert', 'resnet50', 'efficientnet-b0', 'efficientnet-b4'])
    bases.push(await readBase(name, join(FIXTURES, 'graphcore-examples', name)));

  for (const base of bases) {
    for (const m of MUTATIONS) {
      if (m.only !== undefined && !m.only(base)) continue;
      const name = `${base.slug}__${m.slug}`;
      const dir = join(root, name);
      await copyVersionFiles(base.dir, dir);
      let config = clone(base.config);
      config = m.keepName === true ? { ...config, name: undefined } : { ...config, name };
      if (m.config !== undefined) config = m.config(config);
      let text = printPbtxt(config, { tritonVersion: 'latest' });
      if (m.text !== undefined) text = m.text(text);
      await writeFile(join(dir, 'config.pbtxt'), text);
      if (m.files !== undefined) await writeFiles(dir, m.files(config));
      models.push({ name, origin: `${base.slug} + ${m.slug}`, ...(m.alone === true ? { alone: true } : {}) });
    }
  }
  for (const e of ensembles('mnist__valid')) {
    const name = `ensemble__${e.slug}`;
    await mkdir(join(root, name, '1'), { recursive: true });
    await writeFile(join(root, name, 'config.pbtxt'), printPbtxt({ name, ...e.config }, { tritonVersion: 'latest' }));
    models.push({ name, origin: `ensemble + ${e.slug}` });
  }
  // Every fixture repository's models, as they are.
  const repos = join(FIXTURES, 'repos');
  for (const repo of (await readdir(repos)).sort()) {
    // A config.pbtxt that is a directory makes tritonserver 2.51 abort while polling (std::length_error from
    // basic_string::_M_replace_aux), taking every other model down with it: no verdict to compare.
    if (repo === 'unreadable') continue;
    for (const entry of await readdir(join(repos, repo), { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      const name = `fixture__${repo}__${entry.name}`;
      const dir = join(root, name);
      await cp(join(repos, repo, entry.name), dir, { recursive: true });
      // The directory is renamed: a config naming the old directory would only test the name rule.
      const configPath = join(dir, 'config.pbtxt');
      const text = await readFile(configPath, 'utf8').catch(() => undefined);
      if (text !== undefined && repo !== 'name-mismatch') await writeFile(configPath, text.replace(/^name: "[^"]*"/m, `name: "${name}"`));
      // A fixture with implicit state is loaded alone, as the st-* cases are.
      const alone = text !== undefined && /^\s*state\s*[[{:]/m.test(text);
      models.push({ name, origin: `fixtures/repos/${repo}/${entry.name}`, ...(alone ? { alone: true } : {}) });
    }
  }
  return models;
}
