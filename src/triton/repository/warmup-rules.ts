import type { ModelConfig, ModelInput } from '../model-config.js';
import { protocolFromConfig } from '../protocol-datatypes.js';
import type { RawFinding } from './findings.js';

/**
 * The request-time checks a warmup sample meets. Triton (core r24.10,
 * src/backend_model_instance.cc GenerateWarmupData) builds one request per
 * sample, batch 1, then calls InferenceRequest::PrepareForInference, whose
 * Normalize and ValidateRequestInputs (src/infer_request.cc) refuse it as
 * they would a client's request; the model then fails to load.
 *
 * What the request holds, as Triton builds it: each warmup input named by a
 * config input is an "original" input of shape [1, ...dims] (just dims when
 * max_batch_size is 0) holding exactly dims x element-size bytes; any other
 * name becomes an override input, which these checks never see (it is how
 * control and state tensors are fed), so Triton accepts it.
 */

type WarmupSample = NonNullable<ModelConfig['model_warmup']>[number];

/** Triton's request log prefix for a request without an id (warmup requests have none). */
export const WARMUP_REQUEST = '[request id: <id_unknown>] ';

/** triton::common::DimsListToString. */
const dimsText = (dims: readonly number[]): string => `[${dims.join(',')}]`;

/** triton::common::DataTypeToProtocolString. */
const protocolName = (type: ModelInput['data_type']): string => protocolFromConfig(type) || '<invalid>';

/**
 * The findings of PrepareForInference for one warmup sample (`at` is its
 * config path), in Triton's order: the input count first (Triton stops
 * there), then each input's data type, then its shape. Triton stops at the
 * first input that fails; every failing input is reported here, one
 * finding each, since each is a cause of its own.
 */
export function checkWarmupRequest(config: ModelConfig, sample: WarmupSample, at: string): RawFinding[] {
  const m = config.name ?? '';
  const mbs = config.max_batch_size ?? 0;
  const inputs = config.input ?? [];
  const byName = new Map(inputs.map((i) => [i.name ?? '', i]));
  const provided = (sample.inputs ?? []).filter((e) => byName.has(e.key));
  const out: RawFinding[] = [];

  // ValidateRequestInputs: the originals are config inputs, so only a missing required one fails.
  const required = inputs.filter((i) => i.optional !== true);
  const missing = required.filter((i) => !provided.some((e) => e.key === i.name));
  if (missing.length > 0) {
    // Triton lists the request's inputs in hash-map order; with two or more that order is its own.
    const got = `[${provided.map((e) => `'${e.key}'`).join(',')}]`;
    const wanted = `[${missing.map((i) => `'${i.name ?? ''}'`).join(',')}]`;
    const expected =
      inputs.length === required.length
        ? `expected ${inputs.length} inputs`
        : `expected number of inputs between ${required.length} and ${inputs.length}`;
    out.push({
      rule: 'config/warmup-request',
      message: `${WARMUP_REQUEST}${expected} but got ${provided.length} inputs for model '${m}'. Got input(s) ${got}, but missing required input(s) ${wanted}. Please provide all required input(s).`,
      path: at,
      hint: `give the warmup sample an entry for ${missing.map((i) => i.name ?? '').join(', ')}`,
    });
    return out;
  }

  // Each request is one sample: batch 1, never above a max_batch_size that is not 0.
  for (const e of provided) {
    const input = byName.get(e.key) as ModelInput;
    const warm = e.value;
    if ((warm.data_type ?? 'TYPE_INVALID') !== (input.data_type ?? 'TYPE_INVALID')) {
      out.push({
        rule: 'config/warmup-request',
        message: `${WARMUP_REQUEST}inference input '${e.key}' data-type is '${protocolName(warm.data_type)}', but model '${m}' expects '${protocolName(input.data_type)}'`,
        path: at,
        hint: `give the warmup input data_type: ${String(input.data_type ?? '')}`,
      });
      continue;
    }
    const sent = (warm.dims ?? []).map(Number);
    const configDims = (input.dims ?? []).map(Number);
    const matches = configDims.length === sent.length && configDims.every((d, i) => d === -1 || d === sent[i]);
    if (!matches) {
      const full = mbs > 0 ? [-1, ...configDims] : configDims;
      const original = mbs !== 0 ? [1, ...sent] : sent;
      const note =
        mbs > 0
          ? 'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.'
          : '';
      out.push({
        rule: 'config/warmup-request',
        message: `${WARMUP_REQUEST}unexpected shape for input '${e.key}' for model '${m}'. Expected ${dimsText(full)}, got ${dimsText(original)}. ${note}`,
        path: at,
        hint:
          mbs > 0
            ? `give the warmup input the config's dims ${dimsText(configDims)}, without the batch dimension`
            : `give the warmup input the config's dims ${dimsText(configDims)}`,
      });
    }
    // The byte size then matches by construction: Triton appends exactly dims x element-size bytes.
  }
  return out;
}

/** Warmup inputs no config input names: Triton feeds them as override inputs, which the Poplar backend never reads. */
export function unknownWarmupInputs(config: ModelConfig, sample: WarmupSample, at: string): RawFinding[] {
  const names = new Set((config.input ?? []).map((i) => i.name ?? ''));
  const controls = new Set((config.sequence_batching?.control_input ?? []).map((c) => c.name ?? ''));
  const states = new Set((config.sequence_batching?.state ?? []).map((s) => s.input_name ?? ''));
  return (sample.inputs ?? [])
    .filter((e) => !names.has(e.key) && !controls.has(e.key) && !states.has(e.key))
    .map((e) => ({
      rule: 'config/warmup-unknown-input' as const,
      message: `warmup sample '${sample.name ?? ''}' of model '${config.name ?? ''}' gives input '${e.key}', which is not an input of the model; Triton passes it on unchecked and the model never reads it`,
      path: at,
      hint: `remove '${e.key}' from the sample, or correct its name to one of ${[...names].join(', ')}`,
    }));
}
