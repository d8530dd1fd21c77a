import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createGunzip, createInflate } from 'node:zlib';
import type { Transform } from 'node:stream';
import { configToJson } from './config-json.js';
import type { InferRequest, RequestInput, RequestedOutput } from './infer-request.js';
import { statisticsReport, type InferenceServer, type InferResult, type TransportOptions } from './inference-server.js';
import { REPOSITORY_ROUTE, SHARED_MEMORY_ROUTE, repositoryRoute, sharedMemoryRoute, type BodyReader, type HttpAnswer } from './http-control.js';
import { jsonAccess, readJsonData, writeJsonData } from './json-tensors.js';
import type { RegionSlice, SharedMemoryRegistry } from './shared-memory.js';
import { RequestError, asRequestError, httpStatusOf, invalidArg } from './status.js';

/**
 * Triton's HTTP/REST endpoints (KServe v2 with Triton's extensions), on
 * node:http: the routes and status codes of Triton's HTTPAPIServer (server
 * r24.10, http_server.cc), JSON tensors and the binary tensor data
 * extension (Inference-Header-Content-Length, binary_data_size,
 * binary_data). Bodies are read up to a limit, never beyond it.
 */

const HEADER = 'inference-header-content-length';
const MODEL_ROUTE = /^\/v2\/models\/([^/]+)(?:\/versions\/([0-9]+))?(?:\/(infer|ready|config|stats))?$/;

type JsonObject = Record<string, unknown>;

class BodyTooLarge extends Error {}

/** Reads the body, inflating gzip/deflate bodies, stopping as soon as it passes `limit` bytes. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(new BodyTooLarge());
  }
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  let source: IncomingMessage | Transform = req;
  if (encoding === 'gzip' || encoding === 'deflate') {
    const inflate = encoding === 'gzip' ? createGunzip() : createInflate();
    req.pipe(inflate);
    source = inflate;
  } else if (encoding !== 'identity' && encoding !== '') {
    req.resume();
    return Promise.reject(new RequestError('UNSUPPORTED', 'Unsupported content-encoding, only \'identity\' is supported.'));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    source.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        source.removeAllListeners('data');
        if (source !== req) (source as Transform).destroy();
        req.resume();
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    source.on('end', () => resolve(chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks, size)));
    source.on('error', (error: Error) => reject(new RequestError('INVALID_ARG', `failed to decompress the request body: ${error.message}`)));
    req.on('aborted', () => reject(new RequestError('CANCELLED', 'the client closed the connection')));
  });
}

function parseJson(text: string): JsonObject {
  if (text.trim() === '') throw invalidArg('failed to parse the request JSON buffer: The document is empty. at 0');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    const at = /position (\d+)/.exec(message)?.[1] ?? String(text.length);
    throw invalidArg(`failed to parse the request JSON buffer: ${message.replace(/ in JSON at position \d+.*$/, '')} at ${at}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidArg('failed to parse the request JSON buffer: The document root must be an object at 0');
  return value as JsonObject;
}

function member(obj: JsonObject, key: string): unknown {
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

/** A tensor's shared-memory parameters (CheckSharedMemoryData): undefined when it names no region. */
function sharedMemoryData(params: JsonObject | undefined): RegionSlice | undefined {
  if (params === undefined || member(params, 'shared_memory_region') === undefined) return undefined;
  const region = member(params, 'shared_memory_region');
  if (typeof region !== 'string') throw jsonAccess("Unable to parse 'shared_memory_region': attempt to access JSON non-string as string");
  const uint = (key: string): number => {
    const v = member(params, key);
    if (v === undefined) return 0;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw jsonAccess(`Unable to parse '${key}': attempt to access JSON non-unsigned-integer as unsigned-integer`);
    return v;
  };
  return { region, offset: uint('shared_memory_offset'), byteSize: uint('shared_memory_byte_size') };
}

/**
 * The `inputs` and `outputs` of an infer request body, with binary sections
 * taken from `binary` in order; and whether outputs not listed go back as
 * binary data (the request's binary_data_output).
 */
