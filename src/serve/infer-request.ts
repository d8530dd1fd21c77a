import type { Tensor } from '../run/plugin-api.js';
import type { Cancellation } from './cancellation.js';
import { elementCount, toNumbers } from '../run/tensor.js';
import { isProtocolDataType, popefFromProtocol, protocolElementBytes, type ProtocolDataType } from '../triton/protocol-datatypes.js';
import type { ServedTensor } from './served-model.js';
import type { RegionSlice } from './shared-memory.js';
import { RequestError, invalidArg } from './status.js';
import { stdSort } from './std-sort.js';

/**
 * Triton's request semantics, shared by both transports: an inference
 * request in transport-neutral form, checked the way Triton core checks it
 * (InferenceRequest::Normalize and ValidateRequestInputs, core r24.10,
 * src/infer_request.cc), in Triton's order and with Triton's messages, then
 * turned into plugin tensors; and the response, with Triton's
 * classification (server r24.10, src/classification.cc).
 */

export interface RequestInput {
  readonly name: string;
  /** The name Triton's messages use, when not the name (the raw input of a raw binary request). */
  readonly label?: string;
  /** As the client sent it: an unknown spelling is kept, to be refused with Triton's message. */
  readonly datatype: string;
  readonly shape: readonly number[];
  /**
   * The shape exactly, when a dimension is past 2^53 (gRPC's shape is int64):
   * for Triton's messages and its uint32 batch size, which a number would round.
   */
  readonly exactShape?: readonly bigint[];
  /** The tensor's bytes, little-endian, row-major, as the transport assembled them. */
  readonly data: Uint8Array;
}

export interface RequestedOutput {
  readonly name: string;
  /** Top-k classification instead of the tensor (0: the tensor itself). */
  readonly classCount: number;
  /** HTTP only: the client asked for binary data for this output. */
  readonly binary?: boolean;
  /** The shared-memory slice the output is written to instead of the response. */
  readonly region?: RegionSlice;
}

export interface InferRequest {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly inputs: readonly RequestInput[];
  /** Empty: every output of the model, as Triton does. */
  readonly outputs: readonly RequestedOutput[];
  /** A raw binary request (HTTP, header length 0): these bytes are the data of the model's one input. */
  readonly raw?: Uint8Array;
  /** The `priority` parameter: the dynamic batcher's priority level (0: the model's default). */
  readonly priority?: number;
  /** The `timeout` parameter, in microseconds: how long it may wait in the queue, where the queue policy allows it. */
  readonly timeoutUs?: number;
  /** Aborted when the client has gone (the gRPC call was cancelled or passed its deadline, the HTTP connection closed). */
  readonly signal?: Cancellation;
  /** The `sequence_id`, `sequence_start` and `sequence_end` parameters, when any was given. */
  readonly sequence?: SequenceParameters;
}

/**
 * A request's place in a sequence (the `sequence` extension). The id is a
 * uint64 or a string, as Triton's SequenceId is; 0 and '' mean no id.
 * Models without sequence_batching ignore all three, as Triton does.
 */
export interface SequenceParameters {
  readonly id: bigint | string;
  readonly start: boolean;
  readonly end: boolean;
}

/** A request's sequence parameters before any is read: no id, neither flag (what each parameter left out stays). */
export const NO_SEQUENCE: SequenceParameters = { id: 0n, start: false, end: false };

export interface ResponseOutput {
  readonly name: string;
  readonly datatype: ProtocolDataType;
  readonly shape: readonly number[];
  readonly data: Uint8Array;
  readonly binary?: boolean;
  /** Set when the data went to this shared-memory slice (and is not sent in the response). */
  readonly region?: RegionSlice;
}

/** What the model needs to know to check a request (from its normalised config). */
export interface RequestContract {
  readonly name: string;
  readonly maxBatchSize: number;
  readonly inputs: readonly ServedTensor[];
  readonly outputs: readonly ServedTensor[];
}

