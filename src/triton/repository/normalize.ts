import type { ModelConfig, ModelInstanceGroup } from '../model-config.js';
import type { RawFinding } from './findings.js';

/**
 * The config as Triton sees it when its rules run: the server-side autofill
 * and normalisation that happen between reading config.pbtxt and
 * validating it (Triton core r24.10, src/model_config_utils.cc). Several
 * rules only make sense on this form: instance group names like `m_0`,
 * a platform inferred from a backend, a model name taken from its
 * directory.
 *
 * Pure: the parsed config and what the model directory holds in, a new
 * config out; the input is never modified.
 */

/** An entry of the first (lexicographically smallest) sub-directory of the model directory. */
export interface DirEntry {
  readonly name: string;
  readonly isDirectory: boolean;
}

export interface ModelDirectory {
  /** The model directory's name. */
  readonly name: string;
  /**
   * Contents of the model directory's first sub-directory in byte order,
   * whatever its name (Triton inspects that one), or undefined when the
   * model directory has no sub-directory.
   */
  readonly firstSubdirectory?: readonly DirEntry[];
}

// File and platform names Triton's autofill knows (model_config_utils.h constants).
const TF_SAVEDMODEL = 'model.savedmodel';
const TF_GRAPHDEF = 'model.graphdef';
const TRT_PLAN = 'model.plan';
const ONNX = 'model.onnx';
const OPENVINO = 'model.xml';
const LIBTORCH = 'model.pt';
const PYTHON = 'model.py';

/**
 * A shallow copy that fields are then added to. Object.assign onto a new
 * object, not a spread: before V8 optimises the code (validate normalises
 * every model's config, in runs too short for that), adding a field to the
 * copy a spread makes costs about 1 µs each time, and one onto a new
 * object follows transitions V8 has already made. Parsed messages hold
 * only schema field names, so no key is __proto__.
 */
function copyOf<T extends object>(input: T): T {
  return Object.assign({}, input);
}

/** Mirrors `AutoCompleteBackendFields`: fills name, backend, platform and default_model_filename. */
export function autoCompleteBackendFields(input: ModelConfig, dir: ModelDirectory): { config: ModelConfig; error?: RawFinding } {
  const config = copyOf(input);
  const contents = dir.firstSubdirectory;
  const hasVersion = contents !== undefined;
  const entry = (name: string): { isDirectory: boolean } | undefined => contents?.find((e) => e.name === name);
  if ((config.name ?? '') === '') config.name = dir.name;
  const backend = (): string => config.backend ?? '';
  const platform = (): string => config.platform ?? '';
  const filename = (): string => config.default_model_filename ?? '';

  // TensorFlow: the platform is required, so infer it first.
  if (platform() === '' && (backend() === '' || backend() === 'tensorflow')) {
    if (filename() === TF_SAVEDMODEL) config.platform = 'tensorflow_savedmodel';
    else if (filename() === TF_GRAPHDEF) config.platform = 'tensorflow_graphdef';
    else if (filename() === '' && hasVersion) {
      if (entry(TF_SAVEDMODEL)?.isDirectory === true) config.platform = 'tensorflow_savedmodel';
      const graphdef = entry(TF_GRAPHDEF);
      if (graphdef !== undefined && !graphdef.isDirectory) config.platform = 'tensorflow_graphdef';
    }
  }
  if (platform() === 'tensorflow_savedmodel' || platform() === 'tensorflow_graphdef') {
    if (backend() === '') config.backend = 'tensorflow';
    if (filename() === '') config.default_model_filename = platform() === 'tensorflow_savedmodel' ? TF_SAVEDMODEL : TF_GRAPHDEF;
    return { config };
  }

  const inferred = (name: string, file: string, byPlatform: string | undefined, fileMayBeDirectory: boolean): void => {
    if (backend() !== '') return;
    if ((byPlatform !== undefined && platform() === byPlatform) || filename() === file) {
      config.backend = name;
    } else if (platform() === '' && filename() === '' && hasVersion) {
      const found = entry(file);
      if (found !== undefined && (fileMayBeDirectory || !found.isDirectory)) config.backend = name;
    }
  };

  inferred('tensorrt', TRT_PLAN, 'tensorrt_plan', false);
  if (backend() === 'tensorrt') {
    if (platform() === '') config.platform = 'tensorrt_plan';
    if (filename() === '') config.default_model_filename = TRT_PLAN;
    return { config };
  }
  // An ONNX model may be a directory (a large model with external data).
  inferred('onnxruntime', ONNX, 'onnxruntime_onnx', true);
  if (backend() === 'onnxruntime') {
    if (platform() === '') config.platform = 'onnxruntime_onnx';
    if (filename() === '') config.default_model_filename = ONNX;
    return { config };
  }
  inferred('openvino', OPENVINO, undefined, true);
  if (backend() === 'openvino') {
    if (filename() === '') config.default_model_filename = OPENVINO;
    return { config };
  }
  inferred('pytorch', LIBTORCH, 'pytorch_libtorch', false);
  if (backend() === 'pytorch') {
    if (platform() === '') config.platform = 'pytorch_libtorch';
    if ((config.runtime ?? '') !== PYTHON && filename() === '') config.default_model_filename = LIBTORCH;
    return { config };
  }
  inferred('python', PYTHON, undefined, true);
  if (backend() === 'python') {
    if (filename() === '') config.default_model_filename = PYTHON;
    return { config };
  }

  // A custom backend is named by the model directory: model.<backend>.
  if (backend() === '' && platform() === '' && filename() === '') {
    const dot = dir.name.indexOf('.');
    if (dot < 0) {
      return {
        config,
        error: {
          rule: 'config/no-backend',
          message: `Invalid model name: Could not determine backend for model '${dir.name}' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.`,
          hint: 'add backend: "poplar"',
        },
      };
    }
    const name = dir.name.slice(dot + 1);
    config.backend = name;
    config.default_model_filename = `model.${name}`;
  }
  return { config };
}

