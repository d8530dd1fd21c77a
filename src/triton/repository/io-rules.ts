import type { Int64, ModelConfig, ModelInput, ModelOutput } from '../model-config.js';
import { ENUMS } from '../schema.js';
import type { RawFinding, RuleId } from './findings.js';

/**
 * Triton's input/output rules (core r24.10, src/model_config_utils.cc), on
 * the normalised config. Triton stops at the first failure; these report
 * every one, each with the message Triton gives when it is the first.
 */

const WILDCARD = -1;

/** triton::common::GetElementCount: -1 when any dim is variable, 0 for no dims. */
// triton::common::GetDataTypeByteSize; STRING and INVALID are 0.
const BYTE_SIZE: Readonly<Record<string, number>> = {
  TYPE_BOOL: 1,
  TYPE_UINT8: 1,
  TYPE_UINT16: 2,
  TYPE_UINT32: 4,
  TYPE_UINT64: 8,
  TYPE_INT8: 1,
  TYPE_INT16: 2,
  TYPE_INT32: 4,
  TYPE_INT64: 8,
  TYPE_FP16: 2,
  TYPE_FP32: 4,
  TYPE_FP64: 8,
  TYPE_BF16: 2,
};

/** Bytes per element of a config data type (0 for TYPE_STRING and TYPE_INVALID, as in Triton). */
export function dataTypeByteSize(type: unknown): number {
  return typeof type === 'string' ? (BYTE_SIZE[type] ?? 0) : 0;
}

export function elementCount(dims: readonly Int64[]): number {
  let count = 0;
  let first = true;
  for (const d of dims) {
    const v = Number(d);
    if (v === WILDCARD) return -1;
    count = first ? v : count * v;
    first = false;
  }
  return count;
}

/** The element counts of the runs of fixed dims between variable ones. */
function trunks(dims: readonly Int64[]): number[] {
  const out: number[] = [];
  let current = 1;
  for (const d of dims) {
    if (Number(d) !== WILDCARD) current *= Number(d);
    else {
      out.push(current);
      current = 1;
    }
  }
  out.push(current);
  return out;
}

/** The name protobuf's Kind_Name gives a value: its name, or '' for a number the enum does not define. */
export function enumName(values: readonly string[], v: string | number | undefined): string {
  if (v === undefined) return values[0] ?? '';
  if (typeof v === 'string') return v;
  return values[v] ?? '';
}

type Push = (rule: RuleId, message: string, path: string, hint: string) => void;

/** Mirrors `ValidateIOShape` (prefix "model input " or "model output "). */
function validateIOShape(io: ModelInput | ModelOutput, maxBatchSize: number, prefix: string, path: string, push: Push): boolean {
  const name = io.name ?? '';
  if (name === '') {
    push('io/name', `${prefix}must specify 'name'`, path, 'give the tensor a name');
    return false;
  }
  const named = `${prefix}'${name}' `;
  if (io.data_type === undefined || io.data_type === 'TYPE_INVALID' || io.data_type === 0) {
    push('io/data-type', `${named}must specify 'data_type'`, path, 'set data_type, e.g. TYPE_FP32');
  }
  const dims = io.dims ?? [];
  if (dims.length === 0) {
    push(
      'io/dims',
      `${named}must specify 'dims'`,
      path,
      'list the dimensions without the batch dimension; a scalar per sample is dims: [ 1 ] with reshape: { shape: [ ] }',
    );
  }
  const reshape = io.reshape;
  const shape = reshape?.shape ?? [];
  if (reshape !== undefined && shape.length === 0 && maxBatchSize === 0) {
    push(
      'io/reshape',
      `${named}cannot have empty reshape for non-batching model as scalar tensors are not supported`,
      `${path}.reshape`,
      'an empty reshape needs max_batch_size > 0',
    );
  }
  const invalid = (d: Int64): boolean => Number(d) < 1 && Number(d) !== WILDCARD;
  dims.forEach((d, i) => {
    if (invalid(d))
      push(
        'io/dims',
        `${named}dimension must be integer >= 1, or -1 to indicate a variable-size dimension`,
        `${path}.dims[${i}]`,
        'use a positive size, or -1 for a variable one',
      );
  });
  const dimsValid = dims.length > 0 && !dims.some(invalid);
  if (reshape === undefined) return true;
  shape.forEach((d, i) => {
    if (invalid(d)) {
      push(
        'io/reshape',
        `${named}reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension`,
        `${path}.reshape.shape[${i}]`,
        'use a positive size, or -1',
      );
    }
  });
  // Triton stops at the first failure; comparing sizes of invalid dims would only echo it.
  if (shape.some(invalid) || !dimsValid) return true;
  const dimsSize = elementCount(dims);
  const reshapeSize = elementCount(shape);
  // An empty reshape (a scalar) matches dims of one element.
  if (dimsSize !== reshapeSize && (reshapeSize !== 0 || dimsSize !== 1)) {
    push(
      'io/reshape',
      `${named}has different size for dims and reshape`,
      `${path}.reshape`,
      'dims and reshape must hold the same number of elements',
    );
  } else if (dimsSize === -1) {
    // Both variable: each run of fixed dims between -1s must hold the same count.
    const a = trunks(dims);
    const b = trunks(shape);
    if (a.length !== b.length) {
      push(
        'io/reshape',
        `${named}has different number of variable-size dimensions for dims and reshape`,
        `${path}.reshape`,
        'give dims and reshape the same number of -1 entries',
      );
    } else if (a.some((c, i) => c !== b[i])) {
      push(
        'io/reshape',
        `${named}has different size for dims and reshape`,
        `${path}.reshape`,
        'the fixed dims between -1 entries must hold the same number of elements',
      );
    }
  }
  return true;
}

