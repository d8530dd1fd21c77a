import { isAbsolute, normalize, sep } from 'node:path';
import type { Int64, ModelConfig, ModelInput, ModelOutput } from '../model-config.js';
import type { RawFinding } from './findings.js';

/**
 * Rules of this tool's own (`mirrors: null` in findings.ts): what Triton
 * accepts silently but a Poplar deployment gets wrong. One function per
 * rule family, each `(config, model) => findings` on the normalised config.
 */

/**
 * Parameters the Poplar backend reads: the two Graphcore's example configs set
 * (https://github.com/graphcore/examples, utils/triton_server) and the two test
 * delays of its API reference
 * (https://docs.graphcore.ai/projects/poplar-triton-backend/en/latest/reference.html).
 */
export const POPLAR_PARAMETERS = ['synchronous_execution', 'timeout_ns', 'execute_delay_ms', 'instance_wise_delay_multiplier'];

const n = (v: Int64 | undefined): number => (v === undefined ? 0 : Number(v));

/** Does a file name written in the config leave the directory it is relative to? */
export function escapes(file: string): boolean {
  if (isAbsolute(file)) return true;
  const normal = normalize(file);
  return normal === '..' || normal.startsWith(`..${sep}`);
}

export type OwnRule = (config: ModelConfig, model: string) => RawFinding[];

/** config/dynamic-batching-without-batch */
export const dynamicBatchingWithoutBatch: OwnRule = (config, m) => {
  const db = config.dynamic_batching;
  if (db === undefined || n(config.max_batch_size) !== 0 || (db.preferred_batch_size ?? []).length > 0) return [];
  return [
    {
      rule: 'config/dynamic-batching-without-batch',
      message: `dynamic_batching is set for ${m} but max_batch_size is 0: every batch will hold one request`,
      path: 'dynamic_batching',
      hint: 'remove dynamic_batching, or give the model a batch dimension',
    },
  ];
};

/** config/duplicate-parameter and config/unknown-parameter, in entry order. */
export const parameterRules: OwnRule = (config, m) => {
  const out: RawFinding[] = [];
  const backend = config.backend ?? '';
  const seen = new Map<string, number>();
  (config.parameters ?? []).forEach((p, i) => {
    const first = seen.get(p.key);
    if (first !== undefined) {
      out.push({
        rule: 'config/duplicate-parameter',
        message: `parameter "${p.key}" is given more than once for ${m} (first at entry ${first + 1}); Triton keeps only one of them`,
        path: `parameters[${i}]`,
        hint: 'keep one entry per key',
      });
    } else {
      seen.set(p.key, i);
    }
    if (backend === 'poplar' && !POPLAR_PARAMETERS.includes(p.key) && !p.key.startsWith('TRITON_')) {
      out.push({
        rule: 'config/unknown-parameter',
        message: `parameter "${p.key}" is not one the Poplar backend reads (${POPLAR_PARAMETERS.join(', ')})`,
        path: `parameters[${i}]`,
        hint: 'check the key for a typo',
      });
    }
  });
  return out;
};

/** config/file-escapes-model: model files and label files named outside their directory. */
export const fileEscapesModel: OwnRule = (config, m) => {
  const out: RawFinding[] = [];
  const defaultFile = config.default_model_filename;
  if (defaultFile !== undefined && defaultFile !== '' && escapes(defaultFile)) {
    out.push({
      rule: 'config/file-escapes-model',
      message: `default_model_filename '${defaultFile}' of model '${m}' is outside the version directory`,
      path: 'default_model_filename',
      hint: 'name a file inside the version directory',
    });
  }
  (config.cc_model_filenames ?? []).forEach((e, i) => {
    if (escapes(e.value))
      out.push({
        rule: 'config/file-escapes-model',
        message: `cc_model_filenames entry '${e.value}' of model '${m}' is outside the version directory`,
        path: `cc_model_filenames[${i}]`,
        hint: 'name a file inside the version directory',
      });
  });
  (config.output ?? []).forEach((o, i) => {
    const label = o.label_filename ?? '';
    if (label !== '' && escapes(label)) {
      out.push({
        rule: 'config/file-escapes-model',
        message: `label file path '${label}' for output '${o.name ?? ''}' in model '${m}' is outside model directory`,
        path: `output[${i}].label_filename`,
        hint: 'keep label files inside the model directory',
      });
    }
  });
  return out;
};

/** config/model-metrics: what Triton 24.11 and later check when the metric is created. */
export const modelMetricsRules: OwnRule = (config) => {
  const out: RawFinding[] = [];
  (config.model_metrics?.metric_control ?? []).forEach((mc, i) => {
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
    if (problem !== undefined)
      out.push({ rule: 'config/model-metrics', message: problem, path: `model_metrics.metric_control[${i}]`, hint: 'complete the metric control' });
  });
  return out;
};