/** Triton's DimsListToString: "[1,28,28]". */
export function dimsToString(dims: readonly (number | bigint)[]): string {
  return `[${dims.join(',')}]`;
}

/** An input's shape as the client sent it, exactly. */
function sentShape(input: RequestInput): readonly (number | bigint)[] {
  return input.exactShape ?? input.shape;
}

/**
 * Triton keeps the batch size in a uint32 (InferenceRequest::Normalize): the
 * int64 first dimension is cut to its low 32 bits, so -2^63 is 0, -2^63 + 1
 * is 1 and 2^63 - 1 is 4294967295. Exact, where a number past 2^53 is not.
 */
function batchOf(input: RequestInput): number {
  const exact = input.exactShape?.[0];
  return exact === undefined ? (input.shape[0] ?? 0) >>> 0 : Number(BigInt.asUintN(32, exact));
}

/** Whether the input's first dimension is the batch size (an int64 compared with a uint32, as in C++). */
function sameBatch(input: RequestInput, batch: number): boolean {
  const exact = input.exactShape?.[0];
  return exact === undefined ? input.shape[0] === batch : exact === BigInt(batch);
}

/** Triton's LogRequest(): the prefix of its request messages. */
export function logRequest(request: Pick<InferRequest, 'id'>): string {
  return `[request id: ${request.id === '' ? '<id_unknown>' : request.id}] `;
}

/** The name Triton gives the one input of a raw binary request. */
const RAW_INPUT = 'raw_input';

/**
 * A raw binary request as Triton core deduces it (the raw-input part of
 * Normalize): the model has one input, whose config dims (behind a batch
 * of 1) give the shape; one variable dimension is sized from the bytes.
 */
function rawRequest(model: RequestContract, request: InferRequest, raw: Uint8Array, prefix: string): InferRequest {
  const config = model.inputs[0];
  if (model.inputs.length !== 1 || config === undefined) {
    throw invalidArg(
      `${prefix}Raw request must only have 1 input (found 1) to be deduced but got ${model.inputs.length} inputs in '${model.name}' model configuration`,
    );
  }
  const shape: number[] = model.maxBatchSize !== 0 ? [1] : [];
  let dynamic = -1;
  let elements = 1;
  for (const d of config.dims) {
    if (d === -1) {
      if (dynamic !== -1)
        throw invalidArg(
          `${prefix}The shape of the raw input '${config.name}' can not be deduced because there are more than one variable-sized dimension`,
        );
      dynamic = shape.length;
    } else elements *= d;
    shape.push(d);
  }
  if (dynamic !== -1) shape[dynamic] = Math.floor(raw.byteLength / elements / Math.max(1, protocolElementBytes(config.datatype)));
  return { ...request, inputs: [{ name: config.name, label: RAW_INPUT, datatype: config.datatype, shape, data: raw }], raw: undefined };
}

/**
 * A request ready for the scheduler: tensors by anchor name, each of
 * `batch` rows (the scheduler joins and pads them to what the plugin
 * takes), or with the anchor's own shape when the model has no batch
 * dimension.
 */
export interface NormalizedRequest {
  readonly batch: number;
  readonly tensors: Map<string, Tensor>;
  readonly outputs: readonly RequestedOutput[];
}

function protocolName(datatype: string): string {
  // TRITONSERVER_StringToDataType gives TYPE_INVALID for a spelling it does not know; it prints as "<invalid>".
  return isProtocolDataType(datatype) ? datatype : '<invalid>';
}

/**
 * Triton core's ValidateRequestInputs: the number of inputs, between the
 * required ones and all of them (the exact-count message when no input is
 * optional). Then, unlike Triton (whose backend sees the request without
 * it), an absent optional input is refused: a Poplar executable has a
 * tensor for every input and cannot run without its data.
 */
