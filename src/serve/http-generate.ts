import type { InferResult, TensorMetadata } from './inference-server.js';
import { logRequest, type InferRequest, type RequestInput } from './infer-request.js';
import { member, parseJsonValue, type JsonObject } from './http-infer-body.js';
import { jsonAccess, readJsonData, writeJsonData } from './json-tensors.js';
import { RequestError, invalidArg } from './status.js';
import { RawJson, isJsonNumber, writeTritonJson } from './triton-json.js';

/**
 * Triton's generate extension (POST /v2/models/M[/versions/V]/generate and
 * generate_stream), as its HTTP frontend maps a flat JSON object to a
 * request (server r24.10, http_server.cc HandleGenerate,
 * ConvertGenerateRequest, ExactMappingInput; docs/protocol/
 * extension_generate.md): a key that names a model input is that input's
 * data, a primitive or a 1-D array, shaped by the input's dims (fixed
 * dims first, the innermost -1 takes what is left, other -1 are 1); any
 * other key is a request parameter of type string, number or bool;
 * `parameters` is an object whose keys are mapped the same way. The answer
 * is one flat object: id (when given), model_name, model_version and each
 * output by name (a one-element output as a scalar), in the key order of
 * Triton's std::map.
 */

/** The keyword Triton's request schema nests (ConfigureGenerateMappingSchema). */
const NESTED = 'parameters';

/** ExactMappingInput's two-pass shape: the fixed dims take their share of the elements, the innermost -1 the rest. */
function shapeFor(name: string, dims: readonly number[], elements: number): number[] {
  const shape = [...dims];
  let left = elements;
  const refuse = (): RequestError => invalidArg(`The schema can not convert input '${name}' to tensor with proper shape`);
  for (let i = shape.length - 1; i >= 0; i--) {
    const d = shape[i] ?? 0;
    if (d === -1) continue;
    // A 0 dim divides nothing: Triton takes elements % 0 as "not a multiple" (the division would trap).
    if (d === 0 || left % d !== 0) throw refuse();
    left /= d;
  }
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] === -1) {
      shape[i] = left;
      left = 1;
    }
  }
  if (left !== 1) throw refuse();
  return shape;
}

/** A request parameter (SetTritonParameterFromJsonParameter): a string, a number of any kind (IsInt or IsNumber) or a bool; its value is not used here. */
function checkParameter(key: string, value: unknown): void {
  if (typeof value !== 'string' && typeof value !== 'boolean' && !isJsonNumber(value)) {
    throw invalidArg(`parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'.`);
  }
}

/** RETURN_MSG_IF_ERR: the error's class, the message prefixed. */
function prefixed(prefix: string, error: unknown): unknown {
  return error instanceof RequestError ? new RequestError(error.status, `${prefix}: ${error.message}`) : error;
}

/**
 * A generate body as an infer request for a model with these inputs, with
 * Triton's checks in Triton's order (the model's existence and the body's
 * encoding are checked before, by the caller).
 */
export function fromGenerateBody(model: string, version: string, inputs: readonly TensorMetadata[], body: Buffer): InferRequest {
  const root = parseJsonValue(body);
  const object = typeof root === 'object' && root !== null && !Array.isArray(root) ? (root as JsonObject) : undefined;
  const id = object === undefined ? undefined : member(object, 'id');
  if (id !== undefined && typeof id !== 'string') throw jsonAccess("Unable to parse 'id': attempt to access JSON non-string as string");
  if (object === undefined) throw jsonAccess('attempt to get members for non-object');
  const request = { id: id ?? '' };
  const byName = new Map(inputs.map((t) => [t.name, t]));
  const tensors: RequestInput[] = [];
  const exact = (key: string, value: unknown): void => {
    const input = byName.get(key);
    if (input === undefined) {
      checkParameter(key, value);
      return;
    }
    const elements = Array.isArray(value) ? value.length : 1;
    const shape = shapeFor(key, input.shape, elements);
    // ReadDataFromJson expects as many elements as the top level holds (or, for BYTES, their bytes).
    const data = readJsonData(key, input.datatype, [elements], value);
    if (tensors.some((t) => t.name === key)) throw invalidArg(`${logRequest(request)}input '${key}' already exists in request`);
    tensors.push({ name: key, datatype: input.datatype, shape, data });
  };
  for (const [key, value] of Object.entries(object)) {
    if (key !== NESTED) {
      exact(key, value);
      continue;
    }
    if (byName.has(NESTED)) throw invalidArg(`Keyword '${NESTED}' for nested schema also given as input tensor name`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw jsonAccess(`Expected JSON object for keyword: '${NESTED}': attempt to access JSON non-object as object`);
    }
    try {
      for (const [k, v] of Object.entries(value as JsonObject)) exact(k, v);
    } catch (error) {
      throw prefixed(`Converting keyword: '${NESTED}'`, error);
    }
  }
  return { modelName: model, modelVersion: version, id: request.id, inputs: tensors, outputs: [] };
}

/**
 * The answer's one object as JSON text, keys in byte order as Triton's
 * std::map<std::string, ...> holds them (written by hand: a JS object
 * would put integer-like keys first).
 */
export function generateResponse(result: InferResult): string {
  const fields = new Map<string, unknown>();
  if (result.id !== '') fields.set('id', result.id);
  fields.set('model_name', result.modelName);
  fields.set('model_version', result.modelVersion);
  for (const o of result.outputs) {
    fields.set(o.name, oneOrMany(writeJsonData(o.datatype, o.data)));
  }
  const keys = [...fields.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return `{${keys.map((k) => `${JSON.stringify(k)}:${writeTritonJson(fields.get(k))}`).join(',')}}`;
}

/** An output of one element is answered as that element, not as a list of one (numbers as Triton writes them: RawJson text). */
function oneOrMany(data: unknown[] | RawJson): unknown {
  if (!(data instanceof RawJson)) return data.length === 1 ? data[0] : data;
  return /^\[[^,]+\]$/.test(data.text) ? new RawJson(data.text.slice(1, -1)) : data;
}
