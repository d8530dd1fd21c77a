import { isAbsolute, normalize, sep } from 'node:path';
import type { Int64, ModelConfig, ModelInput, ModelOutput } from '../model-config.js';
import { ENUM_VALUE_SINCE, MESSAGES, isEnumName, isMessageName, knownIn, type FieldSpec } from '../schema.js';
import type { RawFinding } from './findings.js';

/**
 * The config rules of triton-facts.md sections 3.4 and 7 that apply to a
 * non-ensemble model, with Triton's messages, plus the gaps Triton leaves.
 * Pure: a parsed config in, findings (with config paths) out.
 */

/** Platforms Triton knows, and the backend each implies. */
const PLATFORM_BACKENDS: Readonly<Record<string, string>> = {
  tensorrt_plan: 'tensorrt',
  onnxruntime_onnx: 'onnxruntime',
  pytorch_libtorch: 'pytorch',
  libtorch: 'pytorch',
  torch_aoti: 'pytorch',
  tensorflow_graphdef: 'tensorflow',
  tensorflow_savedmodel: 'tensorflow',
  ensemble: '',
};

/** Parameters the Poplar backend reads (triton-facts.md section 4.5). */
export const POPLAR_PARAMETERS = ['synchronous_execution', 'timeout_ns', 'execute_delay_ms', 'instance_wise_delay_multiplier'];

export interface ConfigContext {
  /** The model directory's name. */
  readonly directory: string;
  readonly tritonVersion: string;
}

const n = (v: Int64 | undefined): number => (v === undefined ? 0 : Number(v));

/** Fields and enum values the target release does not know: its parser would fail on them. */
function newerThanTarget(config: ModelConfig, target: string): RawFinding[] {
  const out: RawFinding[] = [];
  if (target === 'latest') return out;
  const walk = (type: string, message: Record<string, unknown>, path: string): void => {
    const fields = (MESSAGES as unknown as Record<string, Record<string, FieldSpec>>)[type] ?? {};
    for (const [name, spec] of Object.entries(fields)) {
      const v = message[name];
      if (v === undefined) continue;
      const fieldPath = path === '' ? name : `${path}.${name}`;
      if (!knownIn(spec.since, target)) {
        const when = spec.since === 'unknown' ? 'after 21.05' : `in Triton ${spec.since}`;
        out.push({
          rule: 'config/newer-than-target',
          message: `Message type "${type}" has no field named "${name}".`,
          path: fieldPath,
          hint: `"${fieldPath}" appeared ${when}; remove it, or validate for a newer server with --triton-version`,
        });
        continue;
      }
      const values = spec.repeated === true || spec.map !== undefined ? (v as unknown[]) : [v];
      values.forEach((item, i) => {
        const itemPath = spec.repeated === true || spec.map !== undefined ? `${fieldPath}[${i}]` : fieldPath;
        if (spec.map !== undefined) {
          const value = (item as { value: unknown }).value;
          if (isMessageName(spec.t)) walk(spec.t, value as Record<string, unknown>, `${itemPath}.value`);
        } else if (isMessageName(spec.t)) {
          walk(spec.t, item as Record<string, unknown>, itemPath);
        } else if (isEnumName(spec.t) && typeof item === 'string') {
          const since = ENUM_VALUE_SINCE[`${spec.t}.${item}`];
          if (!knownIn(since, target)) {
            out.push({
              rule: 'config/newer-than-target',
              message: `Unknown enumeration value of "${item}" for field "${name}".`,
              path: itemPath,
              hint: `${item} appeared in Triton ${since ?? '?'}; the target is ${target}`,
            });
          }
        }
      });
    }
  };
  walk('inference.ModelConfig', config, '');
  return out;
}

/** Does a file name written in the config leave the model directory? */
function escapes(file: string): boolean {
  if (isAbsolute(file)) return true;
  const normal = normalize(file);
  return normal === '..' || normal.startsWith(`..${sep}`);
}

function elementCount(dims: readonly Int64[]): number {
  return dims.reduce<number>((p, d) => p * Number(d), 1);
}

