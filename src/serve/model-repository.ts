import { FILE_LIMITS, readRegularText } from '../io/local-file.js';
import { join } from 'node:path';
import { isPopefError } from '../errors.js';
import { ModelSet } from '../format/model-set.js';
import { resolveTarget } from '../run/model-target.js';
import type { ExecutionPlugin, ModelTensors, TensorSpec } from '../run/plugin-api.js';
import { elementCount, modelTensorSpecs } from '../run/tensor.js';
import type { ModelConfig, ModelInput, ModelOutput } from '../triton/model-config.js';
import { RULES, type Finding } from '../triton/repository/findings.js';
import { POLL_RULES, validateRepository, type ModelReport } from '../triton/repository/validate.js';
import { protocolFromConfig } from '../triton/protocol-datatypes.js';
import { ServedModel, type InstanceEvent, type ServedTensor } from './served-model.js';
import type { StartedInstance } from './scheduler/instances.js';
import { sequenceSettings, type SequenceSettings } from './scheduler/sequence-controls.js';
import { dimsToString } from './infer-request.js';
import { RequestError } from './status.js';

/**
 * The models `popef serve` holds: every model directory of the given
 * repositories, validated on load with `popef validate`'s Triton rules. A
 * model with errors is UNAVAILABLE with Triton's message as the reason; a
 * model that passes is opened in the plugin (one plugin model per instance
 * of its instance groups) and READY. Lookups answer with the messages of
 * Triton's ModelLifeCycle::GetModel and ModelRepositoryManager.
 */

export interface LoadOptions {
  /**
   * Makes the plugin for one model instance. Each instance gets its own, so
   * that a plugin process that dies takes down only its model (and an IPU
   * bridge holds one device per instance, as Triton's instances do).
   */
  readonly createPlugin: () => Promise<ExecutionPlugin>;
  /** Only these model names (Triton's --load-model). */
  readonly models?: readonly string[];
  /** Plugin options, as `popef run --plugin-option`. */
  readonly pluginOptions?: Readonly<Record<string, string>>;
  /** Told about each model as it is loaded or refused. */
  readonly onModel?: (model: ServedModel) => void;
  /** Told of each finding about a repository as a whole (validate's repository-level findings). */
  readonly onRepositoryFinding?: (root: string, finding: Finding) => void;
  /** Told when an instance fails, is restarted or given up. */
  readonly onInstanceEvent?: (event: InstanceEvent) => void;
}

function dimsOf(t: ModelInput | ModelOutput): number[] {
  return (t.dims ?? []).map((d) => Number(d));
}

function unavailable(name: string, config: ModelConfig | undefined, reason: string, version = '', hint?: string): ServedModel {
  return new ServedModel({ name, version, config, state: 'UNAVAILABLE', reason, ...(hint === undefined ? {} : { hint }) });
}

/** Joins config tensors to the plugin's anchors through name_map.json. */
function joinTensors(
  configTensors: readonly (ModelInput | ModelOutput)[],
  specs: readonly TensorSpec[],
  anchorOf: (client: string) => string,
  labels: ReadonlyMap<string, readonly string[]>,
): ServedTensor[] | string {
  const out: ServedTensor[] = [];
  const specOf = new Map(specs.map((s) => [s.name, s]));
  for (const t of configTensors) {
    const name = t.name ?? '';
    const anchor = anchorOf(name);
    const spec = specOf.get(anchor);
    if (spec === undefined) return `tensor '${name}' (anchor '${anchor}') is not a tensor the execution plugin offers for this model`;
    const datatype = protocolFromConfig(t.data_type);
    if (datatype === '') return `tensor '${name}' has no data_type`;
    const optional = 'optional' in t && t.optional === true ? { optional: true } : {};
    out.push({ name, anchor, datatype, dims: dimsOf(t), anchorShape: spec.shape, labels: labels.get(name), ...optional });
  }
  return out;
}

