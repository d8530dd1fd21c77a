// The model repository that Triton's QA client tests run against here: the
// seed's MNIST model (scaffolded, as the other serve tests use it) plus
// small Poplar-backend models that stand in for the QA models the tests
// name ("simple", the identity models, the input-validation models). Each
// is a PopEF file whose ONNX graph (the cpu plugin's convention) computes
// what Triton's model of that name computes, so popef serve gives real
// outputs; tritonserver loads the same directories with a stand-in poplar
// backend.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ONNX_FLOAT, ONNX_FLOAT16, ONNX_INT32, Proto, node, onnxModel, valueInfo } from '../../../fixtures/mnist-model.js';
import { PopefWriter } from '../../../src/format/writer.js';
import { emptyMetadata, type Anchor, type TensorInfo } from '../../../src/schema/model.js';
import { scaffoldMnist } from '../../serve/serving.js';

type Dtype = 'F32' | 'S32' | 'F16';

interface Tensor {
  readonly name: string;
  readonly dtype: Dtype;
  /** The config's dims (no batch dimension). */
  readonly dims: readonly number[];
  readonly optional?: boolean;
}

interface QaModel {
  readonly name: string;
  readonly maxBatchSize: number;
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly Tensor[];
  /** ONNX nodes from the inputs' names to the outputs' names. */
  readonly nodes: readonly Proto[];
  /** More config.pbtxt text (a scheduler, say). */
  readonly extraConfig?: string;
  /** The version directories (default: 1). */
  readonly versions?: readonly number[];
}

const TRITON_TYPE: Record<Dtype, string> = { F32: 'TYPE_FP32', S32: 'TYPE_INT32', F16: 'TYPE_FP16' };
const ONNX_TYPE: Record<Dtype, number> = { F32: ONNX_FLOAT, S32: ONNX_INT32, F16: ONNX_FLOAT16 };

/** Triton's add/sub QA models: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, cast to the output type. */
function addSub(name: string, input: Dtype, output: Dtype, more: Partial<QaModel> = {}): QaModel {
  const cast = (from: string, to: string): Proto[] =>
    input === output ? [] : [node('Cast', [from], [to], `cast_${to}`, [new Proto().bytes(1, 'to').int(3, ONNX_TYPE[output]).int(20, 2)])];
  const raw = (o: string): string => (input === output ? o : `${o}_raw`);
  return {
    name,
    maxBatchSize: 8,
    inputs: [
      { name: 'INPUT0', dtype: input, dims: [16] },
      { name: 'INPUT1', dtype: input, dims: [16] },
    ],
    outputs: [
      { name: 'OUTPUT0', dtype: output, dims: [16] },
      { name: 'OUTPUT1', dtype: output, dims: [16] },
    ],
    nodes: [
      node('Add', ['INPUT0', 'INPUT1'], [raw('OUTPUT0')], 'add'),
      node('Sub', ['INPUT0', 'INPUT1'], [raw('OUTPUT1')], 'sub'),
      ...cast(raw('OUTPUT0'), 'OUTPUT0'),
      ...cast(raw('OUTPUT1'), 'OUTPUT1'),
    ],
    ...more,
  };
}

function identity(name: string, count: number, dtype: Dtype, dims: readonly number[], extraConfig?: string): QaModel {
  const tensors = (prefix: string): Tensor[] => Array.from({ length: count }, (_, i) => ({ name: `${prefix}${i}`, dtype, dims }));
  return {
    name,
    maxBatchSize: 8,
    inputs: tensors('INPUT'),
    outputs: tensors('OUTPUT'),
    nodes: Array.from({ length: count }, (_, i) => node('Identity', [`INPUT${i}`], [`OUTPUT${i}`], `identity${i}`)),
    extraConfig,
  };
}

/** The input-validation models of L0_input_validation (upstream: Python models), as FP32 [1] inputs to one output. */
function inputValidation(name: string, optional: readonly boolean[]): QaModel {
  return {
    name,
    maxBatchSize: 0,
    inputs: optional.map((o, i) => ({ name: `INPUT${i}`, dtype: 'F32', dims: [1], ...(o ? { optional: true } : {}) })),
    outputs: [{ name: 'OUTPUT0', dtype: 'F32', dims: [1] }],
    nodes: [node('Identity', ['INPUT0'], ['OUTPUT0'], 'identity')],
  };
}

/**
 * The QA models, by the names the tests use. Where a Triton QA model has a
 * variable-sized dimension, the stand-in has a fixed one (a Poplar
 * executable's tensors have fixed shapes): the size the test sends.
 */
