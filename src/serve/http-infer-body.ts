import { SharedMemoryRegistry, type RegionSlice } from './shared-memory.js';
import { NO_SEQUENCE, type InferRequest, type RequestInput, type RequestedOutput, type SequenceParameters } from './infer-request.js';
import type { InferResult } from './inference-server.js';
import { jsonAccess, readJsonData, writeJsonData } from './json-tensors.js';
import { RequestError, invalidArg } from './status.js';
import {
  JSON_SLICE_BYTES,
  JsonSyntaxError,
  isJsonNumber,
  isJsonUInt,
  parseTritonJson,
  parseTritonJsonSliced,
  writeTritonJson,
} from './triton-json.js';

/**
 * The JSON bodies of Triton's HTTP inference endpoint, both ways: an infer
 * request's header (and its binary sections) as an InferRequest, read with
 * the checks and messages of Triton's HTTP frontend (server r24.10,
 * http_server.cc, HTTPAPIServer::HandleInfer and its EVBufferToInput), and an
 * InferResult as the response body. Pure: no sockets, table-tested in
 * test/serve/http-infer-body.test.ts.
 */

export type JsonObject = Record<string, unknown>;

/**
 * A request body's JSON, as TritonJson's Parse reads it (triton-json.ts:
 * RapidJSON's grammar with NaN and Infinity, its messages and offsets;
 * INTERNAL), a root that is not an object parsing as an object with no
 * members. Bodies past JSON_SLICE_BYTES are parsed a slice at a time, so
 * that the event loop goes on serving the other requests meanwhile.
 */
export function parseJson(bytes: Uint8Array): JsonObject {
  return asObject(parseJsonValue(bytes)) ?? {};
}

/** A body as TritonJson parses it, of any JSON type (generate's root may be anything). */
export function parseJsonValue(bytes: Uint8Array): unknown {
  return withTritonMessage(() => parseTritonJson(bytes));
}

/** parseJson, a slice at a time for a large body. */
export async function parseJsonSliced(bytes: Uint8Array): Promise<JsonObject> {
  if (bytes.byteLength <= JSON_SLICE_BYTES) return parseJson(bytes);
  let value: unknown;
  try {
    value = await parseTritonJsonSliced(bytes);
  } catch (error) {
    throw tritonParseError(error);
  }
  return asObject(value) ?? {};
}

function withTritonMessage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw tritonParseError(error);
  }
}

function tritonParseError(error: unknown): unknown {
  return error instanceof JsonSyntaxError ? new RequestError('INTERNAL', `failed to parse the request JSON buffer: ${error.message}`) : error;
}