function parseInferBody(
  model: string,
  version: string,
  header: JsonObject,
  binary: Buffer,
  hasHeaderLength: boolean,
  sharedMemory: SharedMemoryRegistry,
): { request: InferRequest; binaryOutputs: boolean } {
  const id = member(header, 'id');
  if (id !== undefined && typeof id !== 'string') throw missingOr('id', 'string', id);
  let binaryOutputs: boolean | undefined;
  const scheduling: { priority?: number; timeoutUs?: number } = {};
  const parameters = asObject(member(header, 'parameters'));
  if (parameters !== undefined) {
    for (const [key, value] of Object.entries(parameters)) {
      if (key === 'priority' || key === 'timeout') {
        if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw missingOr(key, 'unsigned-integer', value);
        scheduling[key === 'priority' ? 'priority' : 'timeoutUs'] = value;
      } else if (key === 'binary_data_output') {
        if (typeof value !== 'boolean') throw missingOr('binary_data_output', 'boolean', value);
        binaryOutputs = value;
      } else if (key.startsWith('triton_')) {
        throw invalidArg("parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.");
      }
    }
  }
  const inputsJson = member(header, 'inputs');
  if (!Array.isArray(inputsJson)) throw missingOr('inputs', 'array', inputsJson);
  let offset = 0;
  const inputs: RequestInput[] = [];
  for (const raw of inputsJson) {
    const input = asObject(raw);
    if (input === undefined) throw jsonAccess('attempt to access JSON non-object as object');
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
    const shape = shapeJson.map((d: unknown) => {
      if (typeof d !== 'number' || !Number.isInteger(d) || d < 0) throw jsonAccess("Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer");
      return d;
    });
    let data: Uint8Array;
    const slice = sharedMemoryData(params);
    if (slice !== undefined) data = sharedMemory.read(slice);
    else if (hasBinary) {
      const size = member(params, 'binary_data_size');
      if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) throw jsonAccess("Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer");
      if (size > 0 && !hasHeaderLength) {
        throw invalidArg("must specify valid 'Infer-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format");
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
    inputs.push({ name, datatype, shape, data });
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
        if (bin !== undefined && typeof bin !== 'boolean') throw jsonAccess("Unable to set 'binary_data': attempt to access JSON non-boolean as boolean");
        if (bin === true) throw invalidArg("Output can't set both 'shared_memory_region' and 'binary_data'");
      }
      const name = requireString(output, 'name');
      if (cls !== undefined && (typeof cls !== 'number' || !Number.isInteger(cls) || cls < 0)) throw jsonAccess("Unable to parse 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer");
      if (bin !== undefined && typeof bin !== 'boolean') throw jsonAccess("Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean");
      const region = sharedMemoryData(params);
      if (region !== undefined) sharedMemory.check(region);
      outputs.push({ name, classCount: typeof cls === 'number' ? cls : 0, binary: typeof bin === 'boolean' ? bin : binaryOutputs, region });
    }
  }
  return { request: { modelName: model, modelVersion: version, id: typeof id === 'string' ? id : '', inputs, outputs, ...scheduling }, binaryOutputs: binaryOutputs ?? false };
}

/** The response body: JSON, then the binary outputs in order (Triton's layout). */
function inferResponse(result: InferResult, defaultBinary: boolean): { json: Buffer; binary: Buffer[] } {
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
  return { json: Buffer.from(JSON.stringify(body)), binary };
}

export class HttpTransport {
  private readonly server: Server;
  private readonly core: InferenceServer;
  private readonly options: TransportOptions;

