import { join } from 'node:path';
import type { ModelConfig } from '../model-config.js';
import { dataTypeByteSize, elementCount } from './io-rules.js';
import type { RawFinding } from './findings.js';
import { checkImplicitState, initialStateFiles } from './state-rules.js';
import { WARMUP_REQUEST, checkWarmupRequest, unknownWarmupInputs } from './warmup-rules.js';

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
  for (const f of initialStateFiles(config)) files.add(f);
  return [...files];
}

/**
 * Triton's JoinPath (core src/filesystem/api.cc): segments joined by one
 * '/', nothing normalised, so "m/../labels.txt" is printed as written.
 */
function tritonJoin(...segments: string[]): string {
  let joined = '';
  for (const seg of segments) {
    if (joined === '') joined = seg;
    else if (seg.startsWith('/')) joined += joined.endsWith('/') ? seg.slice(1) : seg;
    else joined += joined.endsWith('/') ? seg : `/${seg}`;
  }
  return joined;
}

export function checkModelFiles(config: ModelConfig, modelPath: string, probe: ReadonlyMap<string, FileProbe>): RawFinding[] {
  const out: RawFinding[] = [];
  const probeOf = (relative: string): FileProbe => probe.get(relative) ?? { error: 'No such file or directory' };
  // Model::Init reads each label file.
  (config.output ?? []).forEach((o, i) => {
    const label = o.label_filename ?? '';
    if (label === '') return;
    const p = probeOf(label);
    if ('error' in p) {
      out.push({
        rule: 'config/label-file',
        message: `failed to open text file for read ${tritonJoin(modelPath, label)}: ${p.error}`,
        path: `output[${i}].label_filename`,
        hint: `put the label file, one label per line, at ${label} in the model directory`,
      });
    }
  });
  // GenerateWarmupData, for every instance (the first failure is the same for all).
  if (config.ensemble_scheduling !== undefined) return out;
  // SequenceBatchScheduler::Create, once the instances are ready.
  const stateFindings = checkImplicitState(config, modelPath, tritonJoin, probeOf);
  (config.model_warmup ?? []).forEach((w, wi) => {
    const at = `model_warmup[${wi}]`;
    for (const f of unknownWarmupInputs(config, w, at)) out.push(f);
    if ((w.batch_size ?? 0) === 0) return;
    const before = out.length;
    const inputs = w.inputs ?? [];
    const variable = inputs.filter((e) => elementCount(e.value.dims ?? []) === -1);
    for (const e of variable) {
      out.push({
        rule: 'config/warmup',
        message: `warmup setting expects all variable-size dimensions are specified for input '${e.key}'`,
        path: at,
        hint: 'give the warmup input fixed dims',
      });
    }
    if (variable.length > 0) return;
    for (const e of inputs) {
      const input = e.value;
      const count = elementCount(input.dims ?? []);
      let bytes = count * dataTypeByteSize(input.data_type);
      if (bytes === 0) bytes = count * 4;
      if (input.input_data_file !== undefined) {
        const relative = join('warmup', input.input_data_file);
        const p = probeOf(relative);
        if ('error' in p) {
          out.push({
            rule: 'config/warmup',
            message: `failed to open text file for read ${tritonJoin(modelPath, 'warmup', input.input_data_file)}: ${p.error}`,
            path: at,
            hint: `put the data at ${relative} in the model directory`,
          });
        } else if (input.data_type !== 'TYPE_STRING' && bytes > p.size) {
          out.push({
            rule: 'config/warmup',
            message: `${WARMUP_REQUEST}warmup setting expects ${bytes} bytes, but the data provided from ${input.input_data_file}only has ${p.size} bytes`,
            path: at,
            hint: `the file must hold at least ${bytes} bytes`,
          });
        }
      } else if (input.zero_data === undefined && input.random_data === undefined) {
        out.push({
          rule: 'config/warmup',
          message: `${WARMUP_REQUEST}warmup setting expects input '${e.key}' to have input_data_type set`,
          path: at,
          hint: 'set zero_data: true, random_data: true or input_data_file',
        });
      }
    }
    // The request is prepared only once every input has its data.
    if (out.length === before) for (const f of checkWarmupRequest(config, w, at)) out.push(f);
  });
  for (const f of stateFindings) out.push(f);
  return out;
}
