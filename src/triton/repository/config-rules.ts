import type { Int64, ModelConfig } from '../model-config.js';
import { ENUMS, ENUM_VALUE_SINCE, MESSAGES, isEnumName, isMessageName, knownIn, type FieldSpec } from '../schema.js';
import type { RawFinding } from './findings.js';
import { enumName, validateModelIOConfig } from './io-rules.js';
import { OWN_RULES, type OwnRule } from './own-rules.js';
import { autoCompleteBackendFields, normalizeInstanceGroup, normalizeModelConfig, type ModelDirectory } from './normalize.js';

/**
 * Every config rule Triton applies while loading a model, ported from
 * Triton core r24.10 (src/model_config_utils.cc, src/backend_model.cc,
 * src/model_repository_manager/model_repository_manager.cc), each function
 * named after the one it mirrors and printing its message verbatim; plus the
 * rules of this tool's own (`mirrors: null` in findings.ts).
 *
 * Triton stops at its first failure; these rules report every failure they
 * see, so Triton's message is always among them. Pure: a parsed config and
 * the facts of its directory in, findings (with config paths) out.
 */

export interface ConfigContext extends ModelDirectory {
  readonly tritonVersion: string;
  /** config.pbtxt as Triton names it in its messages. */
  readonly configPath: string;
}

const n = (v: Int64 | undefined): number => (v === undefined ? 0 : Number(v));

/** GetBackendType / GetBackendTypeFromPlatform: the four backends Triton pairs with platforms. */
function backendType(backend: string): string {
  return ['tensorflow', 'tensorrt', 'onnxruntime', 'pytorch'].includes(backend) ? backend : '';
}
function platformBackendType(platform: string): string {
  if (platform === 'tensorflow_graphdef' || platform === 'tensorflow_savedmodel') return 'tensorflow';
  if (platform === 'tensorrt_plan') return 'tensorrt';
  if (platform === 'onnxruntime_onnx') return 'onnxruntime';
  if (platform === 'pytorch_libtorch') return 'pytorch';
  return '';
}

/** Each message type's field names with their places in the schema, built once per thread. */
const schemaPlaces = new Map<string, ReadonlyMap<string, number>>();

function placesOf(type: string): ReadonlyMap<string, number> {
  let places = schemaPlaces.get(type);
  if (places === undefined) {
    places = new Map(Object.keys((MESSAGES as unknown as Record<string, Record<string, FieldSpec>>)[type] ?? {}).map((name, i) => [name, i]));
    schemaPlaces.set(type, places);
  }
  return places;
}

/**
 * The schema fields `message` holds, in schema order (the order findings
 * are reported in). Only what the message holds is visited: a config holds
 * a handful of the schema's fields, and walking every field of the schema
 * per message cost more than the rule's checks (issue 26).
 */
function heldFields(type: string, message: Record<string, unknown>): string[] {
  const places = placesOf(type);
  const held: string[] = [];
  // Most configs are written in schema order: they are sorted only when they are not.
  let inOrder = true;
  let last = -1;
  for (const name in message) {
    const place = places.get(name);
    if (place === undefined || message[name] === undefined) continue;
    if (place < last) inOrder = false;
    last = place;
    held.push(name);
  }
  return inOrder ? held : held.sort((a, b) => (places.get(a) ?? 0) - (places.get(b) ?? 0));
}