  constructor(core: InferenceServer, options: TransportOptions) {
    this.core = core;
    this.options = options;
    this.server = createServer((req, res) => {
      void this.handle(req, res);
    });
    // Keep-alive sockets must not hold a stopping server open for long.
    this.server.keepAliveTimeout = 5000;
  }

  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  /** Stops accepting connections; idle keep-alive connections are closed, busy ones finish their request. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
    });
  }

  private sendJson(res: ServerResponse, status: number, value: unknown): void {
    this.sendParts(res, status, [Buffer.from(JSON.stringify(value))], { 'Content-Type': 'application/json' });
  }

  private sendEmpty(res: ServerResponse, status: number): void {
    this.sendParts(res, status, [], {});
  }

  private sendParts(res: ServerResponse, status: number, parts: readonly Buffer[], headers: Record<string, string>): void {
    if (res.headersSent) return;
    const length = parts.reduce((n, p) => n + p.byteLength, 0);
    res.writeHead(status, { ...headers, 'Content-Length': String(length) });
    // One write for headers and body: each extra write is a syscall, and they dominate a small answer's cost.
    if (parts.length <= 1 || length <= 1 << 20) res.end(parts.length === 1 ? parts[0] : Buffer.concat(parts, length));
    else {
      for (const p of parts) res.write(p);
      res.end();
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    let model: string | undefined;
    let status = 200;
    let error: string | undefined;
    const fail = (e: unknown): void => {
      req.resume();
      if (e instanceof BodyTooLarge) {
        status = 413;
        error = `request body is larger than the --max-request-size of ${this.options.maxRequestSize} bytes`;
      } else {
        const r = asRequestError(e);
        status = httpStatusOf(r.status);
        error = r.message;
      }
      this.sendJson(res, status, { error });
    };
    try {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const method = req.method ?? 'GET';
      const m = MODEL_ROUTE.exec(path);
      const shmMatch = SHARED_MEMORY_ROUTE.exec(path);
      const repositoryMatch = REPOSITORY_ROUTE.exec(path);
      if (path === '/v2/health/live' || path === '/v2/health/ready' || path === '/v2') {
        if (method !== 'GET') throw new MethodNotAllowed();
        if (path === '/v2') this.sendJson(res, 200, this.core.metadata());
        else {
          const ok = path.endsWith('live') ? this.core.live() : this.core.ready();
          status = ok ? 200 : 400;
          this.sendEmpty(res, status);
        }
      } else if (path === '/v2/models/stats' && method === 'GET') {
        this.sendJson(res, 200, statisticsReport(this.core.statistics('', '')));
      } else if (m !== null) {
        model = decodeURIComponent(m[1] ?? '');
        const version = m[2] ?? '';
        const kind = m[3] ?? '';
        if (kind === 'infer') {
          if (method !== 'POST') throw new MethodNotAllowed();
          await this.infer(req, res, model, version);
        } else {
          if (method !== 'GET') throw new MethodNotAllowed();
          if (kind === 'ready') {
            status = this.core.modelReady(model, version) ? 200 : 400;
            if (status === 200) this.sendEmpty(res, 200);
            else {
              error = 'Model version not ready';
              this.sendJson(res, 400, { error });
            }
          } else if (kind === 'config') {
            const config = this.core.model(model, version).config ?? {};
            this.sendJson(res, 200, configToJson(config));
          } else if (kind === 'stats') {
            this.sendJson(res, 200, statisticsReport(this.core.statistics(model, version)));
          } else {
            this.sendJson(res, 200, this.core.modelMetadata(model, version));
          }
        }
      } else if (shmMatch !== null) {
        const answer = await sharedMemoryRoute(this.core, shmMatch, method, this.bodyReader(req));
        status = answer.status;
        this.sendAnswer(req, res, answer);
      } else if (repositoryMatch !== null) {
        const answer = await repositoryRoute(this.core, repositoryMatch, method, this.bodyReader(req));
        status = answer.status;
        this.sendAnswer(req, res, answer);
      } else {
        status = 404;
        error = 'Not Found';
        req.resume();
        this.sendJson(res, 404, { error });
      }
    } catch (e) {
      if (e instanceof MethodNotAllowed) {
        status = 405;
        error = 'Method Not Allowed';
        req.resume();
        this.sendJson(res, 405, { error });
      } else fail(e);
    } finally {
      this.options.log?.({ transport: 'http', method: `${req.method ?? ''} ${req.url ?? ''}`, model, status: res.statusCode || status, ms: performance.now() - started, error });
    }
  }

  /** Reads the body as JSON for a control endpoint; an empty body is undefined where Triton takes defaults. */
  private bodyReader(req: IncomingMessage): BodyReader {
    return async (allowEmpty) => {
      const body = await readBody(req, this.options.maxRequestSize);
      if (body.byteLength === 0 && allowEmpty) return undefined;
      try {
        return parseJson(body.toString('utf8'));
      } catch (error) {
        // EVBufferToJson's errors are INTERNAL; only the infer endpoint answers a bad body with 400.
        throw error instanceof RequestError ? new RequestError('INTERNAL', error.message) : error;
      }
    };
  }

  private sendAnswer(req: IncomingMessage, res: ServerResponse, answer: HttpAnswer): void {
    req.resume();
    if (answer.json === undefined) this.sendParts(res, answer.status, [], { 'Content-Type': 'application/json' });
    else this.sendJson(res, answer.status, answer.json);
  }

  private async infer(req: IncomingMessage, res: ServerResponse, model: string, version: string): Promise<void> {
    // The model must exist before the body is read, as in Triton (CheckTransactionPolicy comes first).
    this.core.model(model, version);
    // A client that closes the connection before its answer cancels the request (Triton does since 23.10).
    const client = new AbortController();
    res.once('close', () => {
      if (!res.writableEnded) client.abort();
    });
    const signal = client.signal;
    const body = await readBody(req, this.options.maxRequestSize);
    const headerValue = req.headers[HEADER];
    let headerLength = body.byteLength;
    const hasHeaderLength = typeof headerValue === 'string';
    if (hasHeaderLength) {
      // As C's atoi, which Triton uses: the leading integer, 0 when there is none.
      const parsed = Number(/^\s*[+-]?\d+/.exec(headerValue)?.[0] ?? 0);
      if (parsed < 0 || parsed > body.byteLength) throw invalidArg(`inference header size should be in range (0, ${body.byteLength}), got: ${headerValue}`);
      headerLength = parsed;
    }
    // A header length of 0 makes the whole body the data of the model's one input (Triton's raw binary request).
    if (headerLength === 0) {
      this.sendResult(res, await this.core.infer({ modelName: model, modelVersion: version, id: '', inputs: [], outputs: [], raw: body, signal }), true);
      return;
    }
    const header = parseJson(body.subarray(0, headerLength).toString('utf8'));
    const { request, binaryOutputs } = parseInferBody(model, version, header, body.subarray(headerLength), hasHeaderLength, this.core.sharedMemory);
    this.sendResult(res, await this.core.infer({ ...request, signal }), binaryOutputs);
  }

  /** An infer answer: JSON alone, or the JSON header then the binary outputs. */
  private sendResult(res: ServerResponse, result: InferResult, defaultBinary: boolean): void {
    const { json, binary } = inferResponse(result, defaultBinary);
    if (binary.length === 0) this.sendParts(res, 200, [json], { 'Content-Type': 'application/json' });
    else this.sendParts(res, 200, [json, ...binary], { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(json.byteLength) });
  }
}

class MethodNotAllowed extends Error {}
