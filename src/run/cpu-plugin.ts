import { FILE_LIMITS, readRegularFile } from '../io/local-file.js';
import { ErrorCode, PopefError } from '../errors.js';
import { ModelSet } from '../format/model-set.js';
import { DATA_TYPE_INFO, type DataTypeInfo } from '../schema/data-types.js';
import {
  cannotRunHere,
  type Availability,
  type ExecutionPlugin,
  type ModelRequest,
  type OpenedModel,
  type Tensor,
  type TensorSpec,
} from './plugin-api.js';
import { userTensorSpecs } from './tensor.js';
import { importModule } from './import-module.js';
import { sourceGraphBlob } from './source-graph.js';

/**
 * The `cpu` reference plugin: runs the model's source ONNX graph with
 * onnxruntime-node (an optional dependency, imported only here), so that
 * IPU results can be checked against the source model.
 *
 * Where the graph comes from: the `reference` option (a .onnx file), else
 * the opaque blob of the executable named "onnx" (or "onnx:<anything>"),
 * the convention `popef pack` users follow to ship the graph in the model.
 * Graph inputs are fed by name: the user-provided input anchors (renamed by
 * `map.<anchor>=<graph name>` options when names differ) and every tensor
 * data blob whose name is a graph input (weights kept out of the graph).
 */

/** What this module needs of onnxruntime-node, typed here so nothing `any` escapes. */
interface OrtTensor {
  readonly type: string;
  readonly dims: readonly number[];
  readonly data: ArrayBufferView;
}
interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor | undefined>>;
  release(): Promise<void>;
}
interface Ort {
  readonly InferenceSession: { create(model: Uint8Array, options?: { intraOpNumThreads?: number; interOpNumThreads?: number }): Promise<OrtSession> };
  readonly Tensor: new (type: string, data: ArrayBufferView, dims: readonly number[]) => OrtTensor;
}

type OrtType = NonNullable<DataTypeInfo['ort']>;

/** The typed array onnxruntime-node wants for each tensor type DATA_TYPE_INFO names (a new name fails to compile until it has one). */
interface TypedArrayOf {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): ArrayBufferView;
  readonly BYTES_PER_ELEMENT: number;
}
const ORT_ARRAYS: Readonly<Record<OrtType, TypedArrayOf>> = {
  float32: Float32Array,
  float64: Float64Array,
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
  // onnxruntime-node takes float16 data as raw 16-bit words.
  float16: Uint16Array,
};

const INSTALL_HINT =
  'install it beside popef-toolkit: ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.22.0 (its CPU binaries come inside the package; the setting stops its install step from downloading CUDA files)';

export interface CpuPluginOptions {
  /** Module to import (tests point it elsewhere to simulate its absence). */
  readonly moduleName?: string;
}

/** The typed array onnxruntime takes for these bytes: a view when they are aligned for the type, else an aligned copy. */
function ortArray(type: OrtType, data: Uint8Array): ArrayBufferView {
  const View = ORT_ARRAYS[type];
  const size = View.BYTES_PER_ELEMENT;
  // A view costs nothing; onnxruntime reads it during the run and never writes it. Frames and file slices may sit at any offset.
  if (data.byteOffset % size === 0 && data.byteLength % size === 0) return new View(data.buffer, data.byteOffset, data.byteLength / size);
  const buffer = new ArrayBuffer(data.byteLength);
  new Uint8Array(buffer).set(data);
  return new View(buffer, 0, data.byteLength / size);
}

function toOrt(ort: Ort, t: Tensor, label: string): OrtTensor {
  const type: OrtType | undefined = DATA_TYPE_INFO[t.dtype].ort;
  if (type === undefined) throw new PopefError(ErrorCode.InvalidInput, `input "${label}" has dtype ${t.dtype}, which onnxruntime cannot take`, {});
  return new ort.Tensor(type, ortArray(type, t.data), t.shape);
}

