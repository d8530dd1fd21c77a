import type { SourcePos } from '../pbtxt-lexer.js';

/**
 * What `popef validate` reports: findings, each from one rule of the
 * registry below. Messages quote Triton's own wording where Triton has a
 * rule (so a search of server logs finds them); rules for gaps Triton does
 * not check have wording of our own.
 */

/** `info`: a notice (what was not checked, and why); it never fails a run, --strict included. */
export type Severity = 'error' | 'warning' | 'info';

/**
 * What a rule's verdict is drawn from, besides the directory listing: the
 * parsed config, a version's name map, a version's PopEF (or its
 * description). When a defect leaves one of them unusable (a config that
 * does not parse, no name_map.json, a truncated PopEF), the findings of the
 * rules that read it only echo that defect: they are folded into it.
 */
export type RuleInput = 'config' | 'name-map' | 'popef';

/** One problem validate found: the rule, its severity, the message, where, and a hint. */
export interface Finding {
  readonly rule: RuleId;
  readonly severity: Severity;
  readonly message: string;
  /** The model directory name, when the finding belongs to a model. */
  readonly model?: string;
  /** Path of the file concerned, relative to the repository root. */
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  readonly hint?: string;
  /**
   * A cause: the inputs this error leaves unusable. Rules that read them
   * did not run, or ran on what was left (JUnit shows them skipped).
   */
  readonly unusable?: readonly RuleInput[];
  /**
   * The findings that follow from this one (made by this tool's own rules
   * from an input it left unusable), folded into it: not listed beside it,
   * and not counted in the summary's errors and warnings but in `folded`.
   * They have no consequences of their own.
   */
  readonly consequences?: readonly Finding[];
}

export interface RuleInfo {
  readonly severity: Severity;
  /** One line: what the rule checks. */
  readonly description: string;
  /**
   * The Triton function (core r24.10) whose check the rule mirrors, with
   * Triton's message; null for a rule of this tool's own, where Triton
   * accepts the model.
   */
  readonly mirrors: string | null;
  /** The verdict depends on the server's hardware (its GPUs): Triton's message is the one for a host without GPUs. */
  readonly hardware?: true;
  /**
   * The inputs the rule's verdict depends on (none: it checks only the
   * listing or the file it is about). Its findings made while one of them is
   * unusable follow from that cause; when it could not run, JUnit says why.
   */
  readonly reads: readonly RuleInput[];
}

const MRM = 'ModelRepositoryManager::InitializeModelInfo';

// What the rules read (RuleInfo.reads).
const NOTHING: readonly RuleInput[] = [];
const CONFIG: readonly RuleInput[] = ['config'];
const CONFIG_AND_MAP: readonly RuleInput[] = ['config', 'name-map'];
const POPEF: readonly RuleInput[] = ['popef'];
/** The cross-check: config tensors reach anchors through the name map. */
const CROSS_CHECK: readonly RuleInput[] = ['config', 'name-map', 'popef'];