function validateRequestInputs(model: RequestContract, request: InferRequest, seen: ReadonlySet<string>, prefix: string): void {
  const total = model.inputs.length;
  const required = lookupsOf(model).required;
  const count = request.inputs.length;
  if (count > total || count < required) {
    // Triton builds both lists by appending "'name'," after "[" and dropping the last character: with
    // nothing missing, the "[" itself goes ("missing required input(s) ]"). It lists the given inputs in
    // the order of its unordered_map, which for a few names is the reverse of their arrival.
    const missing = model.inputs.filter((t) => t.optional !== true && !seen.has(t.name)).map((t) => `'${t.name}'`);
    const given = [...new Set(request.inputs.map((t) => `'${t.name}'`))].reverse();
    const missingText = missing.length === 0 ? ']' : `[${missing.join(',')}]`;
    const expected = total === required ? `expected ${total} inputs` : `expected number of inputs between ${required} and ${total}`;
    throw invalidArg(
      `${prefix}${expected} but got ${count} inputs for model '${model.name}'. ` +
        `Got input(s) [${given.join(',')}], but missing required input(s) ${missingText}. Please provide all required input(s).`,
    );
  }
  const absent = model.inputs.find((t) => !seen.has(t.name));
  if (absent !== undefined && request.inputs.every((t) => model.inputs.some((c) => c.name === t.name)))
    throw invalidArg(
      `${prefix}input '${absent.name}' of model '${model.name}' was not given: ${absent.optional === true ? 'it is optional in the config, but ' : ''}` +
        'a Poplar executable takes every input, so the request must give it',
    );
}

/** What every request's checks look up in the model's tensors, made once per model. */
interface ContractLookups {
  readonly inputByName: ReadonlyMap<string, ServedTensor>;
  readonly outputNames: ReadonlySet<string>;
  /** The inputs not marked optional. */
  readonly required: number;
}

/** A model's tensors do not change while it is served (a reload makes a new one): keyed on the contract itself. */
const lookups = new WeakMap<RequestContract, ContractLookups>();

function lookupsOf(model: RequestContract): ContractLookups {
  let found = lookups.get(model);
  if (found === undefined) {
    found = {
      inputByName: new Map(model.inputs.map((t) => [t.name, t])),
      outputNames: new Set(model.outputs.map((t) => t.name)),
      required: model.inputs.filter((t) => t.optional !== true).length,
    };
    lookups.set(model, found);
  }
  return found;
}

/**
 * Checks a request against the model, as Triton core does before a backend
 * sees it, and returns the plugin's input tensors. When the model batches
 * and the request brings fewer rows than the PopEF anchors hold, the rows
 * are padded with zeros (and the outputs cut back in `respond`): a PopEF
 * executable has fixed shapes.
 */
