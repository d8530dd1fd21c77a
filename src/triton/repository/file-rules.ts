import { join } from 'node:path';
import type { ModelConfig } from '../model-config.js';
import { elementCount } from './io-rules.js';
import type { RawFinding } from './findings.js';

/**
 * The rules Triton applies to files a config names while the model
 * initialises: label files (Model::Init) and warmup data
 * (TritonModelInstance::GenerateWarmupData, core r24.10). The caller
 * supplies the sizes of the files; the rules stay pure.
 */

/** Size in bytes of a file, or the errno text Triton's reader would print (e.g. "No such file or directory"). */
export type FileProbe = { readonly size: number } | { readonly error: string };

/** The files the rules need, relative to the model directory. */
export function filesNamedBy(config: ModelConfig): string[] {
  const files = new Set<string>();
  for (const o of config.output ?? []) if ((o.label_filename ?? '') !== '') files.add(o.label_filename ?? '');
  for (const w of config.model_warmup ?? []) {
    for (const e of w.inputs ?? []) if (e.value.input_data_file !== undefined) files.add(join('warmup', e.value.input_data_file));
  }
  return [...files];
}

// triton::common::GetDataTypeByteSize; STRING and INVALID are 0.
const BYTE_SIZE: Readonly<Record<string, number>> = {
  TYPE_BOOL: 1, TYPE_UINT8: 1, TYPE_UINT16: 2, TYPE_UINT32: 4, TYPE_UINT64: 8, TYPE_INT8: 1, TYPE_INT16: 2, TYPE_INT32: 4,
  TYPE_INT64: 8, TYPE_FP16: 2, TYPE_FP32: 4, TYPE_FP64: 8, TYPE_BF16: 2,
};

/** Triton's request log prefix for a request without an id (warmup requests have none). */
const WARMUP_REQUEST = '[request id: <id_unknown>] ';

export function checkModelFiles(config: ModelConfig, modelPath: string, probe: ReadonlyMap<string, FileProbe>): RawFinding[] {
  const out: RawFinding[] = [];
  const probeOf = (relative: string): FileProbe => probe.get(relative) ?? { error: 'No such file or directory' };
  // Model::Init reads each label file.
  (config.output ?? []).forEach((o, i) => {
    const label = o.label_filename ?? '';
    if (label === '') return;
    const p = probeOf(label);
    if ('error' in p) {
      out.push({ rule: 'config/label-file', message: `failed to open text file for read ${join(modelPath, label)}: ${p.error}`, path: `output[${i}].label_filename`, hint: `put the label file, one label per line, at ${label} in the model directory` });
    }
  });
  // GenerateWarmupData, for every instance (the first failure is the same for all).
  if (config.ensemble_scheduling !== undefined) return out;
  (config.model_warmup ?? []).forEach((w, wi) => {
    if ((w.batch_size ?? 0) === 0) return;
    const at = `model_warmup[${wi}]`;
    const inputs = w.inputs ?? [];
    const variable = inputs.filter((e) => elementCount(e.value.dims ?? []) === -1);
    for (const e of variable) {
      out.push({ rule: 'config/warmup', message: `warmup setting expects all variable-size dimensions are specified for input '${e.key}'`, path: at, hint: 'give the warmup input fixed dims' });
    }
    if (variable.length > 0) return;
    for (const e of inputs) {
      const input = e.value;
      const count = elementCount(input.dims ?? []);
      let bytes = count * (BYTE_SIZE[String(input.data_type ?? '')] ?? 0);
      if (bytes === 0) bytes = count * 4;
      if (input.input_data_file !== undefined) {
        const relative = join('warmup', input.input_data_file);
        const p = probeOf(relative);
        if ('error' in p) {
          out.push({ rule: 'config/warmup', message: `failed to open text file for read ${join(modelPath, relative)}: ${p.error}`, path: at, hint: `put the data at ${relative} in the model directory` });
        } else if (input.data_type !== 'TYPE_STRING' && bytes > p.size) {
          out.push({
            rule: 'config/warmup',
            message: `${WARMUP_REQUEST}warmup setting expects ${bytes} bytes, but the data provided from ${input.input_data_file}only has ${p.size} bytes`,
            path: at,
            hint: `the file must hold at least ${bytes} bytes`,
          });
        }
      } else if (input.zero_data === undefined && input.random_data === undefined) {
        out.push({ rule: 'config/warmup', message: `${WARMUP_REQUEST}warmup setting expects input '${e.key}' to have input_data_type set`, path: at, hint: 'set zero_data: true, random_data: true or input_data_file' });
      }
    }
  });
  return out;
}