/** Every rule, by id. Ids are stable: scripts and suppressions may rely on them. */
export const RULES = {
  'layout/model-directory': {
    severity: 'warning',
    reads: NOTHING,
    mirrors: null,
    description: 'the path given is a repository, not a model directory (it holds no config.pbtxt of its own)',
  },
  'layout/no-models': {
    severity: 'warning',
    reads: NOTHING,
    mirrors: null,
    description: 'the repository holds at least one model directory (a wrong path checks nothing and passes)',
  },
  'layout/hidden-directory': {
    severity: 'warning',
    reads: NOTHING,
    mirrors: null,
    description: 'hidden directories at the repository root are loaded by Triton as models',
  },
  'layout/link-outside': {
    severity: 'error',
    reads: NOTHING,
    mirrors: null,
    description: 'config.pbtxt and name_map.json are not symbolic links that leave the repository (nothing of such a target is read or quoted)',
  },
  'layout/link-loop': {
    severity: 'error',
    reads: NOTHING,
    mirrors: null,
    description: 'no model or version directory is a symbolic link loop (ELOOP: Triton cannot open it)',
  },
  'layout/config-missing': {
    severity: 'error',
    reads: NOTHING,
    mirrors: null,
    description: 'every model directory has a config.pbtxt (without one, Triton auto-completes an empty config: see config/no-backend)',
  },
  'layout/unreadable': {
    severity: 'error',
    reads: NOTHING,
    mirrors: null,
    description:
      'every file and directory of the model can be read: a regular file within its size limit, with read permission (Triton fails to load the model otherwise)',
  },
  'layout/version-name': {
    severity: 'warning',
    reads: NOTHING,
    mirrors: 'VersionsToLoad',
    description: 'version directories are plain decimal numbers (others are ignored or misread; Triton only logs a warning)',
  },
  'layout/no-version': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ModelLifeCycle::AsyncLoad',
    description: 'the version policy selects at least one existing version directory',
  },
  'layout/specific-version-missing': {
    severity: 'warning',
    reads: CONFIG,
    mirrors: 'VersionsToLoad',
    description: 'every version listed by a specific version policy exists (Triton logs an error and loads the others)',
  },
  'layout/popef-missing': {
    severity: 'error',
    reads: NOTHING,
    mirrors: null,
    description:
      'with --require-popef, each served version of a poplar model holds a .popef file (without it, popef/not-cross-checked notes the version)',
  },
  'layout/popef-name': {
    severity: 'warning',
    reads: NOTHING,
    mirrors: null,
    description: 'the PopEF file is named executable.popef, as Graphcore names it',
  },
  'layout/name-map-missing': {
    severity: 'error',
    reads: NOTHING,
    mirrors: null,
    description: 'each served version of a poplar model holds a name_map.json',
  },
  'config/parse': {
    severity: 'error',
    reads: NOTHING,
    mirrors: 'ReadTextProto',
    description: "config.pbtxt parses as Triton's ModelConfig (protobuf text format)",
  },
  'config/newer-than-target': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ReadTextProto',
    description: 'no field or enum value newer than the target Triton release',
  },
  'config/name-mismatch': { severity: 'error', reads: CONFIG, mirrors: MRM, description: 'the config name equals the directory name' },
  'config/no-backend': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'AutoCompleteBackendFields',
    description: 'a backend (or a known platform) is named, or the directory is named model.<backend>',
  },
  'config/unknown-platform': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateModelConfig',
    description: 'a model without a backend has a platform Triton maps to one',
  },
  'config/platform-backend-pair': { severity: 'error', reads: CONFIG, mirrors: 'ValidateModelConfig', description: 'platform and backend agree' },
  'config/ensemble': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateEnsembleSchedulingConfig',
    description: 'ensembles have platform ensemble, no backend, steps that form a connected graph, no instance groups, optimization or warmup',
  },
  'config/ensemble-tensors': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateEnsembleConfig',
    description: "each ensemble tensor has one data type and compatible shapes across the ensemble and its steps' inputs and outputs",
  },
  'config/ensemble-decoupled': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateEnsembleConfig',
    description: 'no ensemble step, nor the ensemble outputs, receives tensors that come from different decoupled models',
  },
  'config/ensemble-step-missing': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ModelRepositoryManager::DependencyGraph',
    description: 'every model an ensemble step names is in the repository',
  },
  'config/max-batch-size': { severity: 'error', reads: CONFIG, mirrors: 'ValidateModelConfig', description: 'max_batch_size is not negative' },
  'config/preferred-batch-size': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateModelConfig',
    description: 'dynamic batching preferred sizes are positive and at most max_batch_size',
  },
  'config/priority-levels': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateModelConfig',
    description: 'priority levels, default level and queue policies are consistent',
  },
  'config/response-cache': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateModelConfig',
    description: 'the response cache is not combined with sequence batching or decoupled models',
  },
  'config/sequence-batching': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'GetBooleanSequenceControlProperties',
    description: 'sequence batching controls (one tensor per kind, false/true values, correlation-id type) and strategies are valid',
  },
  'config/batch-strategy': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'TritonModel::Create',
    description: 'no custom batching library with the sequence batcher',
  },
  'config/label-file': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'Model::Init',
    description: 'every label_filename exists in the model directory',
  },
  'config/warmup': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'TritonModelInstance::GenerateWarmupData',
    description: 'warmup samples have fixed dims, a data source and enough data',
  },
  'config/warmup-request': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'InferenceRequest::PrepareForInference',
    description: 'each warmup sample, as the request Triton builds from it, gives every required input, with the data type and dims of the config',
  },
  'config/warmup-unknown-input': {
    severity: 'warning',
    reads: CONFIG,
    mirrors: null,
    description: 'warmup inputs name model inputs, control inputs or state inputs (Triton passes any other name on unchecked)',
  },
  'config/implicit-state': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'SequenceBatchScheduler::Create',
    description: "each implicit state has at most one initial_state, of the state's data type and dims, named, with data",
  },
  'config/model-metrics': {
    severity: 'error',
    reads: CONFIG,
    mirrors: null,
    description: 'model_metrics entries are complete (Triton 24.11 and later check them when the metric is created)',
  },
  'config/dynamic-batching-without-batch': {
    severity: 'warning',
    reads: CONFIG,
    mirrors: null,
    description: 'dynamic_batching on a model with max_batch_size 0 batches nothing',
  },
  'config/duplicate-parameter': {
    severity: 'error',
    reads: CONFIG,
    mirrors: null,
    description: 'each parameters key appears once (Triton silently keeps one)',
  },
  'config/unknown-parameter': { severity: 'warning', reads: CONFIG, mirrors: null, description: 'parameters keys are ones the backend reads' },
  'config/file-escapes-model': {
    severity: 'error',
    reads: CONFIG,
    mirrors: null,
    description: 'file names in the config stay inside the model directory',
  },
  'io/name': { severity: 'error', reads: CONFIG, mirrors: 'ValidateIOShape', description: 'every input and output has a name' },
  'io/duplicate-name': {
    severity: 'error',
    reads: CONFIG,
    mirrors: null,
    description: 'input and output names are unique (Triton keeps the first silently)',
  },
  'names/model': {
    severity: 'warning',
    reads: CONFIG,
    mirrors: null,
    description:
      'a model name HTTP clients can reach: letters, digits, _ . - ~ (Triton matches the raw path with [^/]+, tritonclient percent-encodes the rest)',
  },
  'names/tensor': {
    severity: 'warning',
    reads: CONFIG,
    mirrors: null,
    description: "input and output names of letters, digits, _ - . (the Poplar backend's guide renames others with name_map.json)",
  },
  'io/data-type': { severity: 'error', reads: CONFIG, mirrors: 'ValidateIOShape', description: 'every input and output has a data_type' },
  'io/dims': { severity: 'error', reads: CONFIG, mirrors: 'ValidateIOShape', description: 'dims are present and each is >= 1 or -1' },
  'io/reshape': { severity: 'error', reads: CONFIG, mirrors: 'ValidateIOShape', description: 'reshape agrees with dims' },
  'io/format': { severity: 'error', reads: CONFIG, mirrors: 'ValidateModelInput', description: 'FORMAT_NHWC / FORMAT_NCHW inputs have 3 dims' },
  'io/tensorrt-only': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateModelInput',
    description: 'shape tensors and non-linear IO formats are used only with TensorRT',
  },
  'io/batch-io': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateBatchIO',
    description: 'batch inputs and outputs have one source input, name existing tensors, and use INT32 or FP32',
  },
  'instance-group/gpus': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateInstanceGroup',
    description: 'KIND_CPU and KIND_MODEL groups list no GPUs; GPU ids are never negative',
  },
  'instance-group/kind-gpu': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateInstanceGroup',
    hardware: true,
    description: 'KIND_GPU groups need GPUs, which IPU hosts do not have',
  },
  'instance-group/kind': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateInstanceGroup',
    description: 'instance group kinds are ones Triton knows',
  },
  'instance-group/profile': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'ValidateInstanceGroup',
    description: 'profile is used only with TensorRT, and names a non-negative index',
  },
  'instance-group/count': { severity: 'warning', reads: CONFIG, mirrors: null, description: 'count < 1 is silently replaced by the default' },
  'name-map/invalid': { severity: 'error', reads: NOTHING, mirrors: null, description: 'name_map.json is a JSON object of non-empty strings' },
  'name-map/duplicate-key': { severity: 'error', reads: NOTHING, mirrors: null, description: 'each anchor appears once in name_map.json' },
  'name-map/duplicate-value': { severity: 'error', reads: NOTHING, mirrors: null, description: 'each Triton name appears once in name_map.json' },
  'name-map/unknown-tensor': {
    severity: 'error',
    reads: CONFIG_AND_MAP,
    mirrors: null,
    description: 'every name_map.json value is a config input or output',
  },
  'name-map/unmapped-tensor': {
    severity: 'error',
    reads: CONFIG_AND_MAP,
    mirrors: null,
    description: 'every config input and output appears in name_map.json',
  },
  'popef/unreadable': { severity: 'error', reads: POPEF, mirrors: null, description: 'the PopEF files of a version read as one model set' },
  'popef/missing-anchor': {
    severity: 'error',
    reads: CROSS_CHECK,
    mirrors: null,
    description: 'every config tensor is a user-provided anchor of the PopEF',
  },
  'popef/data-type': { severity: 'error', reads: CROSS_CHECK, mirrors: null, description: "config data types match the anchors' dtypes" },
  'popef/dims': {
    severity: 'error',
    reads: CROSS_CHECK,
    mirrors: null,
    description: 'config dims equal the anchor shapes without the batch dimension',
  },
  'popef/max-batch-size': {
    severity: 'error',
    reads: CROSS_CHECK,
    mirrors: null,
    description: "max_batch_size is a multiple of the anchors' micro-batch, or 0 with full dims",
  },
  'popef/unserved-anchor': {
    severity: 'error',
    reads: CROSS_CHECK,
    mirrors: null,
    description: 'every user-provided anchor of the PopEF is in the config',
  },
  'popef/not-cross-checked': {
    severity: 'info',
    reads: NOTHING,
    mirrors: null,
    description:
      'a notice: a served version holds no PopEF file, or one not in the open layout (SDK-written), so its anchors were not cross-checked (an error with --require-popef)',
  },
  'popef/stale-description': {
    severity: 'error',
    reads: NOTHING,
    mirrors: null,
    description: 'a PopEF description (FILE.json) records the size (and with --verify the SHA-256) of the file beside it',
  },
  'popef/description-only': {
    severity: 'info',
    reads: NOTHING,
    mirrors: null,
    description: 'a notice: a version is cross-checked against a PopEF description with no PopEF file beside it',
  },
  'popef/backend': { severity: 'error', reads: CONFIG, mirrors: null, description: 'a model directory holding PopEF files uses backend "poplar"' },
  'backend/library-missing': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'TritonModel::GetBackendLibraryProperties',
    description: 'the backend library exists in --backend-directory',
  },
  'backend/runtime-escapes': {
    severity: 'error',
    reads: CONFIG,
    mirrors: 'TritonModel::GetBackendLibraryProperties',
    description: 'runtime names a file inside the backend directory',
  },
} as const satisfies Record<string, RuleInfo>;