/** Mirrors `ValidateNonLinearFormatIO`. */
function validateNonLinearFormatIO(io: ModelInput | ModelOutput, platform: string, isInput: boolean, path: string, push: Push): void {
  if (io.is_non_linear_format_io !== true) return;
  if (platform !== 'tensorrt_plan') {
    push(
      'io/tensorrt-only',
      'Non-linear IO format is only supported for the TensorRT platform',
      `${path}.is_non_linear_format_io`,
      'remove is_non_linear_format_io',
    );
  } else if ((io.dims ?? []).length !== 3) {
    push('io/tensorrt-only', `Non-linear IO format ${isInput ? 'input' : 'output'} requires 3 dims`, `${path}.dims`, 'list exactly 3 dims');
  }
}

/** Mirrors `ValidateBatchIO`. */
function validateBatchIO(config: ModelConfig, push: Push): void {
  const inputs = new Set((config.input ?? []).map((t) => t.name ?? ''));
  const outputs = new Set((config.output ?? []).map((t) => t.name ?? ''));
  (config.batch_input ?? []).forEach((bi, i) => {
    const at = `batch_input[${i}]`;
    const kind = enumName(ENUMS['inference.BatchInput.Kind'], bi.kind);
    const sources = bi.source_input ?? [];
    if (kind === '') push('io/batch-io', `unknown batch input kind '${kind}'`, `${at}.kind`, 'use one of the BatchInput kinds');
    else if (sources.length !== 1)
      push('io/batch-io', `batch input kind '${kind}' expects 1 source input, got ${sources.length}`, at, 'give exactly one source_input');
    if (bi.data_type !== 'TYPE_INT32' && bi.data_type !== 'TYPE_FP32')
      push('io/batch-io', 'batch input data type must be TYPE_INT32 or TYPE_FP32', `${at}.data_type`, 'set data_type to TYPE_INT32 or TYPE_FP32');
    sources.forEach((s) => {
      if (!inputs.has(s)) push('io/batch-io', `unknown source input name '${s}'`, at, 'name a model input');
    });
  });
  (config.batch_output ?? []).forEach((bo, i) => {
    const at = `batch_output[${i}]`;
    const kind = enumName(ENUMS['inference.BatchOutput.Kind'], bo.kind);
    const sources = bo.source_input ?? [];
    if (kind === '') push('io/batch-io', `unknown batch output kind '${kind}'`, `${at}.kind`, 'use BATCH_SCATTER_WITH_INPUT_SHAPE');
    else if (sources.length !== 1)
      push('io/batch-io', `batch output kind '${kind}' expects 1 source input, got ${sources.length}`, at, 'give exactly one source_input');
    sources.forEach((s) => {
      if (!inputs.has(s)) push('io/batch-io', `unknown source input name '${s}'`, at, 'name a model input');
    });
    const targets = new Set<string>();
    (bo.target_name ?? []).forEach((t) => {
      if (!outputs.has(t)) push('io/batch-io', `unknown target output name '${t}'`, at, 'name a model output');
      else if (targets.has(t)) push('io/batch-io', `target output name '${t}' can only be specified once`, at, 'list each target once');
      targets.add(t);
    });
  });
}

/** Mirrors `ValidateModelIOConfig` (with `ValidateModelInput` / `ValidateModelOutput`): every message ends " for <model>". */
export function validateModelIOConfig(config: ModelConfig): RawFinding[] {
  const out: RawFinding[] = [];
  const m = config.name ?? '';
  const mbs = config.max_batch_size ?? 0;
  const platform = config.platform ?? '';
  const push: Push = (rule, message, path, hint) => {
    out.push({ rule, message: `${message} for ${m}`, path, hint });
  };
  (config.input ?? []).forEach((io, i) => {
    const path = `input[${i}]`;
    if (!validateIOShape(io, mbs, 'model input ', path, push)) return;
    if ((io.format === 'FORMAT_NHWC' || io.format === 'FORMAT_NCHW') && (io.dims ?? []).length !== 3) {
      push(
        'io/format',
        'model input NHWC/NCHW require 3 dims',
        `${path}.format`,
        'list exactly 3 dims (without the batch dimension), or drop format',
      );
    }
    if (platform !== 'tensorrt_plan' && io.is_shape_tensor === true) {
      push('io/tensorrt-only', 'shape tensors are only supported for TensorRT platform', `${path}.is_shape_tensor`, 'remove is_shape_tensor');
    }
    validateNonLinearFormatIO(io, platform, true, path, push);
  });
  (config.output ?? []).forEach((io, i) => {
    const path = `output[${i}]`;
    if (!validateIOShape(io, mbs, 'model output ', path, push)) return;
    if (platform !== 'tensorrt_plan' && io.is_shape_tensor === true) {
      push('io/tensorrt-only', 'shape tensors are only supported for TensorRT platform', `${path}.is_shape_tensor`, 'remove is_shape_tensor');
    }
    validateNonLinearFormatIO(io, platform, false, path, push);
  });
  validateBatchIO(config, push);
  return out;
}
