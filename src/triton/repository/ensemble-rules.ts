import type { Int64, ModelConfig } from '../model-config.js';
import type { RawFinding } from './findings.js';

/**
 * Mirrors `ValidateEnsembleConfig` and `ValidateTensorMapping` (Triton core
 * r24.10, src/ensemble_scheduler/ensemble_utils.cc): once every step model
 * loads, each ensemble tensor must have one data type and compatible shapes
 * across the ensemble's inputs and outputs and the step models' configs.
 * The decoupled-flow check that follows in Triton is not ported.
 *
 * Triton returns the first failure and its later checks build on the
 * earlier state, so this returns at most one finding.
 */

interface TensorNode {
  readonly model: string;
  readonly type: string;
  readonly dims: readonly number[];
  /** dims with the batch dimension (-1) in front when the model batches. */
  readonly fullDims: readonly number[];
}

const node = (model: string, batching: boolean, type: unknown, dims: readonly Int64[] | undefined): TensorNode => {
  const d = (dims ?? []).map(Number);
  return { model, type: typeof type === 'string' ? type : 'TYPE_INVALID', dims: d, fullDims: batching ? [-1, ...d] : d };
};

/** triton::common::CompareDimsWithWildcard. */
const compatible = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((x, i) => x === -1 || b[i] === -1 || x === b[i]);
const show = (dims: readonly number[]): string => `[${dims.join(',')}]`;

function consistency(lhs: TensorNode, rhs: TensorNode, prefix: string): string | undefined {
  if (lhs.type !== rhs.type) return `${prefix}inconsistent data type: ${lhs.type} is inferred from model ${lhs.model} while ${rhs.type} is inferred from model ${rhs.model}`;
  if (!compatible(lhs.dims, rhs.dims) && !compatible(lhs.fullDims, rhs.fullDims)) {
    return `${prefix}inconsistent shape: ${show(lhs.fullDims)} is inferred from model ${lhs.model} while ${show(rhs.fullDims)} is inferred from model ${rhs.model}`;
  }
  return undefined;
}

export function validateEnsembleConfig(ensemble: ModelConfig, steps: ReadonlyMap<string, ModelConfig>): RawFinding | undefined {
  if (ensemble.ensemble_scheduling === undefined) return undefined;
  const e = ensemble.name ?? '';
  const mbs = ensemble.max_batch_size ?? 0;
  const tensors = new Map<string, TensorNode>();
  for (const io of [...(ensemble.input ?? []), ...(ensemble.output ?? [])]) {
    if (!tensors.has(io.name ?? '')) tensors.set(io.name ?? '', node(e, mbs > 0, io.data_type, io.reshape !== undefined ? io.reshape.shape : io.dims));
  }
  const fail = (message: string, index: number): RawFinding => ({
    rule: 'config/ensemble-tensors',
    message,
    path: `ensemble_scheduling.step[${index}]`,
    hint: 'make the ensemble tensors agree with the step models\' inputs and outputs',
  });
  /** The first config to name a tensor fixes its type and shape; the others must agree. */
  const merge = (tensor: string, here: TensorNode): string | undefined => {
    const existing = tensors.get(tensor);
    if (existing === undefined) {
      tensors.set(tensor, here);
      return undefined;
    }
    return consistency(existing, here, `in ensemble ${e}, ensemble tensor ${tensor}: `);
  };
  for (const [index, step] of (ensemble.ensemble_scheduling.step ?? []).entries()) {
    const name = step.model_name ?? '';
    const config = steps.get(name);
    if (config === undefined) continue;
    const stepMbs = config.max_batch_size ?? 0;
    if (stepMbs !== 0 && stepMbs < mbs) {
      return fail(`ensemble ${e} allows maximum batch size ${mbs}, but it contains model ${name} which only allows maximum batch size to be ${stepMbs}`, index);
    }
    const batching = stepMbs > 0;
    // Protobuf maps keep the last of duplicated keys.
    const inputMap = new Map((step.input_map ?? []).map((x) => [x.key, x.value]));
    const outputMap = new Map((step.output_map ?? []).map((x) => [x.key, x.value]));
    const inputs = new Set((config.input ?? []).map((t) => t.name ?? ''));
    for (const [input, tensor] of inputMap) {
      if (!inputs.has(input)) return fail(`in ensemble ${e}, ensemble tensor ${tensor} is mapping to non-existing input ${input} in model ${name}`, index);
    }
    for (const input of config.input ?? []) {
      const tensor = inputMap.get(input.name ?? '');
      if (tensor === undefined) {
        if (input.optional === true) continue;
        return fail(`in ensemble ${e}, input ${input.name ?? ''} in model ${name} is not mapped to any ensemble tensors`, index);
      }
      const problem = merge(tensor, node(name, batching, input.data_type, input.dims));
      if (problem !== undefined) return fail(problem, index);
    }
    const outputs = new Map((config.output ?? []).map((t) => [t.name ?? '', t]));
    for (const [output, tensor] of outputMap) {
      const o = outputs.get(output);
      if (o === undefined) return fail(`in ensemble ${e}, ensemble tensor ${tensor} is mapped from non-existing output ${output} in model ${name}`, index);
      const problem = merge(tensor, node(name, batching, o.data_type, o.dims));
      if (problem !== undefined) return fail(problem, index);
    }
  }
  return undefined;
}