export function normalizeRequest(model: RequestContract, given: InferRequest): NormalizedRequest {
  const prefix = logRequest(given);
  const request = given.raw === undefined ? given : rawRequest(model, given, given.raw, prefix);
  const { inputByName, outputNames } = lookupsOf(model);
  const seen = new Set<string>();
  for (const input of request.inputs) {
    if (seen.has(input.name)) throw invalidArg(`${prefix}input '${input.name}' already exists in request`);
    seen.add(input.name);
  }
  for (const output of request.outputs) {
    if (!outputNames.has(output.name)) throw invalidArg(`unexpected inference output '${output.name}' for model '${model.name}'`);
  }
  validateRequestInputs(model, request, seen, prefix);
  let batch = 0;
  const shapes = new Map<string, readonly number[]>();
  for (const input of request.inputs) {
    if (!inputByName.has(input.name)) throw invalidArg(`unexpected inference input '${input.name}' for model '${model.name}'`);
    if (model.maxBatchSize === 0) {
      shapes.set(input.name, input.shape);
      continue;
    }
    const first = input.shape[0];
    if (first === undefined) throw invalidArg(`${prefix}input '${input.name}' has no shape but model requires batch dimension for '${model.name}'`);
    // A first dimension past uint32 wraps around (batchOf); a batch that is negative as an int passes the
    // max_batch_size check and is refused by the byte-size check with the wrapped size.
    if (batch === 0) batch = batchOf(input);
    else if (!sameBatch(input, batch)) throw invalidArg(`${prefix}input '${input.name}' batch size does not match other inputs for '${model.name}'`);
    shapes.set(input.name, input.shape.slice(1));
  }
  if ((batch | 0) > model.maxBatchSize)
    throw invalidArg(`${prefix}inference request batch-size must be <= ${model.maxBatchSize} for '${model.name}'`);

  const tensors = new Map<string, Tensor>();
  for (const input of request.inputs) {
    const config = inputByName.get(input.name);
    if (config === undefined) continue;
    if (input.datatype !== config.datatype) {
      throw invalidArg(
        `${prefix}inference input '${input.name}' data-type is '${protocolName(input.datatype)}', but model '${model.name}' expects '${config.datatype}'`,
      );
    }
    const shape = shapes.get(input.name) ?? [];
    let matches = shape.length === config.dims.length;
    if (matches) {
      for (let i = 0; i < shape.length; i++) {
        if (shape[i] === -1)
          throw invalidArg(
            `${prefix}All input dimensions should be specified for input '${input.name}' for model '${model.name}', got ${dimsToString(sentShape(input))}`,
          );
        if (config.dims[i] !== -1 && config.dims[i] !== shape[i]) {
          matches = false;
          break;
        }
      }
    }
    if (!matches) {
      const full = model.maxBatchSize > 0 ? [-1, ...config.dims] : [...config.dims];
      const note =
        model.maxBatchSize > 0
          ? 'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. ' +
            'If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. ' +
            'See the model configuration docs for more info on max_batch_size.'
          : '';
      throw invalidArg(
        `${prefix}unexpected shape for input '${input.name}' for model '${model.name}'. Expected ${dimsToString(full)}, got ${dimsToString(sentShape(input))}. ${note}`,
      );
    }
    // ShapeWithBatchDim: a batch of 0 adds no dimension, so such a request is sized as one row.
    const withBatch = model.maxBatchSize > 0 && batch !== 0 ? [batch, ...shape] : shape;
    const expectedBytes = elementCount(withBatch) * protocolElementBytes(config.datatype);
    if (input.data.byteLength !== expectedBytes) {
      throw invalidArg(
        `${prefix}input byte size mismatch for input '${input.label ?? input.name}' for model '${model.name}'. Expected ${expectedBytes}, got ${input.data.byteLength}`,
      );
    }
    tensors.set(config.anchor, toAnchorTensor(config, input.data, batch, model.maxBatchSize));
  }
  // Triton hands a batch of 0 (with one row's bytes) to the backend, which has no rows to run; a PopEF
  // executable cannot run it either, so it is refused here, before any plugin sees it.
  if (model.maxBatchSize > 0 && batch <= 0) throw invalidArg(`${prefix}inference request batch-size must be >= 1 for '${model.name}'`);
  return { batch, tensors, outputs: request.outputs };
}

function toAnchorTensor(config: ServedTensor, data: Uint8Array, batch: number, maxBatchSize: number): Tensor {
  const dtype = popefFromProtocol(config.datatype);
  if (dtype === undefined)
    throw new RequestError('UNSUPPORTED', `input '${config.name}' of datatype ${config.datatype} cannot be passed to an execution plugin`);
  if (maxBatchSize === 0) return { name: config.anchor, dtype, shape: config.anchorShape, data };
  return { name: config.anchor, dtype, shape: [batch, ...config.anchorShape.slice(1)], data };
}

/** Formats like C++ std::to_string of a float or double ("%f"). */
function cppToString(value: number): string {
  if (Number.isNaN(value)) return value < 0 ? '-nan' : 'nan';
  if (!Number.isFinite(value)) return value < 0 ? '-inf' : 'inf';
  return value.toFixed(6);
}