function fromOrt(o: OrtTensor, spec: TensorSpec): Tensor {
  const expected: OrtType | undefined = DATA_TYPE_INFO[spec.dtype].ort;
  if (o.type !== expected || o.dims.length !== spec.shape.length || o.dims.some((d, i) => d !== spec.shape[i])) {
    throw new PopefError(
      ErrorCode.Plugin,
      `the ONNX graph's output "${spec.name}" is ${o.type} [${o.dims.join(', ')}], but the anchor is ${spec.dtype} [${spec.shape.join(', ')}]`,
      { suggestion: 'the graph does not match the PopEF model: give the right --reference' },
    );
  }
  // onnxruntime-node gives each run's outputs buffers of their own: they are handed on, not copied.
  const view = o.data;
  return { ...spec, data: new Uint8Array(view.buffer, view.byteOffset, view.byteLength) };
}

/**
 * onnxruntime's thread options from the `threads` plugin option: N intra-op
 * threads, or onnxruntime's own default (one per core) when not given.
 * `threads=1` runs each graph on the calling thread: for small graphs under
 * concurrent load (popef serve) that avoids the spinning of idle pool
 * threads, which takes the cores the server and its clients need.
 */
function sessionOptions(threads: string | undefined): { intraOpNumThreads?: number; interOpNumThreads?: number } {
  if (threads === undefined) return {};
  const n = Number(threads);
  if (!Number.isInteger(n) || n < 1 || n > 1024)
    throw new PopefError(ErrorCode.InvalidInput, `plugin option threads="${threads}" is not a whole number from 1 to 1024`, {});
  return { intraOpNumThreads: n, interOpNumThreads: 1 };
}

export class CpuPlugin implements ExecutionPlugin {
  readonly name = 'cpu';
  private ort: Ort | undefined;
  private failure: string | undefined;
  private sessions: OrtSession[] = [];

  constructor(private readonly options: CpuPluginOptions = {}) {}

  private async load(): Promise<Ort | undefined> {
    if (this.ort !== undefined || this.failure !== undefined) return this.ort;
    try {
      this.ort = (await importModule(this.options.moduleName ?? 'onnxruntime-node')) as Ort;
    } catch (error) {
      this.failure = (error as Error).message.split('\n')[0] ?? 'unknown error';
    }
    return this.ort;
  }

  async probe(): Promise<Availability> {
    const ort = await this.load();
    return ort !== undefined ? { available: true } : this.unavailable();
  }

  private unavailable(): Availability {
    return { available: false, reason: `onnxruntime-node cannot be loaded (${this.failure ?? ''})`, hint: INSTALL_HINT };
  }

