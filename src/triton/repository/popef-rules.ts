import { userAnchors } from '../../inspect/anchor-roles.js';
import type { Anchor, Metadata } from '../../schema/model.js';
import { POPEF_TO_TRITON } from '../config-from-popef.js';
import type { Int64, ModelConfig, ModelInput, ModelOutput } from '../model-config.js';
import type { RawFinding } from './findings.js';

/**
 * The config checked against the PopEF it serves, through the name map:
 * each config tensor is a user-provided anchor of the right kind, with the
 * mapped dtype and the anchor's shape less its batch dimension(s);
 * max_batch_size fits the anchors' micro-batch; no user-provided anchor is
 * left out. The rules mirror what `popef config` generates.
 */

function batchDims(anchor: Anchor, metadata: Metadata): number {
  return anchor.isPerReplica && metadata.replicationFactor > 1 ? 2 : 1;
}

const same = (a: readonly Int64[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => Number(d) === b[i]);
const show = (xs: readonly (Int64 | number)[]): string => `[${xs.map(String).join(', ')}]`;

export function checkAgainstPopef(
  config: ModelConfig,
  /** Config (Triton) name -> anchor name, from name_map.json; identity when absent. */
  anchorOf: ReadonlyMap<string, string>,
  metadata: Metadata,
  storedTensorNames: ReadonlySet<string>,
  model: string,
  /** Whether findings of a rule are still wanted (the caller lists a limited number per rule): a finding not wanted is not built. */
  wanted: (rule: RawFinding['rule']) => boolean = () => true,
): RawFinding[] {
  const out: RawFinding[] = [];
  const push = (rule: RawFinding['rule'], make: () => Omit<RawFinding, 'rule'>): void => {
    out.push(wanted(rule) ? { rule, ...make() } : { rule, message: '', path: '' });
  };
  const { inputs, outputs } = userAnchors(metadata, storedTensorNames);
  const mbs = config.max_batch_size ?? 0;
  const served = new Set<Anchor>();
  let batchReported = false;
  const check = (kind: 'input' | 'output', tensors: readonly (ModelInput | ModelOutput)[], anchors: readonly Anchor[]): void => {
    // By name, looked up once per tensor: a scan per tensor is quadratic in a large model.
    const byName = new Map<string, Anchor>();
    for (let k = 0; k < anchors.length; k++) {
      const a = anchors[k] as Anchor;
      if (!byName.has(a.name)) byName.set(a.name, a);
    }
    let list: string | undefined;
    // The anchor list of the message, made once: per missing tensor it would be quadratic.
    const anchorList = (): string => (list ??= anchors.map((a) => `"${a.name}"`).join(', ') || 'none');
    tensors.forEach((t, i) => {
      const path = `${kind}[${i}]`;
      const name = t.name ?? '';
      if (name === '') return;
      const anchorName = anchorOf.get(name) ?? name;
      const via = anchorName === name ? '' : ` (anchor "${anchorName}" through name_map.json)`;
      const anchor = byName.get(anchorName);
      if (anchor === undefined) {
        push('popef/missing-anchor', () => ({
          message: `config ${kind} "${name}"${via} is not a user-provided ${kind} anchor of executable "${metadata.executable}" in model ${model} (its ${kind} anchors: ${anchorList()})`,
          path,
          hint: 'fix the name or name_map.json; popef dump --user-anchors lists the anchors',
        }));
        return;
      }
      served.add(anchor);
      const expectedType = POPEF_TO_TRITON[anchor.tensorInfo.dtype];
      if (t.data_type !== undefined && expectedType !== t.data_type) {
        push('popef/data-type', () => ({
          message: `config ${kind} "${name}" has data_type ${String(t.data_type)}, but anchor "${anchor.name}" is ${anchor.tensorInfo.dtype}${expectedType === undefined ? ', which Triton cannot serve' : ` (${expectedType})`}`,
          path: `${path}.data_type`,
          hint: expectedType === undefined ? 'FP8 anchors cannot be served' : `set data_type: ${expectedType}`,
        }));
      }
      const shape = anchor.tensorInfo.shape;
      const skip = mbs > 0 ? batchDims(anchor, metadata) : 0;
      const expected = shape.slice(skip);
      const dims = t.dims ?? [];
      const scalarForm = expected.length === 0 && same(dims, [1]) && (t.reshape?.shape ?? [0]).length === 0;
      if (dims.length > 0 && !same(dims, expected) && !scalarForm) {
        const why =
          mbs > 0
            ? `its shape ${show(shape)} without the batch dimension${skip === 2 ? 's (replica, micro-batch)' : ''}`
            : `its full shape (max_batch_size is 0)`;
        push('popef/dims', () => ({
          message: `config ${kind} "${name}" has dims ${show(dims)}, but anchor "${anchor.name}" needs ${show(expected)}: ${why}`,
          path: `${path}.dims`,
          hint: mbs > 0 ? 'leave the first (batch) dimension of the anchor out of dims' : 'with max_batch_size 0, dims are the full anchor shape',
        }));
      }
      if (mbs > 0 && shape.length >= skip) {
        const micro = shape[skip - 1] ?? 1;
        if (micro > 0 && mbs % micro !== 0 && !batchReported) {
          batchReported = true;
          out.push({
            rule: 'popef/max-batch-size',
            message: `max_batch_size ${mbs} of model ${model} is not a multiple of the micro-batch ${micro} of anchor "${anchor.name}"`,
            path: 'max_batch_size',
            hint: 'use micro-batch x device iterations x replication factor x gradient accumulation (popef config computes it)',
          });
        }
      }
    });
  };
  check('input', config.input ?? [], inputs);
  check('output', config.output ?? [], outputs);
  // Indexed, as above: this runs for every model, before V8 optimises it, when for-of and spreads make an iterator
  // and a result object per step (issue 26).
  const anchors = inputs.concat(outputs);
  for (let k = 0; k < anchors.length; k++) {
    const a = anchors[k] as Anchor;
    if (!served.has(a)) {
      push('popef/unserved-anchor', () => ({
        message: `user-provided ${a.type === 'INPUT' ? 'input' : 'output'} anchor "${a.name}" of executable "${metadata.executable}" is not in the config of model ${model}`,
        path: a.type === 'INPUT' ? 'input' : 'output',
        hint: 'add it to the config (popef config generates every anchor)',
      }));
    }
  }
  return out;
}