export const QA_MODELS: readonly QaModel[] = [
  // qa/L0_simple_*'s "simple".
  addSub('simple', 'S32', 'S32'),
  // L0_server_status's multi-version models (upstream: TensorFlow and ONNX models of qa_model_repository).
  addSub('graphdef_int32_int32_int32', 'S32', 'S32', { versions: [1, 2, 3], extraConfig: 'version_policy: { all {} }\n' }),
  addSub('onnx_int32_int32_int32', 'S32', 'S32', { versions: [1, 2, 3], extraConfig: 'version_policy: { all {} }\n' }),
  addSub('graphdef_float16_float32_float32', 'F16', 'F32'),
  identity('onnx_zero_1_float32', 1, 'F32', [8]),
  identity('onnx_zero_1_float32_longer', 1, 'F32', [32]),
  identity('onnx_zero_1_float16', 1, 'F16', [2, 2]),
  identity('onnx_zero_3_float32', 3, 'F32', [8]),
  identity(
    'onnx_zero_1_float32_queue',
    1,
    'F32',
    [8],
    'dynamic_batching {\n  max_queue_delay_microseconds: 1000000\n  preferred_batch_size: [ 8 ]\n  default_queue_policy {\n    max_queue_size: 1\n  }\n}\n',
  ),
  inputValidation('input_all_required', [false, false, false]),
  inputValidation('input_optional', [false, false, false, true]),
  inputValidation('input_all_optional', [true, true, true]),
  // L0_input_validation's pt_identity (upstream: a TorchScript nn.Identity), FP32 [8].
  { ...identity('pt_identity', 1, 'F32', [8]), maxBatchSize: 8 },
];

function anchorShape(model: QaModel, t: Tensor): number[] {
  return model.maxBatchSize > 0 ? [model.maxBatchSize, ...t.dims] : [...t.dims];
}

function configText(model: QaModel): string {
  const tensor = (t: Tensor): string =>
    `  {\n    name: "${t.name}"\n    data_type: ${TRITON_TYPE[t.dtype]}\n    dims: [ ${t.dims.join(', ')} ]\n${t.optional === true ? '    optional: true\n' : ''}  }`;
  return [
    `name: "${model.name}"`,
    'backend: "poplar"',
    `max_batch_size: ${model.maxBatchSize}`,
    `input [\n${model.inputs.map(tensor).join(',\n')}\n]`,
    `output [\n${model.outputs.map(tensor).join(',\n')}\n]`,
    'instance_group [\n  {\n    kind: KIND_CPU\n  }\n]',
    model.extraConfig ?? '',
  ].join('\n');
}

async function writeModel(repo: string, model: QaModel): Promise<void> {
  for (const version of model.versions ?? [1]) await writeVersion(join(repo, model.name, String(version)), model);
  await writeFile(join(repo, model.name, 'config.pbtxt'), configText(model));
}

async function writeVersion(dir: string, model: QaModel): Promise<void> {
  await mkdir(dir, { recursive: true });
  const executable = model.name;
  const anchor = (t: Tensor, type: Anchor['type']): Anchor => {
    const tensorInfo: TensorInfo = { dtype: t.dtype, shape: anchorShape(model, t) };
    return { name: t.name, handle: `${type === 'INPUT' ? 'h2d' : 'd2h'}_${t.name}`, tensorInfo, isPerReplica: false, type, programs: [5] };
  };
  const graph = new Proto();
  for (const n of model.nodes) graph.message(1, n);
  graph.bytes(2, model.name);
  for (const t of model.inputs) graph.message(11, valueInfo(t.name, anchorShape(model, t), ONNX_TYPE[t.dtype]));
  for (const t of model.outputs) graph.message(12, valueInfo(t.name, anchorShape(model, t), ONNX_TYPE[t.dtype]));
  const w = await PopefWriter.create(join(dir, 'executable.popef'));
  await w.writeExecutable(executable, new TextEncoder().encode(`test/triton/qa stand-in for ${model.name}: not a Poplar executable\n`));
  await w.writeMetadata({
    ...emptyMetadata(executable),
    anchors: [...model.inputs.map((t) => anchor(t, 'INPUT')), ...model.outputs.map((t) => anchor(t, 'OUTPUT'))],
    programFlow: { load: [], main: [5], save: [] },
  });
  await w.writeOpaque({ name: 'onnx', executable }, onnxModel(graph));
  await w.close();
  const names = Object.fromEntries([...model.inputs, ...model.outputs].map((t) => [t.name, t.name]));
  await writeFile(join(dir, 'name_map.json'), `${JSON.stringify(names, null, 2)}\n`);
}

/** Writes the QA repository into `<dir>/models` and returns its path. */
export async function writeQaRepository(dir: string): Promise<string> {
  const repo = await scaffoldMnist(dir);
  for (const model of QA_MODELS) await writeModel(repo, model);
  return repo;
}