  async open(request: ModelRequest): Promise<OpenedModel> {
    const ort = await this.load();
    if (ort === undefined) throw cannotRunHere('plugin "cpu"', this.unavailable());
    const set = await ModelSet.open(request.files);
    let graph: Uint8Array;
    const stored = new Map<string, Tensor>();
    let inputs: TensorSpec[];
    let outputs: TensorSpec[];
    try {
      const model = set.model(request.executable);
      if (model.metadata === undefined) throw new PopefError(ErrorCode.InvalidInput, `executable "${model.name}" has no metadata`, {});
      const reference = request.options.reference;
      if (reference !== undefined) {
        graph = await readRegularFile(reference, { what: 'the reference ONNX graph', limit: FILE_LIMITS.graph });
      } else {
        const blob = sourceGraphBlob(model.opaques);
        if (blob === undefined) {
          throw new PopefError(
            ErrorCode.InvalidInput,
            `the model has no ONNX graph: no --reference was given and executable "${model.name}" has no opaque blob named "onnx"`,
            {
              suggestion: 'give the source graph with --reference model.onnx, or pack it into the model as an opaque blob named "onnx"',
            },
          );
        }
        graph = await set.fileOf(blob).readPayload(blob);
      }
      for (const t of set.tensors)
        stored.set(t.name, { name: t.name, dtype: t.tensorInfo.dtype, shape: t.tensorInfo.shape, data: await set.fileOf(t).readPayload(t) });
      ({ inputs, outputs } = userTensorSpecs(model.metadata, set.storedTensorNames));
    } finally {
      await set.close();
    }
    let session: OrtSession;
    try {
      session = await ort.InferenceSession.create(graph, sessionOptions(request.options.threads));
    } catch (error) {
      throw new PopefError(ErrorCode.Plugin, `onnxruntime cannot load the ONNX graph: ${(error as Error).message}`, {
        suggestion: 'check the --reference file, or the "onnx" opaque blob',
      });
    }
    this.sessions.push(session);
    const graphName = (anchor: string): string => request.options[`map.${anchor}`] ?? anchor;
    const graphInputs = new Set(session.inputNames);
    const graphOutputs = new Set(session.outputNames);
    const missing = [
      ...inputs.map((s) => graphName(s.name)).filter((n) => !graphInputs.has(n)),
      ...outputs.map((s) => graphName(s.name)).filter((n) => !graphOutputs.has(n)),
    ];
    if (missing.length > 0) {
      throw new PopefError(
        ErrorCode.InvalidInput,
        `the ONNX graph does not match the anchors: no graph tensor named ${missing.map((m) => `"${m}"`).join(', ')} (graph inputs: ${session.inputNames.join(', ')}; outputs: ${session.outputNames.join(', ')})`,
        { suggestion: 'map anchors to graph names with --reference-map ANCHOR=NAME, or give the right --reference' },
      );
    }
    const fed = new Set(inputs.map((s) => graphName(s.name)));
    const fromData = session.inputNames.filter((n) => !fed.has(n));
    const unfed = fromData.filter((n) => !stored.has(n));
    if (unfed.length > 0) {
      throw new PopefError(
        ErrorCode.InvalidInput,
        `the ONNX graph needs inputs that are neither user inputs nor tensor data of the model: ${unfed.join(', ')}`,
        {
          suggestion: 'the graph does not match the PopEF model',
        },
      );
    }
    // The weights fed from the model's tensor data: the same for every run, made into onnxruntime tensors once.
    const weights: Record<string, OrtTensor> = {};
    for (const name of fromData) {
      const t = stored.get(name);
      if (t !== undefined) weights[name] = toOrt(ort, t, name);
    }
    return {
      inputs,
      outputs,
      // onnxruntime-node runs each graph synchronously on the event loop's thread (after a setImmediate):
      // outstanding runs still execute one at a time, and taking several lets one loop turn finish them all.
      maxOutstandingRuns: 64,
      run: async (values) => {
        const feeds: Record<string, OrtTensor> = { ...weights };
        for (const spec of inputs) {
          const t = values.get(spec.name);
          if (t === undefined) throw new PopefError(ErrorCode.InvalidInput, `input "${spec.name}" is missing`, {});
          feeds[graphName(spec.name)] = toOrt(ort, t, spec.name);
        }
        let result: Record<string, OrtTensor | undefined>;
        try {
          result = await session.run(feeds);
        } catch (error) {
          throw new PopefError(ErrorCode.Plugin, `onnxruntime failed to run the graph: ${(error as Error).message}`, {});
        }
        const out = new Map<string, Tensor>();
        for (const spec of outputs) {
          const o = result[graphName(spec.name)];
          if (o === undefined) throw new PopefError(ErrorCode.Plugin, `onnxruntime returned no "${graphName(spec.name)}"`, {});
          out.set(spec.name, fromOrt(o, spec));
        }
        return out;
      },
      close: async () => {
        await session.release();
        this.sessions = this.sessions.filter((s) => s !== session);
      },
    };
  }

  async dispose(): Promise<void> {
    await Promise.all(this.sessions.map((s) => s.release()));
    this.sessions = [];
  }
}