/** Fields and enum values the target release does not know: its parser would fail on them. */
function newerThanTarget(config: ModelConfig, target: string, configPath: string): RawFinding[] {
  const out: RawFinding[] = [];
  if (target === 'latest') return out;
  const walk = (type: string, message: Record<string, unknown>, path: string): void => {
    const fields = (MESSAGES as unknown as Record<string, Record<string, FieldSpec>>)[type] ?? {};
    const held = heldFields(type, message);
    for (let k = 0; k < held.length; k++) {
      const name = held[k] as string;
      const v = message[name];
      const spec = fields[name];
      if (spec === undefined) continue;
      const fieldPath = path === '' ? name : `${path}.${name}`;
      if (!knownIn(spec.since, target)) {
        const when = spec.since === 'unknown' ? 'in a release popef-toolkit does not record' : `in Triton ${spec.since}`;
        out.push({
          rule: 'config/newer-than-target',
          message: `failed to read text proto from ${configPath}: Message type "${type}" has no field named "${name}".`,
          path: fieldPath,
          hint: `"${fieldPath}" appeared ${when}; remove it, or validate for a newer server with --triton-version`,
        });
        continue;
      }
      const isMessage = isMessageName(spec.t);
      // Only messages (to walk into) and enum values (to date) can hold something newer.
      if (!isMessage && !isEnumName(spec.t)) continue;
      const listed = spec.repeated === true || spec.map !== undefined;
      const values = listed ? (v as unknown[]) : [v];
      for (let i = 0; i < values.length; i++) {
        const item = values[i];
        const itemPath = listed ? `${fieldPath}[${i}]` : fieldPath;
        if (spec.map !== undefined) {
          if (isMessage) walk(spec.t, (item as { value: unknown }).value as Record<string, unknown>, `${itemPath}.value`);
        } else if (isMessage) {
          walk(spec.t, item as Record<string, unknown>, itemPath);
        } else if (typeof item === 'string') {
          const since = ENUM_VALUE_SINCE[`${spec.t}.${item}`];
          if (!knownIn(since, target)) {
            out.push({
              rule: 'config/newer-than-target',
              message: `failed to read text proto from ${configPath}: Unknown enumeration value of "${item}" for field "${name}".`,
              path: itemPath,
              hint: `${item} appeared in Triton ${since ?? '?'}; the target is ${target}`,
            });
          }
        }
      }
    }
  };
  walk('inference.ModelConfig', config, '');
  return out;
}

const CONTROL_KINDS = ENUMS['inference.ModelSequenceBatching.Control.Kind'];

/** Mirrors `GetBooleanSequenceControlProperties` / `GetTypedSequenceControlProperties` for one control kind. */
function sequenceControl(
  config: ModelConfig,
  m: string,
  kind: 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_CORRID',
  out: RawFinding[],
): void {
  const push = (message: string, path: string, hint: string): void => {
    out.push({ rule: 'config/sequence-batching', message, path, hint });
  };
  const typed = kind === 'CONTROL_SEQUENCE_CORRID';
  let seen = false;
  (config.sequence_batching?.control_input ?? []).forEach((ci, i) => {
    (ci.control ?? []).forEach((c, j) => {
      if (enumName(CONTROL_KINDS, c.kind) !== kind) return;
      const at = `sequence_batching.control_input[${i}].control[${j}]`;
      if (seen) push(`sequence batching specifies multiple ${kind} tensors for ${m}`, at, `give one control input the ${kind} control`);
      seen = true;
      const int32 = (c.int32_false_true ?? []).length;
      const fp32 = (c.fp32_false_true ?? []).length;
      const bool = (c.bool_false_true ?? []).length;
      if (typed) {
        if (int32 > 0 || fp32 > 0 || bool > 0) {
          push(
            `sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for ${kind} for ${m}`,
            at,
            'a correlation-id control has data_type only',
          );
        }
        const allowed = ['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING'];
        if (!allowed.includes(String(c.data_type ?? 'TYPE_INVALID'))) {
          push(
            `unexpected data type for control ${kind} for ${m}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`,
            at,
            'set data_type to one of the allowed types',
          );
        }
        return;
      }
      const given = [int32, fp32, bool].filter((x) => x > 0).length;
      if (given === 0) {
        push(
          `sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for ${kind} for ${m}`,
          at,
          'give the false and true values, e.g. int32_false_true: [ 0, 1 ]',
        );
      } else if (given > 1) {
        push(
          `sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for ${kind} for ${m}`,
          at,
          'keep one of them',
        );
      } else {
        const [field, count] = int32 > 0 ? ['int32_false_true', int32] : fp32 > 0 ? ['fp32_false_true', fp32] : ['bool_false_true', bool];
        if (count !== 2)
          push(
            `sequence batching control '${field}' must have exactly 2 entries for ${kind} for ${m}`,
            at,
            'give the false value, then the true value',
          );
      }
    });
  });
}

/** The control-input checks both property getters run before looking at kinds. */
function sequenceControlInputs(config: ModelConfig, m: string, out: RawFinding[]): void {
  const names = new Set<string>();
  (config.sequence_batching?.control_input ?? []).forEach((ci, i) => {
    const at = `sequence_batching.control_input[${i}]`;
    const name = ci.name ?? '';
    if (name === '') {
      out.push({
        rule: 'config/sequence-batching',
        message: `sequence batching control tensor must have a name for ${m}`,
        path: at,
        hint: 'name the control tensor',
      });
      return;
    }
    if (names.has(name)) {
      out.push({
        rule: 'config/sequence-batching',
        message: `sequence batching control tensor '${name}' is specified for multiple control kinds for ${m}`,
        path: at,
        hint: 'list each control tensor once, with all its controls',
      });
    }
    names.add(name);
  });
}