/**
 * A sequence model's settings, with each control joined to the plugin input
 * it feeds (one element per row, of the control's type); or why it cannot
 * be served.
 */
function sequenceOf(
  config: ModelConfig,
  specs: readonly TensorSpec[],
  anchorOf: (client: string) => string,
): { settings: SequenceSettings; anchorOf: (name: string) => string } | string {
  const settings = sequenceSettings(config);
  if (typeof settings === 'string') return settings;
  const batched = (config.max_batch_size ?? 0) > 0;
  for (const control of settings.controls) {
    const anchor = anchorOf(control.name);
    const spec = specs.find((s) => s.name === anchor);
    if (spec === undefined) return `control input '${control.name}' (anchor '${anchor}') is not a tensor the execution plugin offers for this model`;
    const perRow = elementCount(batched ? spec.shape.slice(1) : spec.shape);
    if (spec.dtype !== control.dtype || perRow !== 1)
      return `control input '${control.name}' (${control.kind}) takes one ${control.dtype} element per row, but the plugin's '${anchor}' is ${spec.dtype} ${dimsToString(spec.shape)}`;
  }
  return { settings, anchorOf };
}

async function loadModel(root: string, report: ModelReport, options: LoadOptions, selectedVersion: number | undefined): Promise<ServedModel> {
  const error = report.findings.find((f) => f.severity === 'error');
  const config = report.config;
  if (error !== undefined) {
    // A check Triton makes when it loads the model (not while polling) ends in a Status whose text names its class.
    const loadTime = !POLL_RULES.has(error.rule) && RULES[error.rule].mirrors !== null;
    return unavailable(report.name, config, loadTime ? `Invalid argument: ${error.message}` : error.message);
  }
  if (config === undefined) return unavailable(report.name, config, 'the model has no usable config');
  if (config.backend !== 'poplar') {
    return unavailable(report.name, config, `popef serve runs models of the poplar backend only; this one names backend '${config.backend ?? ''}'`);
  }
  const modelDir = join(root, report.name);
  let version = selectedVersion === undefined ? '' : String(selectedVersion);
  const opened: StartedInstance[] = [];
  const release = async (): Promise<void> => {
    await Promise.allSettled(opened.map((i) => i.model.close()));
    await Promise.allSettled(opened.map((i) => i.plugin.dispose()));
  };
  try {
    const target = await resolveTarget([modelDir], root, selectedVersion);
    version = String(target.version ?? '');
    const anchorOf = new Map<string, string>();
    for (const [anchor, client] of target.clientNames) anchorOf.set(client, anchor);
    const set = await ModelSet.open(target.files);
    let executable: string;
    let tensors: ModelTensors;
    try {
      executable = set.model().name;
      tensors = modelTensorSpecs(set, executable);
    } finally {
      await set.close();
    }
    const labels = new Map<string, readonly string[]>();
    for (const o of config.output ?? []) {
      if ((o.label_filename ?? '') === '') continue;
      const text = await readRegularText(join(modelDir, o.label_filename ?? ''), { what: 'the label file', limit: FILE_LIMITS.json });
      labels.set(
        o.name ?? '',
        text.split('\n').filter((line, i, all) => line !== '' || i < all.length - 1),
      );
    }
    const count = Math.max(
      1,
      (config.instance_group ?? []).reduce((n, g) => n + (g.count ?? 1), 0),
    );
    const files = target.files;
    const startInstance = async (): Promise<StartedInstance> => {
      const plugin = await options.createPlugin();
      try {
        return { plugin, model: await plugin.open({ files, executable, options: options.pluginOptions ?? {}, tensors }) };
      } catch (error) {
        await plugin.dispose().catch(() => undefined);
        throw error;
      }
    };
    for (let i = 0; i < count; i++) opened.push(await startInstance());
    const first = opened[0]?.model;
    if (first === undefined) throw new Error('no instance opened');
    const lookup = (client: string): string => anchorOf.get(client) ?? client;
    const inputs = joinTensors(config.input ?? [], first.inputs, lookup, labels);
    const outputs = joinTensors(config.output ?? [], first.outputs, lookup, labels);
    if (typeof inputs === 'string' || typeof outputs === 'string') {
      await release();
      return unavailable(report.name, config, typeof inputs === 'string' ? inputs : (outputs as string), version);
    }
    const sequence = config.sequence_batching === undefined ? undefined : sequenceOf(config, first.inputs, lookup);
    if (typeof sequence === 'string') {
      await release();
      return unavailable(report.name, config, sequence, version);
    }
    return new ServedModel({
      name: report.name,
      version,
      config,
      inputs,
      outputs,
      ...(sequence === undefined ? {} : { sequence }),
      instances: opened,
      startInstance,
      onInstanceEvent: options.onInstanceEvent,
      state: 'READY',
    });
  } catch (e) {
    await release();
    const message = isPopefError(e) ? e.message : e instanceof Error ? e.message : String(e);
    // The error's hint (popef import for an SDK-written PopEF, say) goes to the log; the index's reason stays Triton's form.
    return unavailable(report.name, config, `failed to load '${report.name}': ${message}`, version, isPopefError(e) ? e.suggestion : undefined);
  }
}