/** Mirrors `NormalizeModelConfig`: the defaults that do not depend on the backend. */
export function normalizeModelConfig(input: ModelConfig): ModelConfig {
  const config = copyOf(input);
  const mbs = config.max_batch_size ?? 0;
  if (config.version_policy === undefined) config.version_policy = { latest: { num_versions: 1 } };
  if (config.dynamic_batching !== undefined && (config.dynamic_batching.preferred_batch_size ?? []).length === 0 && mbs > 0) {
    config.dynamic_batching = { ...config.dynamic_batching, preferred_batch_size: [mbs] };
  }
  let sb = config.sequence_batching;
  if (sb !== undefined && Number(sb.max_sequence_idle_microseconds ?? 0) === 0) {
    // SEQUENCE_IDLE_DEFAULT_MICROSECONDS (core constants.h): one second.
    sb = { ...sb, max_sequence_idle_microseconds: 1_000_000 };
    config.sequence_batching = sb;
  }
  if (sb?.oldest !== undefined && (sb.oldest.preferred_batch_size ?? []).length === 0 && mbs > 0) {
    config.sequence_batching = { ...sb, oldest: { ...sb.oldest, preferred_batch_size: [mbs] } };
  }
  // Pinned memory is on unless the config says otherwise (not for ensembles, which have no instances).
  if (config.ensemble_scheduling === undefined) {
    const optimization = copyOf(config.optimization ?? {});
    optimization.input_pinned_memory ??= { enable: true };
    optimization.output_pinned_memory ??= { enable: true };
    config.optimization = optimization;
  }
  return config;
}

/**
 * Mirrors `NormalizeInstanceGroup` on a server that sees no GPU (an IPU
 * host; the oracle server in the tests) and a backend that declares no
 * preferred groups, as the Poplar backend's documentation shows none.
 */
export function normalizeInstanceGroup(input: ModelConfig): ModelConfig {
  if (input.ensemble_scheduling !== undefined) return input;
  const config = copyOf(input);
  const groups: ModelInstanceGroup[] = (config.instance_group ?? []).map((g) => copyOf(g));
  if (groups.length === 0) groups.push({ name: config.name ?? '', kind: 'KIND_AUTO', count: 0 });
  groups.forEach((g, i) => {
    if ((g.name ?? '') === '') g.name = `${config.name ?? ''}_${i}`;
    // KIND_AUTO becomes KIND_CPU when the server has no GPU.
    if (g.kind === undefined || g.kind === 'KIND_AUTO' || g.kind === 0) g.kind = 'KIND_CPU';
    if ((g.count ?? 0) < 1) {
      // SetDefaultInstanceCount: two CPU instances for the backends that opt in.
      g.count = g.kind === 'KIND_CPU' && (config.backend === 'tensorflow' || config.backend === 'onnxruntime') ? 2 : 1;
    }
  });
  config.instance_group = groups;
  return config;
}