/** Mirrors `ValidateEnsembleSchedulingConfig` with `BuildEnsembleGraph`. */
function validateEnsembleSchedulingConfig(config: ModelConfig, m: string, out: RawFinding[]): void {
  const push = (message: string, path: string, hint: string): void => {
    out.push({ rule: 'config/ensemble', message, path, hint });
  };
  if (config.platform !== 'ensemble') {
    push(
      `ensemble scheduling cannot be set for model '${m}' whose platform is not ensemble`,
      'ensemble_scheduling',
      'set platform: "ensemble", or remove ensemble_scheduling',
    );
    return;
  }
  if ((config.instance_group ?? []).length !== 0)
    push(`instance group should not be specified for ensemble '${m}'`, 'instance_group', 'remove instance_group');
  if (config.optimization !== undefined) push(`optimization should not be specified for ensemble '${m}'`, 'optimization', 'remove optimization');
  if ((config.model_warmup ?? []).length !== 0) push(`model_warmup can not be specified for ensemble '${m}'`, 'model_warmup', 'remove model_warmup');
  const steps = config.ensemble_scheduling?.step ?? [];
  if (steps.length === 0) {
    push(`must specify 'step' for ensemble '${m}'`, 'ensemble_scheduling', 'add at least one step');
    return;
  }
  interface Tensor {
    readonly name: string;
    isOutput: boolean;
    ready: boolean;
    readonly prev: Tensor[];
    readonly next: Tensor[];
  }
  const tensors = new Map<string, Tensor>();
  const tensor = (name: string, isOutput: boolean): Tensor => {
    let t = tensors.get(name);
    if (t === undefined) {
      t = { name, isOutput, ready: false, prev: [], next: [] };
      tensors.set(name, t);
    }
    return t;
  };
  // Protobuf maps keep the last of duplicated keys.
  const mapOf = (entries: readonly { key: string; value: string }[] | undefined): Map<string, string> =>
    new Map((entries ?? []).map((e) => [e.key, e.value]));
  const buildGraph = (): boolean => {
    for (const [idx, step] of steps.entries()) {
      const at = `ensemble_scheduling.step[${idx}]`;
      const inputMap = mapOf(step.input_map);
      const outputMap = mapOf(step.output_map);
      const fail = (message: string, hint: string): false => {
        push(message, at, hint);
        return false;
      };
      if ((step.model_name ?? '') === '') return fail(`must specify 'model_name' in step ${idx} of ensemble '${m}'`, 'name the model this step runs');
      if (inputMap.size === 0)
        return fail(`must specify 'input_map' in step ${idx} of ensemble '${m}'`, 'map the step model inputs to ensemble tensors');
      if (outputMap.size === 0)
        return fail(`must specify 'output_map' in step ${idx} of ensemble '${m}'`, 'map the step model outputs to ensemble tensors');
      const produced: Tensor[] = [];
      for (const target of outputMap.values()) {
        const existing = tensors.get(target);
        if (existing !== undefined && existing.isOutput) {
          return fail(
            `ensemble tensor '${target}' can appear in an output map only once for ensemble '${m}' step ${idx}`,
            'let one step write each ensemble tensor',
          );
        }
        const t = existing ?? tensor(target, true);
        t.isOutput = true;
        produced.push(t);
      }
      for (const source of inputMap.values()) {
        const t = tensor(source, false);
        for (const p of produced) {
          p.prev.push(t);
          t.next.push(p);
        }
      }
    }
    return true;
  };
  if (!buildGraph()) return;
  const queue: Tensor[] = [];
  for (const [i, input] of (config.input ?? []).entries()) {
    const t = tensors.get(input.name ?? '');
    if (t === undefined) {
      push(`ensemble input '${input.name ?? ''}' for ensemble ${m}' is not used`, `input[${i}]`, 'map the input into a step, or remove it');
      return;
    }
    t.ready = true;
    queue.push(t);
  }
  while (queue.length > 0) {
    const node = queue.shift() as Tensor;
    for (const next of node.next) {
      if (next.ready) continue;
      next.ready = next.prev.every((p) => p.ready);
      if (next.ready) queue.push(next);
    }
  }
  const outputs = new Set<string>();
  for (const [i, output] of (config.output ?? []).entries()) {
    const name = output.name ?? '';
    const t = tensors.get(name);
    if (t === undefined) {
      push(`ensemble output '${name}' for ensemble ${m}' is not used`, `output[${i}]`, 'map a step output to it, or remove it');
      return;
    }
    if (!t.ready) {
      // Follow not-ready producers back to the first one that is not connected.
      let last = t;
      const seen = new Set<string>();
      let prev: Tensor[] | undefined = t.prev;
      while (prev !== undefined && prev.length > 0) {
        const nodes: Tensor[] = prev;
        prev = undefined;
        for (const node of nodes) {
          if (!node.ready && !seen.has(node.name)) {
            seen.add(node.name);
            last = node;
            prev = node.prev;
            break;
          }
        }
      }
      const cause = last.name !== t.name ? `: at least one of its depending tensors, '${last.name}', is not connected` : '';
      push(
        `output '${name}' for ensemble '${m}' is not written${cause}`,
        `output[${i}]`,
        'connect every step input to an ensemble input or an earlier step output',
      );
      return;
    }
    outputs.add(name);
  }
  for (const [name, t] of tensors) {
    if (outputs.has(name)) continue;
    if (!t.ready || t.next.length === 0) {
      push(`ensemble tensor '${name}' is unused in ensemble '${m}'`, 'ensemble_scheduling', 'remove the tensor from the step maps, or use it');
      return;
    }
  }
}

