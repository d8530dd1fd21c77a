import type { InferenceServer } from './inference-server.js';
import { isJsonUInt } from './triton-json.js';
import { jsonAccess } from './json-tensors.js';
import { httpBadLogFormat, type LogUpdateReader } from './log-settings.js';
import { RequestError, invalidArg } from './status.js';
import type { TraceUpdateReader } from './trace-settings.js';

/**
 * The HTTP endpoints of shared memory, model control, log and trace
 * settings, as Triton's HTTPAPIServer answers them (server r24.10,
 * http_server.cc: HandleSystemSharedMemory, HandleCudaSharedMemory,
 * HandleRepositoryIndex, HandleRepositoryControl, HandleLogging,
 * HandleTrace): their paths, methods, body fields and messages.
 * Each handler gets the route's captures and a reader of the JSON body, and
 * returns the status and JSON to send (no JSON: an empty 200).
 */

type JsonObject = Record<string, unknown>;

export interface HttpAnswer {
  readonly status: number;
  readonly json?: unknown;
}

/** The body as JSON; an empty body when `allowEmpty` gives undefined (Triton then uses defaults). */
export type BodyReader = (allowEmpty: boolean) => Promise<JsonObject | undefined>;

/** Triton's regexes, matched against the whole path. */
export const SHARED_MEMORY_ROUTE = /^\/v2\/(systemsharedmemory|cudasharedmemory)(?:\/region\/([^/]+))?\/(status|register|unregister)$/;
export const REPOSITORY_ROUTE = /^\/v2\/repository(?:\/([^/]+))?\/(index|models\/([^/]+)\/(load|unload))$/;

const NOT_ALLOWED: HttpAnswer = { status: 405, json: { error: 'Method Not Allowed' } };
const OK: HttpAnswer = { status: 200 };

function asString(value: unknown): string {
  if (typeof value === 'string') return value;
  throw jsonAccess('attempt to access JSON non-string as string');
}

function asUInt(value: unknown): number {
  // A bigint (past 2^53) is a Uint64 to Triton too; an offset or size that large fits no region, rounded or not.
  if (isJsonUInt(value)) return Number(value);
  throw jsonAccess('attempt to access JSON non-unsigned-integer as unsigned-integer');
}

function asBool(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw jsonAccess('attempt to access JSON non-boolean as boolean');
}