function ioRules(kind: 'input' | 'output', t: ModelInput | ModelOutput, index: number, m: string, maxBatchSize: number, backend: string): RawFinding[] {
  const out: RawFinding[] = [];
  const path = `${kind}[${index}]`;
  const prefix = `model ${kind}`;
  const name = t.name ?? '';
  const push = (rule: RawFinding['rule'], message: string, at: string, hint: string): void => {
    out.push({ rule, message: `${message} for ${m}`, path: at, hint });
  };
  if (name === '') {
    push('io/name', `${prefix} must specify 'name'`, path, `give the ${kind} a name`);
    return out;
  }
  if (t.data_type === undefined || t.data_type === 'TYPE_INVALID' || t.data_type === 0) {
    push('io/data-type', `${prefix} '${name}' must specify 'data_type'`, path, 'set data_type, e.g. TYPE_FP32');
  }
  const dims = t.dims ?? [];
  if (dims.length === 0) {
    push('io/dims', `${prefix} '${name}' must specify 'dims'`, path, 'list the dimensions without the batch dimension; a scalar per sample is dims: [ 1 ] with reshape: { shape: [ ] }');
  }
  dims.forEach((d, i) => {
    if (Number(d) < 1 && Number(d) !== -1) {
      push('io/dims', `${prefix} '${name}' dimension must be integer >= 1, or -1 to indicate a variable-size dimension`, `${path}.dims[${i}]`, 'use a positive size, or -1 for a variable one');
    }
  });
  const reshape = t.reshape;
  if (reshape !== undefined) {
    const shape = reshape.shape ?? [];
    shape.forEach((d, i) => {
      if (Number(d) < 1 && Number(d) !== -1) {
        push('io/reshape', `${prefix} '${name}' reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension`, `${path}.reshape.shape[${i}]`, 'use a positive size, or -1');
      }
    });
    if (shape.length === 0 && maxBatchSize === 0) {
      push('io/reshape', `${prefix} '${name}' cannot have empty reshape for non-batching model as scalar tensors are not supported`, `${path}.reshape`, 'an empty reshape needs max_batch_size > 0');
    } else if (dims.length > 0) {
      const wild = (xs: readonly Int64[]): number => xs.filter((d) => Number(d) === -1).length;
      if (wild(dims) !== wild(shape)) {
        push('io/reshape', `${prefix} '${name}' has different number of variable-size dimensions for dims and reshape`, `${path}.reshape`, 'give dims and reshape the same number of -1 entries');
      } else if (wild(dims) === 0 && elementCount(dims) !== elementCount(shape)) {
        push('io/reshape', `${prefix} '${name}' has different size for dims and reshape`, `${path}.reshape`, 'dims and reshape must hold the same number of elements');
      }
    }
  }
  if (kind === 'input') {
    const input = t as ModelInput;
    if ((input.format === 'FORMAT_NHWC' || input.format === 'FORMAT_NCHW') && dims.length !== 3) {
      push('io/format', `${prefix} NHWC/NCHW require 3 dims`, `${path}.format`, 'list exactly 3 dims (without the batch dimension), or drop format');
    }
  }
  if (t.is_shape_tensor === true && backend !== 'tensorrt') {
    push('io/tensorrt-only', 'shape tensors are only supported for TensorRT platform', `${path}.is_shape_tensor`, 'remove is_shape_tensor');
  }
  if (t.is_non_linear_format_io === true && backend !== 'tensorrt') {
    push('io/tensorrt-only', 'Non-linear IO format is only supported for the TensorRT platform', `${path}.is_non_linear_format_io`, 'remove is_non_linear_format_io');
  }
  if (kind === 'output') {
    const label = (t as ModelOutput).label_filename;
    if (label !== undefined && label !== '' && escapes(label)) {
      out.push({
        rule: 'config/file-escapes-model',
        message: `label file path '${label}' for output '${name}' in model '${m}' is outside model directory`,
        path: `${path}.label_filename`,
        hint: 'keep label files inside the model directory',
      });
    }
  }
  return out;
}

