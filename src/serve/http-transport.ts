import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createGunzip, createInflate } from 'node:zlib';
import type { Transform } from 'node:stream';
import { configToJson } from './config-json.js';
import type { InferRequest, RequestInput, RequestedOutput } from './infer-request.js';
import { statisticsReport, type InferenceServer, type InferResult, type TransportOptions } from './inference-server.js';
import type { BodyReservation } from './body-budget.js';
import { jsonAccess, readJsonData, writeJsonData } from './json-tensors.js';
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

/**
 * Reads the body, inflating gzip/deflate bodies, stopping as soon as it
 * passes `limit` bytes, or as soon as the server's budget of buffered bytes
 * (body-budget.ts) is spent.
 */
function readBody(req: IncomingMessage, limit: number, reservation?: BodyReservation): Promise<Buffer> {
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
    const stop = (error: Error): void => {
      source.removeAllListeners('data');
      if (source !== req) (source as Transform).destroy();
      req.resume();
      reject(error);
    };
    source.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        stop(new BodyTooLarge());
        return;
      }
      try {
        reservation?.take(chunk.byteLength);
      } catch (error) {
        chunks.length = 0;
        stop(error as Error);
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

/**
 * A model name from the path. Triton matches its routes on the path as
 * received; a percent escape that is not UTF-8 (%E0%A4%A) is kept as written,
 * so the model is simply not found (ready: 400), never a 500 "URI malformed".
 */
function decodePathName(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
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

/**
 * The `inputs` and `outputs` of an infer request body, with binary sections
 * taken from `binary` in order; and whether outputs not listed go back as
 * binary data (the request's binary_data_output).
 */
function parseInferBody(model: string, version: string, header: JsonObject, binary: Buffer, hasHeaderLength: boolean): { request: InferRequest; binaryOutputs: boolean } {
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
    if (hasShm) throw new RequestError('UNSUPPORTED', `input '${name}': shared memory is not supported by popef serve`);
    let data: Uint8Array;
    if (hasBinary) {
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
      const name = requireString(output, 'name');
      const params = asObject(member(output, 'parameters')) ?? {};
      const cls = member(params, 'classification');
      const bin = member(params, 'binary_data');
      if (cls !== undefined && (typeof cls !== 'number' || !Number.isInteger(cls) || cls < 0)) throw jsonAccess("Unable to parse 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer");
      if (bin !== undefined && typeof bin !== 'boolean') throw jsonAccess("Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean");
      if (member(params, 'shared_memory_region') !== undefined) throw new RequestError('UNSUPPORTED', `output '${name}': shared memory is not supported by popef serve`);
      outputs.push({ name, classCount: typeof cls === 'number' ? cls : 0, binary: typeof bin === 'boolean' ? bin : binaryOutputs });
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
  private stopping = false;
  /** Each open connection and how many of its requests are unanswered. */
  private readonly connections = new Map<Socket, number>();

  constructor(core: InferenceServer, options: TransportOptions) {
    this.core = core;
    this.options = options;
    this.server = createServer((req, res) => {
      const socket = req.socket;
      this.connections.set(socket, (this.connections.get(socket) ?? 0) + 1);
      res.once('close', () => {
        const left = (this.connections.get(socket) ?? 1) - 1;
        this.connections.set(socket, left);
        // Draining: a connection is closed once its last answer is out (it was sent with Connection: close).
        if (this.stopping && left === 0) socket.destroySoon();
      });
      void this.handle(req, res);
    });
    this.server.on('connection', (socket: Socket) => {
      this.connections.set(socket, 0);
      socket.once('close', () => this.connections.delete(socket));
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

  /**
   * Stops accepting connections and closes at once every connection with no
   * request in it: idle keep-alive ones and ones that never finished sending
   * their headers (they would otherwise hold the stop for the whole grace).
   * Busy ones finish their request, answered with Connection: close. The
   * promise settles when the last connection is gone; `closeAll` ends the
   * stragglers.
   */
  close(): Promise<void> {
    this.stopping = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const [socket, busy] of this.connections) if (busy === 0) socket.destroy();
    return closed;
  }

  /** Ends every connection left (the running requests are done). */
  closeAll(): void {
    this.server.closeAllConnections();
    for (const socket of this.connections.keys()) socket.destroy();
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
    res.writeHead(status, { ...headers, 'Content-Length': String(length), ...(this.stopping ? { Connection: 'close' } : {}) });
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
        model = decodePathName(m[1] ?? '');
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
      } else if (path === '/v2/repository/index') {
        if (method !== 'POST') throw new MethodNotAllowed();
        const body = await readBody(req, this.options.maxRequestSize);
        const request = body.byteLength === 0 ? {} : parseJson(body.toString('utf8'));
        const readyOnly = member(request, 'ready') === true;
        // Triton leaves out an empty reason.
        this.sendJson(res, 200, this.core.index().filter((e) => !readyOnly || e.state === 'READY').map(({ reason, ...e }) => (reason === '' ? e : { ...e, reason })));
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

  private async infer(req: IncomingMessage, res: ServerResponse, model: string, version: string): Promise<void> {
    // The model must exist before the body is read, as in Triton (CheckTransactionPolicy comes first).
    this.core.model(model, version);
    // A client that closes the connection before its answer cancels the request (Triton does since 23.10).
    const client = new AbortController();
    const reservation = this.options.budget?.open();
    res.once('close', () => {
      if (!res.writableEnded) client.abort();
      // The body's bytes are given back when the answer is out or the client has gone, whichever comes first.
      reservation?.release();
    });
    const signal = client.signal;
    const body = await readBody(req, this.options.maxRequestSize, reservation);
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
    const { request, binaryOutputs } = parseInferBody(model, version, header, body.subarray(headerLength), hasHeaderLength);
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