export function member(obj: JsonObject, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

function asObject(value: unknown): JsonObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

/** A member Triton reads with MemberAsX, wrapped as RETURN_MSG_IF_ERR does ("Unable to parse 'key': ..."). */
function missingOr(key: string, what: string, value: unknown): RequestError {
  const reason = value === undefined ? `attempt to access non-existing object member '${key}'` : `attempt to access JSON non-${what} as ${what}`;
  return new RequestError('INTERNAL', `Unable to parse '${key}': ${reason}`);
}

function requireString(obj: JsonObject, key: string): string {
  const v = member(obj, key);
  if (typeof v !== 'string') throw missingOr(key, 'string', v);
  return v;
}

/**
 * The `inputs` and `outputs` of an infer request body, with binary sections
 * taken from `binary` in order; and whether outputs not listed go back as
 * binary data (the request's binary_data_output).
 */
/** What Triton reads each known parameter as (MemberAsX), with the words of its message. */
const PARAMETER_KINDS: Readonly<Record<string, readonly [(v: unknown) => boolean, string]>> = {
  sequence_id: [(v) => isJsonUInt(v) || typeof v === 'string', 'string'],
  sequence_start: [(v) => typeof v === 'boolean', 'boolean'],
  sequence_end: [(v) => typeof v === 'boolean', 'boolean'],
  priority: [isJsonUInt, 'unsigned-integer'],
  timeout: [isJsonUInt, 'unsigned-integer'],
  binary_data_output: [(v) => typeof v === 'boolean', 'boolean'],
};

/**
 * The request's `parameters`, checked as ParseJsonTritonParams checks them
 * (http_server.cc): known keys by type, `triton_` keys refused, any other
 * key passed on if it is a string, a number or a boolean. Returns
 * binary_data_output and the scheduling parameters, when given.
 */
function requestParameters(parameters: unknown): HeaderParameters {
  if (parameters === undefined) return {};
  const object = asObject(parameters);
  if (object === undefined) throw new RequestError('INTERNAL', 'failed to get request params.: attempt to get members for non-object');
  const out: HeaderParameters = {};
  for (const [key, value] of Object.entries(object)) {
    const known = PARAMETER_KINDS[key];
    if (known !== undefined) {
      const [accepts, what] = known;
      if (!accepts(value)) throw new RequestError('INTERNAL', `Unable to parse '${key}': attempt to access JSON non-${what} as ${what}`);
      if (key === 'binary_data_output') out.binaryOutputs = value as boolean;
      // Past 2^53 a priority is above any level (the default level, as in Triton) and a timeout is past any wait, rounded or not.
      else if (key === 'priority') out.priority = Number(value);
      else if (key === 'timeout') out.timeoutUs = Number(value);
      else {
        const sequence = out.sequence ?? NO_SEQUENCE;
        // A uint64 id stays exact (the parser gives a bigint past 2^53), so that ids 2^53 and 2^53 + 1 are two sequences.
        if (key === 'sequence_id') out.sequence = { ...sequence, id: typeof value === 'string' ? value : BigInt(value as number | bigint) };
        else if (key === 'sequence_start') out.sequence = { ...sequence, start: value as boolean };
        else out.sequence = { ...sequence, end: value as boolean };
      }
    } else if (key.startsWith('triton_')) {
      throw invalidArg("parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.");
    } else if (typeof value !== 'string' && typeof value !== 'boolean' && !isJsonNumber(value)) {
      throw invalidArg(`parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'.`);
    }
  }
  return out;
}

/** What the request's parameters ask of the server. */
interface HeaderParameters {
  binaryOutputs?: boolean;
  priority?: number;
  timeoutUs?: number;
  sequence?: SequenceParameters;
}

/** A tensor's shared-memory parameters (CheckSharedMemoryData): undefined when it names no region. */
function sharedMemoryData(params: JsonObject | undefined): RegionSlice | undefined {
  if (params === undefined || member(params, 'shared_memory_region') === undefined) return undefined;
  const region = member(params, 'shared_memory_region');
  if (typeof region !== 'string') throw jsonAccess("Unable to parse 'shared_memory_region': attempt to access JSON non-string as string");
  const uint = (key: string): number => {
    const v = member(params, key);
    if (v === undefined) return 0;
    if (!isJsonUInt(v)) throw jsonAccess(`Unable to parse '${key}': attempt to access JSON non-unsigned-integer as unsigned-integer`);
    // Past 2^53 no region is that large: rounding cannot turn a bad slice into a good one.
    return Number(v);
  };
  return { region, offset: uint('shared_memory_offset'), byteSize: uint('shared_memory_byte_size') };
}

export function parseInferBody(
  model: string,
  version: string,
  header: JsonObject,
  binary: Buffer,
  hasHeaderLength: boolean,
  sharedMemory: SharedMemoryRegistry = new SharedMemoryRegistry(),
): { request: InferRequest; binaryOutputs: boolean } {
  const id = member(header, 'id');
  if (id !== undefined && typeof id !== 'string') throw missingOr('id', 'string', id);
  const { binaryOutputs, ...scheduling } = requestParameters(member(header, 'parameters'));
  const inputsJson = member(header, 'inputs');
  if (!Array.isArray(inputsJson)) throw missingOr('inputs', 'array', inputsJson);
  let offset = 0;
  const inputs: RequestInput[] = [];
  for (const raw of inputsJson) {
    // Triton looks members up in a non-object as in an object with none: it then has no data.
    const input = asObject(raw) ?? {};
    const params = asObject(member(input, 'parameters'));
    const hasData = member(input, 'data') !== undefined;
    const hasBinary = params !== undefined && member(params, 'binary_data_size') !== undefined;
    const hasShm = params !== undefined && member(params, 'shared_memory_region') !== undefined;
    const set = Number(hasData) + Number(hasBinary) + Number(hasShm);
    if (set !== 1) {
      const which = [hasData ? " 'data'" : '', hasBinary ? " 'binary_data_size'" : '', hasShm ? " 'shared_memory_region'" : ''].join('');
      throw invalidArg(
        `Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But${set === 0 ? ' no field is set' : ` set${which}`}`,
      );
    }
    const name = requireString(input, 'name');
    const datatype = requireString(input, 'datatype');
    const shapeJson = member(input, 'shape');
    if (!Array.isArray(shapeJson)) throw missingOr('shape', 'array', shapeJson);
    const dims = shapeJson.map((d: unknown) => {
      if (!isJsonUInt(d)) throw jsonAccess("Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer");
      return d;
    });
    const wide = dims.some((d) => typeof d === 'bigint');
    // Triton reads each dimension as a uint64 and keeps it in an int64 (2^64 - 1 is -1); past 2^53 the exact shape goes along for its messages.
    const exactShape = wide ? dims.map((d) => BigInt.asIntN(64, BigInt(d))) : undefined;
    const shape = exactShape === undefined ? (dims as number[]) : exactShape.map(Number);
    let data: Uint8Array;
    const slice = sharedMemoryData(params);
    if (slice !== undefined) data = sharedMemory.read(slice);
    else if (hasBinary) {
      const sizeJson = member(params, 'binary_data_size');
      if (!isJsonUInt(sizeJson))
        throw jsonAccess("Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer");
      // Past 2^53 no body holds that many bytes; the size is only compared with the body's.
      const size = Number(sizeJson);
      if (size > 0 && !hasHeaderLength) {
        throw invalidArg(
          "must specify valid 'Infer-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format",
        );
      }
      if (offset + size > binary.byteLength) {
        throw invalidArg(`unexpected size for input '${name}', expecting ${offset + size - binary.byteLength} additional bytes for model '${model}'`);
      }
      data = binary.subarray(offset, offset + size);
      offset += size;
    } else {
      const count = shape.reduce((p, d) => p * d, 1);
      data = count === 0 ? new Uint8Array(0) : readJsonData(name, datatype, shape, member(input, 'data'));
    }
    inputs.push({ name, datatype, shape, ...(exactShape === undefined ? {} : { exactShape }), data });
  }
  if (offset !== binary.byteLength) throw invalidArg(`unexpected additional input data for model '${model}'`);
  const outputs: RequestedOutput[] = [];
  const outputsJson = member(header, 'outputs');
  if (outputsJson !== undefined) {
    if (!Array.isArray(outputsJson)) throw missingOr('outputs', 'array', outputsJson);
    for (const raw of outputsJson) {
      const output = asObject(raw);
      if (output === undefined) throw jsonAccess('attempt to access JSON non-object as object');
      const params = asObject(member(output, 'parameters')) ?? {};
      const cls = member(params, 'classification');
      const bin = member(params, 'binary_data');
      // ValidateOutputParameter comes before the name is read.
      if (member(params, 'shared_memory_region') !== undefined) {
        if (cls !== undefined) throw invalidArg("Output can't set both 'shared_memory_region' and 'classification'");
        if (bin !== undefined && typeof bin !== 'boolean')
          throw jsonAccess("Unable to set 'binary_data': attempt to access JSON non-boolean as boolean");
        if (bin === true) throw invalidArg("Output can't set both 'shared_memory_region' and 'binary_data'");
      }
      const name = requireString(output, 'name');
      if (cls !== undefined && !isJsonUInt(cls))
        throw jsonAccess("Unable to parse 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer");
      if (bin !== undefined && typeof bin !== 'boolean')
        throw jsonAccess("Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean");
      const region = sharedMemoryData(params);
      if (region !== undefined) sharedMemory.check(region);
      outputs.push({
        name,
        classCount: cls === undefined ? 0 : Number(cls),
        binary: typeof bin === 'boolean' ? bin : binaryOutputs,
        ...(region === undefined ? {} : { region }),
      });
    }
  }
  return {
    request: { modelName: model, modelVersion: version, id: typeof id === 'string' ? id : '', inputs, outputs, ...scheduling },
    binaryOutputs: binaryOutputs ?? false,
  };
}

/** The response body: JSON, then the binary outputs in order (Triton's layout). */
export function inferResponse(result: InferResult, defaultBinary: boolean): { json: Buffer; binary: Buffer[] } {
  const binary: Buffer[] = [];
  const outputs = result.outputs.map((o) => {
    const asBinary = o.binary ?? defaultBinary;
    const base = { name: o.name, datatype: o.datatype, shape: o.shape };
    // An output written to shared memory is described, not sent.
    if (o.region !== undefined) return base;
    if (asBinary) {
      binary.push(Buffer.from(o.data.buffer, o.data.byteOffset, o.data.byteLength));
      return { ...base, parameters: { binary_data_size: o.data.byteLength } };
    }
    return { ...base, data: writeJsonData(o.datatype, o.data) };
  });
  const body: JsonObject = {};
  if (result.id !== '') body.id = result.id;
  body.model_name = result.modelName;
  body.model_version = result.modelVersion;
  body.outputs = outputs;
  return { json: Buffer.from(writeTritonJson(body)), binary };
}

/**
 * A whole infer body as an InferRequest: `headerLength` is the request's
 * Inference-Header-Content-Length header (undefined when absent), which
 * splits the body into the JSON header and the binary sections. A length of
 * 0 makes the whole body the data of the model's one input (Triton's raw
 * binary request), answered in binary. `contentLength` is the request's
 * Content-Length header when the body was not compressed: Triton
 * (GetContentLength) takes the lengths from it, not from the body, which
 * matters only for a chunked body that also carries one.
 */
export async function fromInferBody(
  model: string,
  version: string,
  body: Buffer,
  headerLength: string | undefined,
  sharedMemory: SharedMemoryRegistry = new SharedMemoryRegistry(),
  contentLength?: string,
): Promise<{ request: InferRequest; binaryOutputs: boolean }> {
  const total = contentLength === undefined ? body.byteLength : atoi(contentLength);
  let jsonLength = total;
  if (headerLength !== undefined) {
    const parsed = atoi(headerLength);
    if (parsed < 0 || parsed > total) throw invalidArg(`inference header size should be in range (0, ${total}), got: ${headerLength}`);
    jsonLength = parsed;
  }
  if (jsonLength === 0)
    return { request: { modelName: model, modelVersion: version, id: '', inputs: [], outputs: [], raw: body }, binaryOutputs: true };
  // EVBufferToJson: the JSON is the first jsonLength bytes of what arrived.
  if (jsonLength > body.byteLength) throw invalidArg(`unexpected size for request JSON, expecting ${jsonLength - body.byteLength} more bytes`);
  const header = await parseJsonSliced(body.subarray(0, jsonLength));
  return parseInferBody(model, version, header, body.subarray(jsonLength), headerLength !== undefined, sharedMemory);
}

/** C's atoi, which Triton uses for both length headers: the leading integer, 0 when there is none. */
function atoi(text: string): number {
  return Number(/^\s*[+-]?\d+/.exec(text)?.[0] ?? 0);
}