/** Every config rule; `m` in messages is the model name as Triton would know it. */
export function checkConfig(config: ModelConfig, ctx: ConfigContext): RawFinding[] {
  const out: RawFinding[] = [];
  const m = config.name !== undefined && config.name !== '' ? config.name : ctx.directory;
  const backend = config.backend ?? '';
  const platform = config.platform ?? '';
  const mbs = n(config.max_batch_size);

  out.push(...newerThanTarget(config, ctx.tritonVersion));

  if (config.name !== undefined && config.name !== '' && config.name !== ctx.directory) {
    out.push({
      rule: 'config/name-mismatch',
      message: `unexpected directory name '${ctx.directory}' for model '${config.name}', directory name must equal model name`,
      path: 'name',
      hint: `rename the directory to ${config.name}, or set name: "${ctx.directory}" (or leave name out)`,
    });
  }
  if (platform === 'ensemble') {
    out.push({ rule: 'config/ensemble-not-checked', message: `ensemble model '${m}' is not checked: popef validate covers models served by a backend`, path: 'platform', hint: 'check ensembles by loading them in tritonserver' });
    return out;
  }
  if (backend === '' && platform === '' && (config.default_model_filename ?? '') === '' && !ctx.directory.includes('.')) {
    out.push({
      rule: 'config/no-backend',
      message: `Invalid model name: Could not determine backend for model '${m}' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.`,
      hint: 'add backend: "poplar"',
    });
  } else if (backend === '' && platform !== '' && !(platform in PLATFORM_BACKENDS)) {
    out.push({ rule: 'config/unknown-platform', message: `unexpected platform type '${platform}' for ${m}`, path: 'platform', hint: 'set backend: "poplar" (a platform is not needed for the Poplar backend)' });
  } else if (backend !== '' && platform !== '') {
    const implied = PLATFORM_BACKENDS[platform];
    const knownBackend = Object.values(PLATFORM_BACKENDS).includes(backend);
    if ((implied !== undefined && implied !== backend) || (implied === undefined && knownBackend)) {
      out.push({ rule: 'config/platform-backend-pair', message: `unexpected 'platform' and 'backend' pair, got:${platform}, ${backend}`, path: 'platform', hint: 'remove platform, or make it match the backend' });
    }
  }
  if (mbs < 0) {
    out.push({ rule: 'config/max-batch-size', message: `'max_batch_size' must be non-negative value for ${m}`, path: 'max_batch_size', hint: 'use 0 (no batching) or a positive size' });
  }

  // Dynamic batching.
  const db = config.dynamic_batching;
  if (db !== undefined) {
    (db.preferred_batch_size ?? []).forEach((p, i) => {
      const at = `dynamic_batching.preferred_batch_size[${i}]`;
      if (p <= 0) out.push({ rule: 'config/preferred-batch-size', message: `dynamic batching preferred size must be positive for ${m}`, path: at, hint: 'use sizes from 1 to max_batch_size' });
      else if (p > mbs) out.push({ rule: 'config/preferred-batch-size', message: `dynamic batching preferred size must be <= max batch size for ${m}`, path: at, hint: `use sizes from 1 to max_batch_size (${mbs})` });
    });
    const levels = n(db.priority_levels);
    if (levels > 0) {
      const def = n(db.default_priority_level);
      if (def < 1 || def > levels) {
        out.push({ rule: 'config/priority-levels', message: `default priority level must be in range [1, ${levels}] for ${m}`, path: 'dynamic_batching.default_priority_level', hint: `set default_priority_level between 1 and ${levels}` });
      }
      (db.priority_queue_policy ?? []).forEach((e, i) => {
        const key = n(e.key);
        if (key < 1 || key > levels) {
          out.push({ rule: 'config/priority-levels', message: `priority queue policy must have priority level in range [1, ${levels}] for ${m}`, path: `dynamic_batching.priority_queue_policy[${i}]`, hint: `use priority levels between 1 and ${levels}` });
        }
      });
    }
    if (db.preserve_ordering === true) {
      if (levels > 1) {
        out.push({ rule: 'config/priority-levels', message: `Only one priority level is allowed when 'preserve_ordering' is true for ${m}`, path: 'dynamic_batching.preserve_ordering', hint: 'drop preserve_ordering or use one priority level' });
      }
      const policies = [db.default_queue_policy, ...(db.priority_queue_policy ?? []).map((e) => e.value)];
      if (policies.some((p) => p !== undefined && p.timeout_action === 'DELAY' && n(p.default_timeout_microseconds) !== 0)) {
        out.push({ rule: 'config/priority-levels', message: `Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for ${m}`, path: 'dynamic_batching', hint: 'use REJECT, or drop preserve_ordering' });
      }
    }
    if (mbs === 0 && (db.preferred_batch_size ?? []).length === 0) {
      out.push({ rule: 'config/dynamic-batching-without-batch', message: `dynamic_batching is set for ${m} but max_batch_size is 0: every batch will hold one request`, path: 'dynamic_batching', hint: 'remove dynamic_batching, or give the model a batch dimension' });
    }
  }

  // Response cache.
  if (config.response_cache?.enable === true) {
    if (config.sequence_batching !== undefined) {
      out.push({ rule: 'config/response-cache', message: `Response Cache does not currently support model ${m} with sequence batching scheduler. Please disable the response cache.`, path: 'response_cache', hint: 'disable response_cache' });
    }
    if (config.model_transaction_policy?.decoupled === true) {
      out.push({ rule: 'config/response-cache', message: `Response Cache does not currently support model ${m} with 'decoupled' transaction policy. Please disable the response cache.`, path: 'response_cache', hint: 'disable response_cache' });
    }
  }

  // Sequence batching.
  const sb = config.sequence_batching;
  if (sb !== undefined) {
    (sb.control_input ?? []).forEach((ci, i) => {
      (ci.control ?? []).forEach((c, j) => {
        const allowed = ['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING'];
        if (c.kind === 'CONTROL_SEQUENCE_CORRID' && !allowed.includes(String(c.data_type ?? 'TYPE_INVALID'))) {
          out.push({
            rule: 'config/sequence-batching',
            message: `unexpected data type for control CONTROL_SEQUENCE_CORRID for ${m}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`,
            path: `sequence_batching.control_input[${i}].control[${j}]`,
            hint: 'set data_type to one of the allowed types',
          });
        }
      });
    });
    (sb.oldest?.preferred_batch_size ?? []).forEach((p, i) => {
      const at = `sequence_batching.oldest.preferred_batch_size[${i}]`;
      if (p <= 0) out.push({ rule: 'config/sequence-batching', message: `sequence batching preferred batch size must be positive for ${m}`, path: at, hint: 'use sizes from 1 to max_batch_size' });
      else if (p > mbs) out.push({ rule: 'config/sequence-batching', message: `sequence batching preferred batch size must be <= max batch size for ${m}`, path: at, hint: 'use sizes from 1 to max_batch_size' });
    });
    const util = sb.direct?.minimum_slot_utilization;
    if (util !== undefined && !(util >= 0 && util <= 1)) {
      out.push({ rule: 'config/sequence-batching', message: `sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${m}`, path: 'sequence_batching.direct.minimum_slot_utilization', hint: 'use a value between 0 and 1' });
    }
  }

  // Model metrics.
  (config.model_metrics?.metric_control ?? []).forEach((mc, i) => {
    const at = `model_metrics.metric_control[${i}]`;
    const problem =
      mc.metric_identifier === undefined
        ? "metric control must specify 'metric_identifier'"
        : (mc.metric_identifier.family ?? '') === ''
          ? "metric identifier must specify non-empty 'family'"
          : mc.histogram_options === undefined
            ? "metric control must specify 'histogram_options'"
            : (mc.histogram_options.buckets ?? []).length === 0
              ? "histogram options must specify non-empty 'buckets'"
              : undefined;
    if (problem !== undefined) out.push({ rule: 'config/model-metrics', message: problem, path: at, hint: 'complete the metric control' });
  });

  // Parameters: duplicates (Triton keeps one silently) and keys the Poplar backend does not read.
  const seen = new Map<string, number>();
  (config.parameters ?? []).forEach((p, i) => {
    const first = seen.get(p.key);
    if (first !== undefined) {
      out.push({ rule: 'config/duplicate-parameter', message: `parameter "${p.key}" is given more than once for ${m} (first at entry ${first + 1}); Triton keeps only one of them`, path: `parameters[${i}]`, hint: 'keep one entry per key' });
    } else {
      seen.set(p.key, i);
    }
    if (backend === 'poplar' && !POPLAR_PARAMETERS.includes(p.key)) {
      out.push({ rule: 'config/unknown-parameter', message: `parameter "${p.key}" is not one the Poplar backend reads (${POPLAR_PARAMETERS.join(', ')})`, path: `parameters[${i}]`, hint: 'check the key for a typo' });
    }
  });
  const defaultFile = config.default_model_filename;
  if (defaultFile !== undefined && defaultFile !== '' && escapes(defaultFile)) {
    out.push({ rule: 'config/file-escapes-model', message: `default_model_filename '${defaultFile}' of model '${m}' is outside the version directory`, path: 'default_model_filename', hint: 'name a file inside the version directory' });
  }
  (config.cc_model_filenames ?? []).forEach((e, i) => {
    if (escapes(e.value)) out.push({ rule: 'config/file-escapes-model', message: `cc_model_filenames entry '${e.value}' of model '${m}' is outside the version directory`, path: `cc_model_filenames[${i}]`, hint: 'name a file inside the version directory' });
  });

  // Inputs and outputs.
  const names = new Map<string, string>();
  const checkIo = (kind: 'input' | 'output', list: readonly (ModelInput | ModelOutput)[]): void => {
    list.forEach((t, i) => {
      out.push(...ioRules(kind, t, i, m, mbs, backend));
      const name = t.name ?? '';
      if (name === '') return;
      const previous = names.get(`${kind}:${name}`);
      if (previous !== undefined) {
        out.push({ rule: 'io/duplicate-name', message: `model ${kind} '${name}' is specified more than once for ${m}; Triton uses the first and ignores the others`, path: `${kind}[${i}]`, hint: `rename or remove the second '${name}'` });
      } else {
        names.set(`${kind}:${name}`, `${kind}[${i}]`);
      }
    });
  };
  checkIo('input', config.input ?? []);
  checkIo('output', config.output ?? []);

  // Batch inputs and outputs.
  const inputNames = new Set((config.input ?? []).map((t) => t.name ?? ''));
  const outputNames = new Set((config.output ?? []).map((t) => t.name ?? ''));
  (config.batch_input ?? []).forEach((bi, i) => {
    const at = `batch_input[${i}]`;
    const sources = bi.source_input ?? [];
    const kind = typeof bi.kind === 'string' ? bi.kind : 'BATCH_ELEMENT_COUNT';
    if (kind !== 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE' && sources.length !== 1) {
      out.push({ rule: 'io/batch-io', message: `batch input kind '${kind}' expects 1 source input, got ${sources.length} for ${m}`, path: at, hint: 'give exactly one source_input' });
    }
    if (bi.data_type !== 'TYPE_INT32' && bi.data_type !== 'TYPE_FP32') {
      out.push({ rule: 'io/batch-io', message: `batch input data type must be TYPE_INT32 or TYPE_FP32 for ${m}`, path: at, hint: 'set data_type to TYPE_INT32 or TYPE_FP32' });
    }
    for (const s of sources) if (!inputNames.has(s)) out.push({ rule: 'io/batch-io', message: `unknown source input name '${s}' for ${m}`, path: at, hint: 'name a model input' });
  });
  const targets = new Set<string>();
  (config.batch_output ?? []).forEach((bo, i) => {
    const at = `batch_output[${i}]`;
    for (const t of bo.target_name ?? []) {
      if (!outputNames.has(t)) out.push({ rule: 'io/batch-io', message: `unknown target output name '${t}' for ${m}`, path: at, hint: 'name a model output' });
      else if (targets.has(t)) out.push({ rule: 'io/batch-io', message: `target output name '${t}' can only be specified once for ${m}`, path: at, hint: 'list each target once' });
      targets.add(t);
    }
    for (const s of bo.source_input ?? []) if (!inputNames.has(s)) out.push({ rule: 'io/batch-io', message: `unknown source input name '${s}' for ${m}`, path: at, hint: 'name a model input' });
  });

  // Instance groups (after Triton's normalisation: unnamed groups are <model>_<index>).
  (config.instance_group ?? []).forEach((g, i) => {
    const at = `instance_group[${i}]`;
    const group = g.name !== undefined && g.name !== '' ? g.name : `${m}_${i}`;
    const gpus = g.gpus ?? [];
    if ((g.kind === 'KIND_CPU' || g.kind === 'KIND_MODEL') && gpus.length > 0) {
      out.push({ rule: 'instance-group/gpus', message: `instance group ${group} of model ${m} has kind ${g.kind} but specifies one or more GPUs`, path: at, hint: 'remove gpus' });
    }
    if (g.kind === 'KIND_GPU') {
      out.push({ rule: 'instance-group/kind-gpu', message: `instance group ${group} of model ${m} has kind KIND_GPU but server does not support GPUs`, path: at, hint: 'Poplar backend servers run on IPU hosts without GPU support: use kind: KIND_CPU' });
    }
    if ((g.profile ?? []).length > 0 && backend !== 'tensorrt') {
      out.push({ rule: 'instance-group/profile', message: `instance group ${group} of model ${m} and platform ${platform}specifies profile field which is only supported for TensorRT models`, path: at, hint: 'remove profile' });
    }
    if (g.count !== undefined && g.count < 1) {
      out.push({ rule: 'instance-group/count', message: `instance group ${group} of model ${m} has count ${g.count}; Triton replaces it with the default (1)`, path: `${at}.count`, hint: 'set count to 1 or more, or leave it out' });
    }
  });
  return out;
}