/** The id of a validate rule (`config/max-batch-size`, ...): a key of RULES. */
export type RuleId = keyof typeof RULES;

/**
 * The rules whose findings are the repository's own (validate.ts adds them
 * to the repository's sink), and of those the ones that are never a
 * model's: a report lists for the repository only the first, and for a
 * model every rule but the second.
 */
export const REPOSITORY_ONLY_RULES: ReadonlySet<RuleId> = new Set<RuleId>(['layout/model-directory', 'layout/hidden-directory', 'layout/no-models']);
export const REPOSITORY_RULES: ReadonlySet<RuleId> = new Set<RuleId>([...REPOSITORY_ONLY_RULES, 'layout/link-loop']);

/** A finding before it is placed in a model and file: where, by config path. */
export interface RawFinding {
  readonly rule: RuleId;
  readonly message: string;
  /** Path into the parsed config (see ParseResult.positions), for line:column. */
  readonly path?: string;
  readonly hint?: string;
  /** Overrides the rule's default severity. */
  readonly severity?: Severity;
  /** The file, relative to the repository root, when it is not the model's config.pbtxt. */
  readonly file?: string;
  /** A position in `file` known directly (a name_map.json key), rather than by config path. */
  readonly at?: SourcePos;
  /** A cause (an error only): the inputs it leaves unusable (Finding.unusable). */
  readonly unusable?: readonly RuleInput[];
  /**
   * The version directory (model/1) whose name map or PopEF the finding
   * reads or is about: a cause in one version has consequences only there.
   */
  readonly version?: string;
}