/**
 * A requested model version as Triton's frontends read it before anything
 * else (server r24.10, common.cc, GetModelVersionFromString, on HTTP and
 * gRPC alike): empty is -1 (the latest ready version); otherwise std::stol,
 * exact over int64 (leading blanks and a sign taken, trailing text
 * ignored, out_of_range past int64), and a negative version is refused.
 */
export function modelVersionFromString(version: string): bigint {
  if (version === '') return -1n;
  const digits = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(version)?.[1];
  const value = digits === undefined ? undefined : BigInt(digits);
  if (value === undefined || value < -(2n ** 63n) || value > 2n ** 63n - 1n) {
    throw new RequestError(
      'INVALID_ARG',
      `failed to get model version from specified version string '${version}' (details: stol), version should be an integral value > 0`,
    );
  }
  if (value < 0n) throw new RequestError('INVALID_ARG', `invalid model version specified '${version}' , version should be an integral value > 0`);
  return value;
}

/** The versions of one model Triton loads: every one its version policy selects; one refusal when the model has errors. */
async function loadVersions(root: string, report: ModelReport, options: LoadOptions): Promise<ServedModel[]> {
  const served: ServedModel[] = [];
  const versions = report.findings.some((f) => f.severity === 'error') || report.versions.length === 0 ? [undefined] : report.versions;
  for (const v of versions) served.push(await loadModel(root, report, options, v));
  return served;
}

export class ModelRepository {
  /** Each model's served versions, highest first. */
  private readonly models = new Map<string, ServedModel[]>();
  /** Models being unloaded: lookups refuse them while their queued requests drain. */
  private readonly unloading = new Set<string>();
  private loaded = false;

