/**
 * What `popef validate` reports: findings, each from one rule of the
 * registry below. Messages quote Triton's own wording where Triton has a
 * rule (so a search of server logs finds them); rules for gaps Triton does
 * not check have wording of our own.
 */

export type Severity = 'error' | 'warning';

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
}

export interface RuleInfo {
  readonly severity: Severity;
  /** One line: what the rule checks. */
  readonly description: string;
  /** Whether the message is Triton's own (true) or this tool's (false). */
  readonly triton: boolean;
}

/** Every rule, by id. Ids are stable: scripts and suppressions may rely on them. */
export const RULES = {
  'layout/hidden-directory': { severity: 'warning', triton: false, description: 'hidden directories at the repository root are loaded by Triton as models' },
  'layout/config-missing': { severity: 'error', triton: true, description: 'every model directory has a config.pbtxt' },
  'layout/version-name': { severity: 'warning', triton: true, description: 'version directories are plain decimal numbers (others are ignored or misread)' },
  'layout/no-version': { severity: 'error', triton: true, description: 'the version policy selects at least one existing version directory' },
  'layout/specific-version-missing': { severity: 'warning', triton: true, description: 'every version listed by a specific version policy exists' },
  'layout/popef-missing': { severity: 'error', triton: false, description: 'each served version of a poplar model holds a .popef file' },
  'layout/popef-name': { severity: 'warning', triton: false, description: 'the PopEF file is named executable.popef, as Graphcore names it' },
  'layout/name-map-missing': { severity: 'error', triton: false, description: 'each served version of a poplar model holds a name_map.json' },
  'config/parse': { severity: 'error', triton: true, description: 'config.pbtxt parses as Triton\'s ModelConfig (protobuf text format)' },
  'config/newer-than-target': { severity: 'error', triton: true, description: 'no field or enum value newer than the target Triton release' },
  'config/name-mismatch': { severity: 'error', triton: true, description: 'the config name equals the directory name' },
  'config/no-backend': { severity: 'error', triton: true, description: 'a backend (or a known platform) is named' },
  'config/unknown-platform': { severity: 'error', triton: true, description: 'a platform without a backend is one Triton knows' },
  'config/platform-backend-pair': { severity: 'error', triton: true, description: 'platform and backend agree' },
  'config/ensemble-not-checked': { severity: 'warning', triton: false, description: 'ensemble models are outside this validator\'s scope' },
  'config/max-batch-size': { severity: 'error', triton: true, description: 'max_batch_size is not negative' },
  'config/preferred-batch-size': { severity: 'error', triton: true, description: 'dynamic batching preferred sizes are positive and at most max_batch_size' },
  'config/priority-levels': { severity: 'error', triton: true, description: 'priority levels, default level and queue policies are consistent' },
  'config/response-cache': { severity: 'error', triton: true, description: 'the response cache is not combined with sequence batching or decoupled models' },
  'config/sequence-batching': { severity: 'error', triton: true, description: 'sequence batching controls and strategies are valid' },
  'config/model-metrics': { severity: 'error', triton: true, description: 'model_metrics entries are complete' },
  'config/dynamic-batching-without-batch': { severity: 'warning', triton: false, description: 'dynamic_batching on a model with max_batch_size 0 batches nothing' },
  'config/duplicate-parameter': { severity: 'error', triton: false, description: 'each parameters key appears once (Triton silently keeps one)' },
  'config/unknown-parameter': { severity: 'warning', triton: false, description: 'parameters keys are ones the backend reads' },
  'config/file-escapes-model': { severity: 'error', triton: true, description: 'file names in the config stay inside the model directory' },
  'io/name': { severity: 'error', triton: true, description: 'every input and output has a name' },
  'io/duplicate-name': { severity: 'error', triton: false, description: 'input and output names are unique (Triton keeps the first silently)' },
  'io/data-type': { severity: 'error', triton: true, description: 'every input and output has a data_type' },
  'io/dims': { severity: 'error', triton: true, description: 'dims are present and each is >= 1 or -1' },
  'io/reshape': { severity: 'error', triton: true, description: 'reshape agrees with dims' },
  'io/format': { severity: 'error', triton: true, description: 'FORMAT_NHWC / FORMAT_NCHW inputs have 3 dims' },
  'io/tensorrt-only': { severity: 'error', triton: true, description: 'shape tensors and non-linear IO formats are used only with TensorRT' },
  'io/batch-io': { severity: 'error', triton: true, description: 'batch inputs and outputs name existing tensors with valid kinds and types' },
  'instance-group/gpus': { severity: 'error', triton: true, description: 'KIND_CPU and KIND_MODEL groups list no GPUs' },
  'instance-group/kind-gpu': { severity: 'warning', triton: true, description: 'KIND_GPU groups need a server with GPUs (IPU servers usually have none)' },
  'instance-group/profile': { severity: 'error', triton: true, description: 'profile is used only with TensorRT' },
  'instance-group/count': { severity: 'warning', triton: false, description: 'count < 1 is silently replaced by the default' },
  'name-map/invalid': { severity: 'error', triton: false, description: 'name_map.json is a JSON object of non-empty strings' },
  'name-map/duplicate-key': { severity: 'error', triton: false, description: 'each anchor appears once in name_map.json' },
  'name-map/duplicate-value': { severity: 'error', triton: false, description: 'each Triton name appears once in name_map.json' },
  'name-map/unknown-tensor': { severity: 'error', triton: false, description: 'every name_map.json value is a config input or output' },
  'name-map/unmapped-tensor': { severity: 'error', triton: false, description: 'every config input and output appears in name_map.json' },
  'popef/unreadable': { severity: 'error', triton: false, description: 'the PopEF files of a version read as one model set' },
  'popef/missing-anchor': { severity: 'error', triton: false, description: 'every config tensor is a user-provided anchor of the PopEF' },
  'popef/data-type': { severity: 'error', triton: false, description: 'config data types match the anchors\' dtypes' },
  'popef/dims': { severity: 'error', triton: false, description: 'config dims equal the anchor shapes without the batch dimension' },
  'popef/max-batch-size': { severity: 'error', triton: false, description: 'max_batch_size is a multiple of the anchors\' micro-batch, or 0 with full dims' },
  'popef/unserved-anchor': { severity: 'error', triton: false, description: 'every user-provided anchor of the PopEF is in the config' },
  'popef/backend': { severity: 'error', triton: false, description: 'a model directory holding PopEF files uses backend "poplar"' },
  'backend/library-missing': { severity: 'error', triton: true, description: 'the backend library exists in --backend-directory' },
  'backend/runtime-escapes': { severity: 'error', triton: true, description: 'runtime names a file inside the backend directory' },
} as const satisfies Record<string, RuleInfo>;

export type RuleId = keyof typeof RULES;

/** A finding before it is placed in a model and file: where, by config path. */
export interface RawFinding {
  readonly rule: RuleId;
  readonly message: string;
  /** Path into the parsed config (see ParseResult.positions), for line:column. */
  readonly path?: string;
  readonly hint?: string;
  /** Overrides the rule's default severity. */
  readonly severity?: Severity;
}