/** Mirrors `ValidateModelConfig` (run at poll time and again when the model initialises). */
function validateModelConfig(config: ModelConfig, out: RawFinding[], autofillFailed: boolean): void {
  const m = config.name ?? '';
  const backend = config.backend ?? '';
  const platform = config.platform ?? '';
  const mbs = n(config.max_batch_size);
  const push = (rule: RawFinding['rule'], message: string, path: string | undefined, hint: string): void => {
    out.push({ rule, message, ...(path === undefined ? {} : { path }), hint });
  };
  if (backend === '') {
    // Triton stops at an autofill failure; "unexpected platform type ''" would only repeat it.
    if (platform !== 'ensemble' && !autofillFailed)
      push(
        'config/unknown-platform',
        `unexpected platform type '${platform}' for ${m}`,
        platform === '' ? undefined : 'platform',
        'set backend: "poplar" (a platform is not needed for the Poplar backend)',
      );
  } else if (platform === 'ensemble') {
    push('config/ensemble', `Ensemble model '${m}' must have platform type '${platform}' and empty backend type`, 'backend', 'remove backend');
  }
  const type = backendType(backend);
  if (type !== '' && type !== platformBackendType(platform)) {
    push(
      'config/platform-backend-pair',
      `unexpected 'platform' and 'backend' pair, got:${platform}, ${backend}`,
      'platform',
      'remove platform, or make it match the backend',
    );
  }
  if (mbs < 0)
    push('config/max-batch-size', `'max_batch_size' must be non-negative value for ${m}`, 'max_batch_size', 'use 0 (no batching) or a positive size');

  const db = config.dynamic_batching;
  if (db !== undefined) {
    (db.preferred_batch_size ?? []).forEach((p, i) => {
      const at = `dynamic_batching.preferred_batch_size[${i}]`;
      if (p <= 0)
        push('config/preferred-batch-size', `dynamic batching preferred size must be positive for ${m}`, at, 'use sizes from 1 to max_batch_size');
      else if (p > mbs)
        push(
          'config/preferred-batch-size',
          `dynamic batching preferred size must be <= max batch size for ${m}`,
          at,
          `use sizes from 1 to max_batch_size (${mbs})`,
        );
    });
    const levels = n(db.priority_levels);
    if (levels !== 0) {
      const def = n(db.default_priority_level);
      if (def === 0 || def > levels)
        push(
          'config/priority-levels',
          `default priority level must be in range [1, ${levels}] for ${m}`,
          'dynamic_batching.default_priority_level',
          `set default_priority_level between 1 and ${levels}`,
        );
      (db.priority_queue_policy ?? []).forEach((e, i) => {
        const key = n(e.key);
        if (key === 0 || key > levels)
          push(
            'config/priority-levels',
            `priority queue policy must have priority level in range [1, ${levels}] for ${m}`,
            `dynamic_batching.priority_queue_policy[${i}]`,
            `use priority levels between 1 and ${levels}`,
          );
      });
    }
    if (db.preserve_ordering === true) {
      if (levels > 1)
        push(
          'config/priority-levels',
          `Only one priority level is allowed when 'preserve_ordering' is true for ${m}`,
          'dynamic_batching.preserve_ordering',
          'drop preserve_ordering or use one priority level',
        );
      const policies = [db.default_queue_policy, ...(db.priority_queue_policy ?? []).map((e) => e.value)];
      if (policies.some((p) => p !== undefined && p.timeout_action === 'DELAY' && n(p.default_timeout_microseconds) !== 0)) {
        push(
          'config/priority-levels',
          `Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for ${m}`,
          'dynamic_batching',
          'use REJECT, or drop preserve_ordering',
        );
      }
    }
  }

  const sb = config.sequence_batching;
  if (sb !== undefined) {
    if (config.response_cache?.enable === true) {
      push(
        'config/response-cache',
        `Response Cache does not currently support model ${m} with sequence batching scheduler. Please disable the response cache.`,
        'response_cache',
        'disable response_cache',
      );
    }
    sequenceControlInputs(config, m, out);
    for (const kind of ['CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_READY', 'CONTROL_SEQUENCE_CORRID'] as const)
      sequenceControl(config, m, kind, out);
    (sb.oldest?.preferred_batch_size ?? []).forEach((p, i) => {
      const at = `sequence_batching.oldest.preferred_batch_size[${i}]`;
      if (p <= 0)
        push(
          'config/sequence-batching',
          `sequence batching preferred batch size must be positive for ${m}`,
          at,
          'use sizes from 1 to max_batch_size',
        );
      else if (p > mbs)
        push(
          'config/sequence-batching',
          `sequence batching preferred batch size must be <= max batch size for ${m}`,
          at,
          'use sizes from 1 to max_batch_size',
        );
    });
    const util = sb.direct?.minimum_slot_utilization;
    // As Triton compares: a NaN passes both tests.
    if (util !== undefined && (util < 0 || util > 1)) {
      push(
        'config/sequence-batching',
        `sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${m}`,
        'sequence_batching.direct.minimum_slot_utilization',
        'use a value between 0 and 1',
      );
    }
  }

  if (config.ensemble_scheduling !== undefined) validateEnsembleSchedulingConfig(config, m, out);
  else if (platform === 'ensemble')
    push(
      'config/ensemble',
      `ensemble scheduling must be set for ensemble ${m} whose platform is ensemble`,
      'platform',
      'add ensemble_scheduling with the steps',
    );

  if (config.model_transaction_policy?.decoupled === true && config.response_cache?.enable === true) {
    push(
      'config/response-cache',
      `Response Cache does not currently support model ${m} with 'decoupled' transaction policy. Please disable the response cache.`,
      'response_cache',
      'disable response_cache',
    );
  }
}