  /** Every model version, in name order, then version order. */
  list(): ServedModel[] {
    return [...this.models.values()].flat().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : Number(a.version) - Number(b.version)));
  }

  /** True once every model has been loaded or refused. */
  get ready(): boolean {
    return this.loaded;
  }

  /** The state to report for a model (Triton's UNLOADING while an unload drains it). */
  stateOf(model: ServedModel): string {
    return this.unloading.has(model.name) ? 'UNLOADING' : model.state;
  }

  async load(roots: readonly string[], options: LoadOptions): Promise<void> {
    for (const root of roots) {
      // With one repository, only the models asked for are validated; with several, a name asked for may
      // be in another one (validateRepository refuses a name it does not hold), so all are, and filtered here.
      const report = await validateRepository(root, { models: roots.length === 1 ? options.models : undefined, tritonVersion: 'latest' });
      // What is wrong with the repository as a whole (a model directory or a version directory given for it, hidden
      // directories): Triton loads on regardless, and so does serve, but the user is told why nothing may be served.
      for (const f of report.findings) options.onRepositoryFinding?.(root, f);
      for (const m of report.models) {
        if (options.models !== undefined && !options.models.includes(m.name)) continue;
        const served = this.models.has(m.name)
          ? [unavailable(m.name, m.config, `model '${m.name}' appears in more than one model repository`)]
          : await loadVersions(root, m, options);
        const earlier = this.models.get(m.name);
        if (earlier !== undefined) await Promise.allSettled(earlier.map((e) => e.close()));
        this.models.set(m.name, served);
        for (const s of served) options.onModel?.(s);
      }
    }
    this.loaded = true;
  }

  /**
   * (Re)loads one model from its directory, read afresh. The model it
   * replaces keeps serving until the new one is loaded, then drains and
   * closes, as in Triton's reload.
   */
  async reload(root: string, name: string, options: LoadOptions): Promise<ServedModel[]> {
    const report = await validateRepository(root, { models: [name], tritonVersion: 'latest' });
    const m = report.models.find((r) => r.name === name);
    // A model Triton refuses while polling (its config) never reaches the life cycle: it gets no state.
    const pollError = m?.findings.some((f) => f.severity === 'error' && POLL_RULES.has(f.rule)) ?? true;
    if (m === undefined || pollError) throw new RequestError('INTERNAL', `failed to load '${name}', failed to poll from model repository`);
    // Every version the policy selects, as at start-up.
    const served = await loadVersions(root, m, options);
    const earlier = this.models.get(name);
    this.unloading.delete(name);
    this.models.set(name, served);
    for (const s of served) options.onModel?.(s);
    if (earlier !== undefined) await Promise.allSettled(earlier.map((e) => e.idle().then(() => e.close())));
    return served;
  }

  /** Unloads a model: new requests are refused, queued ones finish, then it closes and is listed UNAVAILABLE "unloaded". */
  async unload(name: string): Promise<void> {
    const versions = this.models.get(name);
    if (versions === undefined || !versions.some((v) => v.ready) || this.unloading.has(name)) return;
    this.unloading.add(name);
    try {
      await Promise.allSettled(versions.map((v) => v.idle().then(() => v.close())));
    } finally {
      if (this.unloading.delete(name) && this.models.get(name) === versions)
        this.models.set(
          name,
          versions.map((v) => unavailable(name, v.config, 'unloaded', v.version)),
        );
    }
  }

  /** The model, with Triton's messages for a name, version or state that does not serve. */
  get(name: string, version: string): ServedModel {
    const found = this.models.get(name);
    if (found === undefined) throw new RequestError('NOT_FOUND', `Request for unknown model: '${name}' is not found`);
    // A model being unloaded answers as one that is not ready.
    const versions = this.unloading.has(name) ? found.map((v) => unavailable(name, v.config, 'unloading', v.version)) : found;
    const requested = modelVersionFromString(version);
    if (requested !== -1n) {
      const model = versions.find((m) => requested.toString() === m.version);
      if (model === undefined) throw new RequestError('NOT_FOUND', `Request for unknown model: '${name}' version ${requested} is not found`);
      if (!model.ready) throw new RequestError('UNAVAILABLE', `Request for unknown model: '${name}' version ${requested} is not at ready state`);
      return model;
    }
    // No version: the highest version that is ready, as ModelLifeCycle::GetModel picks it.
    const latest = versions.find((m) => m.ready);
    if (latest === undefined) throw new RequestError('NOT_FOUND', `Request for unknown model: '${name}' has no available versions`);
    return latest;
  }

  /** Whether the model (and version) is ready; only a version that does not parse is an error (the frontends check it first). */
  isReady(name: string, version: string): boolean {
    modelVersionFromString(version);
    try {
      return this.get(name, version).ready;
    } catch {
      return false;
    }
  }

  async idle(): Promise<void> {
    await Promise.all(this.list().map((m) => m.idle()));
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.list().map((m) => m.close()));
  }
}
