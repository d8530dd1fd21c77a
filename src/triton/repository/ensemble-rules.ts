import type { Int64, ModelConfig } from '../model-config.js';
import type { RawFinding } from './findings.js';

/**
 * Mirrors `ValidateEnsembleConfig` and `ValidateTensorMapping` (Triton core
 * r24.10, src/ensemble_scheduler/ensemble_utils.cc): once every step model
 * loads, each ensemble tensor must have one data type and compatible shapes
 * across the ensemble's inputs and outputs and the step models' configs.
 * Then, as Triton does, it walks the data flow from the ensemble inputs:
 * a step (or the ensemble's outputs) must not receive tensors that come
 * from different decoupled models, whose responses cannot be matched up.
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
const compatible = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((x, i) => x === -1 || b[i] === -1 || x === b[i]);
const show = (dims: readonly number[]): string => `[${dims.join(',')}]`;

function consistency(lhs: TensorNode, rhs: TensorNode, prefix: string): string | undefined {
  if (lhs.type !== rhs.type)
    return `${prefix}inconsistent data type: ${lhs.type} is inferred from model ${lhs.model} while ${rhs.type} is inferred from model ${rhs.model}`;
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
    if (!tensors.has(io.name ?? ''))
      tensors.set(io.name ?? '', node(e, mbs > 0, io.data_type, io.reshape !== undefined ? io.reshape.shape : io.dims));
  }
  const fail = (message: string, index: number): RawFinding => ({
    rule: 'config/ensemble-tensors',
    message,
    path: `ensemble_scheduling.step[${index}]`,
    hint: "make the ensemble tensors agree with the step models' inputs and outputs",
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
      return fail(
        `ensemble ${e} allows maximum batch size ${mbs}, but it contains model ${name} which only allows maximum batch size to be ${stepMbs}`,
        index,
      );
    }
    const batching = stepMbs > 0;
    // Protobuf maps keep the last of duplicated keys.
    const inputMap = new Map((step.input_map ?? []).map((x) => [x.key, x.value]));
    const outputMap = new Map((step.output_map ?? []).map((x) => [x.key, x.value]));
    const inputs = new Set((config.input ?? []).map((t) => t.name ?? ''));
    for (const [input, tensor] of inputMap) {
      if (!inputs.has(input))
        return fail(`in ensemble ${e}, ensemble tensor ${tensor} is mapping to non-existing input ${input} in model ${name}`, index);
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
      if (o === undefined)
        return fail(`in ensemble ${e}, ensemble tensor ${tensor} is mapped from non-existing output ${output} in model ${name}`, index);
      const problem = merge(tensor, node(name, batching, o.data_type, o.dims));
      if (problem !== undefined) return fail(problem, index);
    }
  }
  return decoupledFlow(ensemble, steps, tensors);
}

interface FlowNode {
  readonly model: string;
  decoupled: boolean;
  label: number;
  visited: boolean;
  readonly prev: FlowNode[];
  readonly next: FlowNode[];
  /** Shared by the outputs of one step, so they carry one label. */
  sibling?: FlowNode;
}

/** The decoupled-workflow walk at the end of ValidateEnsembleConfig; runs once every step's config is known. */
function decoupledFlow(
  ensemble: ModelConfig,
  steps: ReadonlyMap<string, ModelConfig>,
  tensors: ReadonlyMap<string, TensorNode>,
): RawFinding | undefined {
  const e = ensemble.name ?? '';
  const stepList = ensemble.ensemble_scheduling?.step ?? [];
  if (stepList.some((s) => !steps.has(s.model_name ?? ''))) return undefined;
  const flow = new Map<string, FlowNode>();
  const at = (tensor: string): FlowNode => {
    let n = flow.get(tensor);
    if (n === undefined) {
      n = { model: tensors.get(tensor)?.model ?? e, decoupled: false, label: 0, visited: false, prev: [], next: [] };
      flow.set(tensor, n);
    }
    return n;
  };
  const sink: FlowNode = { model: e, decoupled: false, label: 0, visited: false, prev: [], next: [] };
  for (const o of ensemble.output ?? []) {
    const n = at(o.name ?? '');
    sink.prev.push(n);
    n.next.push(sink);
  }
  for (const step of stepList) {
    const name = step.model_name ?? '';
    const decoupled = steps.get(name)?.model_transaction_policy?.decoupled === true;
    const sibling: FlowNode = { model: name, decoupled: false, label: 0, visited: false, prev: [], next: [] };
    const inputs = [...new Map((step.input_map ?? []).map((x) => [x.key, x.value])).values()];
    for (const tensor of new Map((step.output_map ?? []).map((x) => [x.key, x.value])).values()) {
      const n = at(tensor);
      n.sibling = sibling;
      n.decoupled = decoupled;
      for (const input of inputs) {
        const p = at(input);
        n.prev.push(p);
        p.next.push(n);
      }
    }
  }
  let labels = 0;
  const queue: FlowNode[] = [];
  for (const i of ensemble.input ?? []) {
    const n = at(i.name ?? '');
    n.visited = true;
    queue.push(n);
  }
  for (let head = 0; head < queue.length; head++) {
    for (const next of (queue[head] as FlowNode).next) {
      if (next.visited || !next.prev.every((p) => p.visited)) continue;
      const label = next.prev[0]?.label ?? 0;
      if (next.prev.some((p) => p.label !== label)) {
        return {
          rule: 'config/ensemble-decoupled',
          message: `in ensemble ${e}, step of model '${next.model}' receives inputs originated from different decoupled models`,
          path: 'ensemble_scheduling',
          hint: 'feed each step (and the ensemble outputs) from one decoupled model, or from none',
        };
      }
      if (next.sibling !== undefined && next.sibling.visited) {
        next.label = next.sibling.label;
      } else {
        next.label = next.decoupled ? ++labels : label;
        if (next.sibling !== undefined) {
          next.sibling.label = next.label;
          next.sibling.visited = true;
        }
      }
      next.visited = true;
      queue.push(next);
    }
  }
  return undefined;
}