function member(obj: JsonObject, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

function asObject(value: unknown): JsonObject {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as JsonObject;
  throw jsonAccess('attempt to access JSON non-object as object');
}

/** /v2/systemsharedmemory/... and /v2/cudasharedmemory/... */
export async function sharedMemoryRoute(core: InferenceServer, match: RegExpExecArray, method: string, body: BodyReader): Promise<HttpAnswer> {
  const cuda = match[1] === 'cudasharedmemory';
  const region = match[2] ?? '';
  const action = match[3] ?? '';
  if ((action === 'status' && method !== 'GET') || (action !== 'status' && method !== 'POST')) return NOT_ALLOWED;
  const shm = core.sharedMemory;
  if (action === 'status') {
    if (cuda) return { status: 200, json: shm.cudaStatus(region).map((r) => ({ name: r.name, device_id: r.deviceId, byte_size: r.byteSize })) };
    return { status: 200, json: shm.systemStatus(region).map((r) => ({ name: r.name, key: r.key, offset: r.offset, byte_size: r.byteSize })) };
  }
  if (action === 'unregister') {
    if (cuda) shm.unregisterCuda();
    else shm.unregisterSystem(region);
    return OK;
  }
  if (region === '') throw invalidArg(`'region name' is necessary to register ${cuda ? 'cuda' : 'system'} shared memory region`);
  const request = (await body(false)) ?? {};
  if (cuda) {
    const handle = member(request, 'raw_handle');
    if (handle === undefined) throw invalidArg("Shared memory register request has no 'raw_handle' field");
    const b64 = member(asObject(handle), 'b64');
    if (b64 === undefined) throw jsonAccess("attempt to access non-existing object member 'b64'");
    const raw = Buffer.from(asString(b64), 'base64');
    const size = member(request, 'byte_size');
    if (size === undefined) throw jsonAccess("attempt to access non-existing object member 'byte_size'");
    asUInt(size);
    const device = member(request, 'device_id');
    if (device === undefined) throw jsonAccess("attempt to access non-existing object member 'device_id'");
    asUInt(device);
    // sizeof(cudaIpcMemHandle_t)
    if (raw.byteLength !== 64) throw invalidArg("'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t");
    shm.registerCuda();
  }
  const key = member(request, 'key');
  if (key === undefined) throw invalidArg("Shared memory register request has no 'key' field");
  const keyText = asString(key);
  const offset = member(request, 'offset') === undefined ? 0 : asUInt(member(request, 'offset'));
  const size = member(request, 'byte_size');
  if (size === undefined) throw invalidArg("Shared memory register request has no 'byte_size' field");
  shm.registerSystem(region, keyText, offset, asUInt(size));
  return OK;
}

/** /v2/repository/index and /v2/repository/models/{m}/load|unload */
export async function repositoryRoute(core: InferenceServer, match: RegExpExecArray, method: string, body: BodyReader): Promise<HttpAnswer> {
  if (method !== 'POST') return NOT_ALLOWED;
  const repository = match[1] ?? '';
  if (match[2] === 'index') {
    // The index ignores a repository name (HandleRepositoryIndex takes it and does not use it).
    const request = await body(true);
    const ready = request === undefined || member(request, 'ready') === undefined ? false : asBool(member(request, 'ready'));
    const entries = await core.repositoryIndex(ready);
    // Triton leaves out what a model does not have: a version, state and reason until it is loaded, an empty reason.
    return { status: 200, json: entries.map((e) => Object.fromEntries(Object.entries(e).filter(([, v]) => v !== ''))) };
  }
  if (repository !== '') throw new RequestError('UNSUPPORTED', "'repository_name' specification is not supported");
  const model = match[3] ?? '';
  const request = await body(true);
  if (match[4] === 'load') {
    const parameters = request === undefined || member(request, 'parameters') === undefined ? undefined : asObject(member(request, 'parameters'));
    let config: string | undefined;
    const files = new Map<string, Uint8Array>();
    for (const [key, value] of Object.entries(parameters ?? {})) {
      const text = asString(value);
      if (key === 'config') config = text;
      else if (key.startsWith('file:')) files.set(key, Buffer.from(text, 'base64'));
      else throw new RequestError('INTERNAL', 'unexpected error on creating Triton parameter');
    }
    await core.loadModel(model, { config, files });
    return OK;
  }
  // Triton parses unload_dependents, then overwrites a parse error with the unload's own outcome: its type never fails the call.
  await core.unloadModel(model);
  return OK;
}

/** A member that is there and not null (TritonJson's Find, then IsNull). */
function given(obj: JsonObject, key: string): unknown {
  const v = member(obj, key);
  return v === null ? undefined : v;
}

/** The fields of a log-settings body, read as HandleLogging reads them (a null field is left alone). */
function logReader(request: JsonObject): LogUpdateReader {
  return {
    logFile: () => given(request, 'log_file') !== undefined,
    bool: (key) => {
      const v = given(request, key);
      return v === undefined ? undefined : asBool(v);
    },
    uint: (key) => {
      const v = given(request, key);
      return v === undefined ? undefined : asUInt(v);
    },
    string: (key) => {
      const v = given(request, key);
      return v === undefined ? undefined : asString(v);
    },
    badFormat: httpBadLogFormat,
  };
}

/** The fields of a trace-settings body, read as HandleTrace reads them (null clears a field). */
function traceReader(request: JsonObject): TraceUpdateReader {
  return {
    has: (key) => member(request, key) !== undefined,
    list: (key) => {
      const v = member(request, key);
      if (v === null || v === undefined) return v;
      if (!Array.isArray(v)) throw jsonAccess('attempt to access JSON non-array as array');
      return v as unknown[];
    },
    scalar: (key) => {
      const v = member(request, key);
      return v === null || v === undefined ? v : asString(v);
    },
    text: asString,
    spaceBeforeCount: false,
  };
}

/** GET or POST /v2/logging: the settings, after the body's update on a POST. */
export async function loggingRoute(core: InferenceServer, method: string, body: BodyReader): Promise<HttpAnswer> {
  if (method !== 'GET' && method !== 'POST') return NOT_ALLOWED;
  if (method === 'POST') core.logSettings.update(logReader((await body(false)) ?? {}));
  return { status: 200, json: core.logSettings.report() };
}

/** GET or POST /v2/trace/setting and /v2/models/{m}/trace/setting ('' for the global settings). */
export async function traceRoute(core: InferenceServer, model: string, method: string, body: BodyReader): Promise<HttpAnswer> {
  if (method !== 'GET' && method !== 'POST') return NOT_ALLOWED;
  // The model is checked before the body is read, as HandleTrace does.
  if (method === 'GET') return { status: 200, json: core.traceSettings(model) };
  core.traceSettings(model);
  return { status: 200, json: core.traceSettings(model, traceReader((await body(false)) ?? {})) };
}