/**
 * Mirrors `ValidateInstanceGroup` on a server that sees no GPU. Whether a
 * KIND_GPU group loads depends on the server's GPUs: the messages are the
 * ones a GPU-enabled Triton gives on a host without GPUs (the usual IPU
 * host, and the oracle in the tests).
 */
function validateInstanceGroup(config: ModelConfig, out: RawFinding[]): void {
  if (config.ensemble_scheduling !== undefined) return;
  const m = config.name ?? '';
  const platform = config.platform ?? '';
  (config.instance_group ?? []).forEach((g, i) => {
    const at = `instance_group[${i}]`;
    const group = g.name ?? '';
    const gpus = g.gpus ?? [];
    const kind = g.kind;
    if (kind === 'KIND_MODEL' || kind === 'KIND_CPU') {
      if (gpus.length > 0)
        out.push({
          rule: 'instance-group/gpus',
          message: `instance group ${group} of model ${m} has kind ${kind} but specifies one or more GPUs`,
          path: at,
          hint: 'remove gpus',
        });
    } else if (kind === 'KIND_GPU') {
      const negative = gpus.find((id) => id < 0);
      if (negative !== undefined) {
        out.push({
          rule: 'instance-group/gpus',
          message: `instance group ${group} of model ${m} specifies invalid or unsupported gpu id ${negative}. GPUs with at least the minimum required CUDA compute compatibility of 6.000000 are: `,
          path: at,
          hint: 'GPU ids are never negative',
        });
      } else if (gpus.length === 0) {
        out.push({
          rule: 'instance-group/kind-gpu',
          message: `instance group ${group} of model ${m} has kind KIND_GPU but no GPUs are available`,
          path: at,
          hint: 'Poplar backend servers run on IPU hosts without GPUs: use kind: KIND_CPU',
        });
      } else {
        out.push({
          rule: 'instance-group/kind-gpu',
          message: `instance group ${group} of model ${m} specifies invalid or unsupported gpu id ${gpus[0] ?? 0}. GPUs with at least the minimum required CUDA compute compatibility of 6.000000 are: `,
          path: at,
          hint: 'this holds on a host without GPUs (an IPU host); use kind: KIND_CPU',
        });
      }
    } else {
      out.push({
        rule: 'instance-group/kind',
        message: `instance group ${group} of model ${m} has unexpected kind KIND_AUTO`,
        path: `${at}.kind`,
        hint: 'use KIND_CPU',
      });
    }
    const profiles = g.profile ?? [];
    if (platform !== 'tensorrt_plan' && profiles.length > 0) {
      out.push({
        rule: 'instance-group/profile',
        message: `instance group ${group} of model ${m} and platform ${platform}specifies profile field which is only supported for TensorRT models`,
        path: at,
        hint: 'remove profile',
      });
    } else {
      for (const p of profiles) {
        // GetProfileIndex: std::stoi of the name.
        const parsed = /^\s*([+-]?\d+)/.exec(p);
        const message =
          p === ''
            ? 'profile name must not be empty'
            : parsed === null
              ? `unable to parse '${p}': stoi`
              : Number(parsed[1]) < 0
                ? `instance group ${group} of model ${m} and platform ${platform} specifies invalid profile ${p}. The field should contain the string representation of a non-negative integer.`
                : undefined;
        if (message !== undefined)
          out.push({ rule: 'instance-group/profile', message, path: at, hint: 'name a TensorRT optimization profile by its index' });
      }
    }
  });
}

