import fc from 'fast-check';
import { DATA_TYPES, TENSOR_TYPES, type Anchor, type Metadata, type TensorInfo } from '../../src/index.js';

/** fast-check generators for the PopEF logical model. */

const text = fc.string({ unit: 'binary', maxLength: 24 });
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const count = fc.oneof(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }));

export const tensorInfo: fc.Arbitrary<TensorInfo> = fc.record({
  dtype: fc.constantFrom(...DATA_TYPES),
  shape: fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 4 }),
});

export const anchor: fc.Arbitrary<Anchor> = fc.record({
  name: text.filter((s) => s.length > 0),
  handle: text,
  tensorInfo: fc.record({ dtype: fc.constantFrom(...DATA_TYPES), shape: fc.array(fc.integer({ min: 0, max: 2 ** 40 }), { maxLength: 5 }) }),
  isPerReplica: fc.boolean(),
  type: fc.constantFrom(...TENSOR_TYPES),
  programs: fc.array(u32, { maxLength: 4 }),
});

const option = fc.record({ name: text, value: text });

export function metadataFor(executable: string): fc.Arbitrary<Metadata> {
  return fc.record({
    executable: fc.constant(executable),
    anchors: fc.uniqueArray(anchor, { maxLength: 6, selector: (a) => `${a.type}/${a.name}` }),
    programFlow: fc.record({ load: fc.array(u32, { maxLength: 3 }), main: fc.array(u32, { maxLength: 3 }), save: fc.array(u32, { maxLength: 3 }) }),
    programsMap: fc.array(fc.record({ index: u32, name: text }), { maxLength: 4 }),
    replicationFactor: count,
    numIpus: count,
    ipuVersion: count,
    isPOD: fc.boolean(),
    numProcesses: count,
    isInference: fc.boolean(),
    deviceIterations: count,
    seedHandle: text,
    engineOptions: fc.array(option, { maxLength: 4 }),
    deviceOptions: fc.array(option, { maxLength: 4 }),
  });
}