/** Elements (UTF-8 text or bytes) prefixed by their 4-byte little-endian length: Triton's serialisation of BYTES tensors. */
export function serializeBytes(elements: readonly (string | Uint8Array)[]): Uint8Array {
  const encoded = elements.map((s) => (typeof s === 'string' ? Buffer.from(s, 'utf8') : Buffer.from(s.buffer, s.byteOffset, s.byteLength)));
  const out = Buffer.alloc(encoded.reduce((n, b) => n + 4 + b.byteLength, 0));
  let at = 0;
  for (const b of encoded) {
    out.writeUInt32LE(b.byteLength, at);
    b.copy(out, at + 4);
    at += 4 + b.byteLength;
  }
  return out;
}

/** Splits a serialised BYTES tensor; undefined when the lengths do not add up. */
export function deserializeBytes(data: Uint8Array): Buffer[] | undefined {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out: Buffer[] = [];
  let at = 0;
  while (at < buffer.byteLength) {
    if (at + 4 > buffer.byteLength) return undefined;
    const n = buffer.readUInt32LE(at);
    if (at + 4 + n > buffer.byteLength) return undefined;
    out.push(buffer.subarray(at + 4, at + 4 + n));
    at += 4 + n;
  }
  return out;
}

function classify(values: Float64Array, rows: number, k: number, labels: readonly string[] | undefined): string[] {
  const perRow = rows === 0 ? values.length : values.length / rows;
  const out: string[] = [];
  for (let r = 0; r < Math.max(1, rows); r++) {
    const base = r * perRow;
    const order = Array.from({ length: perRow }, (_, i) => i);
    // Triton sorts with std::sort and `probs[a] > probs[b]`: neither stable nor a strict order once a NaN is in it, so its exact algorithm decides.
    stdSort(order, (a, b) => (values[base + a] ?? 0) > (values[base + b] ?? 0));
    for (const i of order.slice(0, Math.min(k, perRow))) {
      const label = labels?.[i];
      out.push(`${cppToString(values[base + i] ?? 0)}:${i}${label === undefined ? '' : `:${label}`}`);
    }
  }
  return out;
}

/**
 * The response outputs, in the model's output order: every output when none
 * was requested, else the requested ones. The results hold this request's
 * rows only (the scheduler cut its slice of the batch).
 */
export function respond(model: RequestContract, normalized: NormalizedRequest, results: ReadonlyMap<string, Tensor>): ResponseOutput[] {
  // Most requests name one output or none: no Map for none.
  const requested = normalized.outputs.length === 0 ? undefined : new Map(normalized.outputs.map((o) => [o.name, o]));
  const out: ResponseOutput[] = [];
  for (const config of model.outputs) {
    const wanted = requested?.get(config.name);
    if (normalized.outputs.length > 0 && wanted === undefined) continue;
    const tensor = results.get(config.anchor);
    if (tensor === undefined)
      throw new RequestError('INTERNAL', `the execution plugin returned no output '${config.anchor}' for output '${config.name}'`);
    const rows = model.maxBatchSize > 0 ? normalized.batch : 0;
    const data = tensor.data;
    const shape = rows > 0 ? [rows, ...tensor.shape.slice(1)] : [...tensor.shape];
    const classCount = wanted?.classCount ?? 0;
    if (classCount > 0) {
      const values = toNumbers({ dtype: tensor.dtype, shape: [elementCount(shape)], data });
      const classes = classify(values, rows, classCount, config.labels);
      const perRow = rows === 0 ? values.length : values.length / rows;
      out.push({
        name: config.name,
        datatype: 'BYTES',
        shape: rows > 0 ? [rows, Math.min(classCount, perRow)] : [Math.min(classCount, perRow)],
        data: serializeBytes(classes),
        binary: wanted?.binary,
      });
      continue;
    }
    out.push({ name: config.name, datatype: config.datatype, shape, data, binary: wanted?.binary, region: wanted?.region });
  }
  return out;
}