/** The config after autofill and normalisation, and the findings of every config rule. */
export interface ConfigCheck {
  readonly normalized: ModelConfig;
  readonly findings: RawFinding[];
}

/**
 * Appends `found` to `out`. By index, as the loops of this module that run for every model are: before V8 optimises
 * them, for-of makes an iterator and a result object per step, and most of these lists are empty (issue 26).
 */
function pushAll(out: RawFinding[], found: readonly RawFinding[]): void {
  for (let i = 0; i < found.length; i++) out.push(found[i] as RawFinding);
}

/** Every config rule, in the order Triton meets them while loading the model. */
export function checkConfig(config: ModelConfig, ctx: ConfigContext): ConfigCheck {
  const out: RawFinding[] = [];
  pushAll(out, newerThanTarget(config, ctx.tritonVersion, ctx.configPath));
  // Poll: GetNormalizedModelConfig, then ValidateModelConfig, then the name check.
  const filled = autoCompleteBackendFields(config, ctx);
  if (filled.error !== undefined) out.push(filled.error);
  let normalized = normalizeModelConfig(filled.config);
  const m = normalized.name ?? ctx.name;
  validateModelConfig(normalized, out, filled.error !== undefined);
  if (m !== ctx.name) {
    out.push({
      rule: 'config/name-mismatch',
      message: `unexpected directory name '${ctx.name}' for model '${m}', directory name must equal model name`,
      path: 'name',
      hint: `rename the directory to ${m}, or set name: "${ctx.name}" (or leave name out)`,
    });
  }
  for (let r = 0; r < OWN_RULES.length; r++) pushAll(out, (OWN_RULES[r] as OwnRule)(normalized, m));
  // Create: TritonModel::Create normalises and checks instance groups once the
  // backend resolves, then Model::Init checks inputs and outputs. Triton never
  // gets there without the backend library; these run anyway, so one pass
  // shows every problem.
  normalized = normalizeInstanceGroup(normalized);
  validateInstanceGroup(normalized, out);
  pushAll(out, validateModelIOConfig(normalized));
  if (normalized.sequence_batching !== undefined && (normalized.parameters ?? []).some((p) => p.key === 'TRITON_BATCH_STRATEGY_PATH')) {
    out.push({
      rule: 'config/batch-strategy',
      message: 'TRITON_BATCH_STRATEGY_PATH cannot be specified with sequence batcher, using default batching strategy',
      path: 'parameters',
      hint: 'remove TRITON_BATCH_STRATEGY_PATH, or use the dynamic batcher',
    });
  }
  return { normalized, findings: out };
}