/** instance-group/count: a count below 1, which Triton replaces silently. */
export const instanceGroupCount: OwnRule = (config, m) => {
  const out: RawFinding[] = [];
  (config.instance_group ?? []).forEach((g, i) => {
    if (g.count !== undefined && g.count < 1) {
      const group = (g.name ?? '') !== '' ? (g.name ?? '') : `${m}_${i}`;
      out.push({
        rule: 'instance-group/count',
        message: `instance group ${group} of model ${m} has count ${g.count}; Triton replaces it with the default (1)`,
        path: `instance_group[${i}].count`,
        hint: 'set count to 1 or more, or leave it out',
      });
    }
  });
  return out;
};

/**
 * The list of tensors a rule below is looking at. Those rules call a
 * function for inputs, then for outputs, rather than loop over [kind, list]
 * pairs, whose destructuring takes an iterator per pair before V8
 * optimises the rule, and they run for every model (issue 26).
 */
type TensorKind = 'input' | 'output';

/** io/duplicate-name: Triton keeps the first of two equal input (or output) names. */
export const duplicateIoNames: OwnRule = (config, m) => {
  const out: RawFinding[] = [];
  const names = new Set<string>();
  const each = (kind: TensorKind, list: readonly (ModelInput | ModelOutput)[]): void => {
    list.forEach((t, i) => {
      const name = t.name ?? '';
      if (name === '') return;
      if (names.has(`${kind}:${name}`)) {
        out.push({
          rule: 'io/duplicate-name',
          message: `model ${kind} '${name}' is specified more than once for ${m}; Triton uses the first and ignores the others`,
          path: `${kind}[${i}]`,
          hint: `rename or remove the second '${name}'`,
        });
      }
      names.add(`${kind}:${name}`);
    });
  };
  each('input', config.input ?? []);
  each('output', config.output ?? []);
  return out;
};

/**
 * The characters tritonclient.http leaves as they are in a URL path
 * (Python's urllib.parse.quote: RFC 3986's unreserved set, and '/').
 * Triton's HTTP server matches the raw path, not percent-decoded, with a
 * model name of [^/]+ (server src/http_server.cc, model_regex_): a name
 * with any other character, or a '/', cannot be reached over HTTP.
 */
const URL_SAFE = /^[A-Za-z0-9_.~-]+$/;
/** Tensor names as the walkthrough renames them to: letters, digits, '_', '-', '.'. */
const TENSOR_SAFE = /^[A-Za-z0-9_.-]+$/;

/** The characters of `name` outside `safe`, each once, quoted ("' '" for a space). */
function offending(name: string, safe: RegExp): string {
  // Code points, not UTF-16 units: an emoji is one character here.
  const chars = [...new Set((name.match(/./gsu) ?? []).filter((ch) => !safe.test(ch)))];
  return chars.map((ch) => (ch === ' ' ? "' ' (space)" : `'${ch}'`)).join(', ');
}

/** names/model and names/tensor: names that Triton's HTTP clients, or the Poplar backend's, handle badly. */
export const unsafeNames: OwnRule = (config, m) => {
  const out: RawFinding[] = [];
  const name = config.name ?? '';
  if (name !== '' && !URL_SAFE.test(name)) {
    out.push({
      rule: 'names/model',
      message: `model name '${name}' has ${offending(name, /[A-Za-z0-9_.~-]/)}: Triton's HTTP server takes a model name from the raw URL path up to the next '/' and does not percent-decode it, and tritonclient.http percent-encodes every character but letters, digits, '_', '.', '-', '~' and '/', so HTTP clients cannot reach it`,
      path: 'name',
      hint: 'rename the model directory and its config name to letters, digits, _ . - ~',
    });
  }
  const each = (kind: TensorKind, list: readonly (ModelInput | ModelOutput)[]): void => {
    list.forEach((t, i) => {
      const tensor = t.name ?? '';
      if (tensor === '' || TENSOR_SAFE.test(tensor)) return;
      out.push({
        rule: 'names/tensor',
        message: `${kind} '${tensor}' of ${m} has ${offending(tensor, /[A-Za-z0-9_.-]/)}: the Poplar Triton backend's guide renames such names with name_map.json, as characters Triton's clients do not accept; client code and URLs want letters, digits, '_', '-' and '.'`,
        path: `${kind}[${i}]`,
        hint: "give it a plain name in name_map.json (popef config or scaffold: --name 'ANCHOR=new_name')",
      });
    });
  };
  each('input', config.input ?? []);
  each('output', config.output ?? []);
  return out;
};

/** Every rule of this tool's own on the config, in the order they report. */
export const OWN_RULES: readonly OwnRule[] = [
  dynamicBatchingWithoutBatch,
  parameterRules,
  fileEscapesModel,
  modelMetricsRules,
  instanceGroupCount,
  duplicateIoNames,
  unsafeNames,
];
