import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createGunzip, createInflate } from 'node:zlib';
import type { Transform } from 'node:stream';
import { configToJson } from './config-json.js';
import { encodeBody, responseEncoding } from './http-encoding.js';
import {
  REPOSITORY_ROUTE,
  SHARED_MEMORY_ROUTE,
  loggingRoute,
  repositoryRoute,
  sharedMemoryRoute,
  traceRoute,
  type BodyReader,
  type HttpAnswer,
} from './http-control.js';
import { fromGenerateBody, generateResponse } from './http-generate.js';
import { fromInferBody, inferResponse, parseJson } from './http-infer-body.js';
import { statisticsReport, type InferenceServer, type InferResult, type TransportOptions } from './inference-server.js';
import { RequestError, ResponseError, asRequestError, httpStatusOf, invalidArg } from './status.js';
import { TransportBase, listenHttp } from './transport.js';
import type { BodyReservation } from './body-budget.js';
import { ClientGone, type Cancellation } from './cancellation.js';
import { writeTritonJson } from './triton-json.js';

/**
 * Triton's HTTP/REST endpoints (KServe v2 with Triton's extensions), on
 * node:http: the routes and status codes of Triton's HTTPAPIServer (server
 * r24.10, http_server.cc), JSON tensors and the binary tensor data
 * extension (Inference-Header-Content-Length, binary_data_size,
 * binary_data). Bodies are read up to a limit, never beyond it.
 *
 * Routing is a table, as Triton's Handle dispatches to one HandleX per
 * endpoint: each route turns a request into an Answer, and one function
 * sends it and logs it.
 */

/** What a route answers: a status and a body of JSON, text or raw parts. */
export interface Answer {
  readonly status: number;
  readonly json?: unknown;
  readonly text?: string;
  readonly parts?: readonly Buffer[];
  readonly headers?: Readonly<Record<string, string>>;
}

interface Route {
  /** ANY: the handler checks the method itself (Triton's shared-memory and repository handlers do). */
  readonly method: 'GET' | 'POST' | 'ANY';
  /** Anchored; a named group `model` is the (still percent-encoded) model name, `version` its version. */
  readonly pattern: RegExp;
  handle(req: IncomingMessage, match: RegExpExecArray, res: ServerResponse): Answer | Promise<Answer>;
}

const HEADER = 'inference-header-content-length';
const MODEL = String.raw`^/v2/models/(?<model>[^/]+)(?:/versions/(?<version>[0-9]+))?`;
const TOO_LARGE = Symbol('too large');

const empty = (status: number): Answer => ({ status, parts: [] });
const json = (value: unknown, status = 200): Answer => ({ status, json: value });
const failure = (status: number, message: string): Answer => ({ status, json: { error: message } });
/** A control endpoint's answer: its JSON, or an empty JSON reply. */
const answerOf = (a: HttpAnswer): Answer =>
  a.json === undefined ? { status: a.status, parts: [], headers: { 'Content-Type': 'application/json' } } : json(a.json, a.status);

/**
 * Reads the body, inflating gzip/deflate bodies, stopping as soon as it
 * passes `limit` bytes, or as soon as the server's budget of buffered bytes
 * (body-budget.ts) is spent.
 */
function readBody(req: IncomingMessage, limit: number, reservation?: BodyReservation): Promise<Buffer | typeof TOO_LARGE> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve(TOO_LARGE);
  }
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  let source: IncomingMessage | Transform = req;
  if (encoding === 'gzip' || encoding === 'deflate') {
    const inflate = encoding === 'gzip' ? createGunzip() : createInflate();
    req.pipe(inflate);
    source = inflate;
  } else if (encoding !== 'identity' && encoding !== '') {
    req.resume();
    return Promise.reject(new RequestError('UNSUPPORTED', "Unsupported content-encoding, only 'identity' is supported."));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Stops reading: the rest of the body is drained, not buffered.
    const stop = (): void => {
      source.removeAllListeners('data');
      if (source !== req) (source as Transform).destroy();
      req.resume();
    };
    source.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        stop();
        resolve(TOO_LARGE);
        return;
      }
      try {
        reservation?.take(chunk.byteLength);
      } catch (error) {
        chunks.length = 0;
        stop();
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      chunks.push(chunk);
    });
    source.on('end', () => resolve(chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks, size)));
    source.on('error', (error: Error) => reject(new RequestError('INVALID_ARG', `failed to decompress the request body: ${error.message}`)));
    req.on('aborted', () => reject(new RequestError('CANCELLED', 'the client closed the connection')));
  });
}

/** The model name as the path spells it: Triton does not percent-decode it, and neither do we. */
function modelOf(match: RegExpExecArray): string {
  return match.groups?.model ?? '';
}

function versionOf(match: RegExpExecArray): string {
  return match.groups?.version ?? '';
}

/** An infer answer: JSON alone, or the JSON header then the binary outputs; compressed as Accept-Encoding asks. */
async function inferAnswer(result: InferResult, defaultBinary: boolean, acceptEncoding: string | undefined): Promise<Answer> {
  const { json: header, binary } = inferResponse(result, defaultBinary);
  const headers: Record<string, string> =
    binary.length === 0
      ? { 'Content-Type': 'application/json' }
      : { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(header.byteLength) };
  const encoding = responseEncoding(acceptEncoding);
  if (encoding === 'identity') return { status: 200, parts: [header, ...binary], headers };
  return { status: 200, parts: [await encodeBody(encoding, [header, ...binary])], headers: { ...headers, 'Content-Encoding': encoding } };
}

export class HttpTransport extends TransportBase {
  readonly name = 'HTTP';
  readonly portFlag = '--http-port';
  private readonly server: Server;
  private readonly routes: readonly Route[];
  private stopping = false;
  /** Each open connection and how many of its requests are unanswered. */
  private readonly connections = new Map<Socket, number>();

  constructor(core: InferenceServer, options: TransportOptions) {
    super(core, options);
    this.routes = this.routeTable(core);
    // Lenient parsing, as Triton's libevhtp parses: a chunked body that also
    // carries Content-Length is read as chunked (node:http's strict parser
    // refuses it with a bare 400), and the infer route then takes the
    // lengths from Content-Length as Triton does (http-infer-body.ts).
    this.server = createServer({ insecureHTTPParser: true }, (req, res) => {
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
    return listenHttp(this.server, port, host);
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

  /** The endpoints, in the order they are tried (see find). */
  private routeTable(core: InferenceServer): Route[] {
    const route = (method: Route['method'], pattern: string, handle: Route['handle']): Route => ({
      method,
      pattern: new RegExp(`${pattern}$`),
      handle,
    });
    return [
      route('GET', '^/v2/health/live', () => empty(core.live() ? 200 : 400)),
      route('GET', '^/v2/health/ready', () => empty(core.ready() ? 200 : 400)),
      route('GET', '^/v2', () => json(core.metadata())),
      route('GET', '^/v2/models/stats', () => json(statisticsReport(core.statistics('', '')))),
      // Log and trace settings check their methods themselves (GET or POST); a versioned trace path is 404, as in Triton.
      route('ANY', '^/v2/logging', async (req) => answerOf(await loggingRoute(core, req.method ?? '', this.bodyReader(req)))),
      route('ANY', '^/v2/trace/setting', async (req) => answerOf(await traceRoute(core, '', req.method ?? '', this.bodyReader(req)))),
      route('ANY', '^/v2/models/(?<model>[^/]+)/trace/setting', async (req, m) =>
        answerOf(await traceRoute(core, modelOf(m), req.method ?? '', this.bodyReader(req))),
      ),
      route('POST', `${MODEL}/infer`, (req, m, res) => this.infer(req, res, modelOf(m), versionOf(m))),
      route('POST', `${MODEL}/generate`, (req, m, res) => this.generate(req, res, modelOf(m), versionOf(m), false)),
      route('POST', `${MODEL}/generate_stream`, (req, m, res) => this.generate(req, res, modelOf(m), versionOf(m), true)),
      route('GET', `${MODEL}/ready`, (_, m) => (core.modelReady(modelOf(m), versionOf(m)) ? empty(200) : failure(400, 'Model version not ready'))),
      route('GET', `${MODEL}/config`, (_, m) => json(configToJson(core.model(modelOf(m), versionOf(m)).config ?? {}))),
      route('GET', `${MODEL}/stats`, (_, m) => json(statisticsReport(core.statistics(modelOf(m), versionOf(m))))),
      route('GET', MODEL, (_, m) => json(core.modelMetadata(modelOf(m), versionOf(m)))),
      // Shared memory and model control: http-control.ts does the work (Triton's paths; its method checks come first).
      route('ANY', SHARED_MEMORY_ROUTE.source.replace(/\$$/, ''), async (req, m) =>
        answerOf(await sharedMemoryRoute(core, m, req.method ?? '', this.bodyReader(req))),
      ),
      route('ANY', REPOSITORY_ROUTE.source.replace(/\$$/, ''), async (req, m) =>
        answerOf(await repositoryRoute(core, m, req.method ?? '', this.bodyReader(req))),
      ),
    ];
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const found = this.find(req.method ?? '', (req.url ?? '/').split('?')[0] ?? '/');
    let answer: Answer;
    try {
      answer = found.route === undefined ? found.miss : await found.route.handle(req, found.match, res);
    } catch (error) {
      const e = asRequestError(error);
      answer = failure(httpStatusOf(e.status), e.message);
    }
    // A body a route did not read is drained, so that the connection can carry the next request.
    req.resume();
    // The record is written before the answer, so that it is there when the client has the answer (serve-log.test.ts).
    this.options.log?.({
      transport: 'http',
      method: `${req.method ?? ''} ${req.url ?? ''}`,
      model: found.match?.groups?.model,
      status: answer.status,
      ms: performance.now() - started,
      error: answer.status >= 400 ? errorOf(answer) : undefined,
    });
    this.send(res, answer);
  }

  /** The route for a request, first match wins; a path known only under another method is 405. */
  private find(
    method: string,
    path: string,
  ): { route: Route; match: RegExpExecArray } | { route?: undefined; match?: RegExpExecArray; miss: Answer } {
    let known: RegExpExecArray | undefined;
    for (const route of this.routes) {
      const match = route.pattern.exec(path);
      if (match === null) continue;
      if (route.method === method || route.method === 'ANY') return { route, match };
      known ??= match;
    }
    return known === undefined ? { miss: failure(404, 'Not Found') } : { match: known, miss: failure(405, 'Method Not Allowed') };
  }

  /**
   * Runs `then` on the request body, or answers 413 when it passes
   * --max-request-size. The body's bytes count against the server's budget
   * (body-budget.ts) until the answer is out or the client has gone.
   */
  private async withBody(req: IncomingMessage, res: ServerResponse, then: (body: Buffer) => Answer | Promise<Answer>): Promise<Answer> {
    const reservation = this.options.budget?.open();
    res.once('close', () => reservation?.release());
    const body = await readBody(req, this.options.maxRequestSize, reservation);
    if (body === TOO_LARGE) return failure(413, `request body is larger than the --max-request-size of ${this.options.maxRequestSize} bytes`);
    return then(body);
  }

  /** Reads the body as JSON for a control endpoint; an empty body is undefined where Triton takes defaults. */
  private bodyReader(req: IncomingMessage): BodyReader {
    return async (allowEmpty) => {
      const body = await readBody(req, this.options.maxRequestSize);
      if (body === TOO_LARGE) throw invalidArg(`request body is larger than the --max-request-size of ${this.options.maxRequestSize} bytes`);
      if (body.byteLength === 0 && allowEmpty) return undefined;
      try {
        return parseJson(body);
      } catch (error) {
        // EVBufferToJson's errors are INTERNAL; only the infer endpoint answers a bad body with 400.
        throw error instanceof RequestError ? new RequestError('INTERNAL', error.message) : error;
      }
    };
  }

  private infer(req: IncomingMessage, res: ServerResponse, model: string, version: string): Promise<Answer> {
    // The model must exist before the body is read, as in Triton (CheckTransactionPolicy comes first).
    this.core.model(model, version);
    return this.withBody(req, res, async (body) => {
      const headerLength = req.headers[HEADER];
      // readBody inflated these; their Content-Length is not the body's.
      const compressed = ['gzip', 'deflate'].includes((req.headers['content-encoding'] ?? '').toLowerCase());
      const { request, binaryOutputs } = await fromInferBody(
        model,
        version,
        body,
        typeof headerLength === 'string' ? headerLength : undefined,
        this.core.sharedMemory,
        compressed ? undefined : req.headers['content-length'],
      );
      return inferAnswer(await this.core.infer({ ...request, signal: closedBeforeAnswer(res) }), binaryOutputs, req.headers['accept-encoding']);
    });
  }

  /**
   * generate and generate_stream (http-generate.ts maps the body): the
   * model's inputs are read first, then the body, which must not be
   * compressed (Triton's HandleGenerate does not inflate it). An error
   * before the request runs is a JSON error; one that comes back in the
   * response is the answer's body, an SSE event when streaming, under
   * that error's status.
   */
  private generate(req: IncomingMessage, res: ServerResponse, model: string, version: string, streaming: boolean): Promise<Answer> {
    const { inputs } = this.core.modelMetadata(model, version);
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding !== '' && encoding !== 'identity')
      throw invalidArg("Unsupported content-encoding, only 'identity' is supported.");
    return this.withBody(req, res, async (body) => {
      const request = fromGenerateBody(model, version, inputs, body);
      let status = 200;
      let text: string;
      try {
        text = generateResponse(await this.core.infer({ ...request, signal: closedBeforeAnswer(res) }));
      } catch (error) {
        if (!(error instanceof ResponseError)) throw error;
        status = httpStatusOf(error.status);
        text = JSON.stringify({ error: error.message });
      }
      if (!streaming) return { status, parts: [Buffer.from(text)], headers: { 'Content-Type': 'application/json' } };
      return { status, parts: [Buffer.from(`data: ${text}\n\n`)], headers: { 'Content-Type': 'text/event-stream; charset=utf-8' } };
    });
  }

  /** The one place an answer is written: headers and body in one write when they fit. */
  private send(res: ServerResponse, answer: Answer): void {
    if (res.headersSent) return;
    let parts: readonly Buffer[];
    let headers: Record<string, string> = { ...answer.headers };
    if (answer.json !== undefined) {
      parts = [Buffer.from(writeTritonJson(answer.json))];
      headers = { 'Content-Type': 'application/json', ...headers };
    } else if (answer.text !== undefined) {
      parts = [Buffer.from(answer.text)];
      headers = { 'Content-Type': 'text/plain; charset=utf-8', ...headers };
    } else parts = answer.parts ?? [];
    const length = parts.reduce((n, p) => n + p.byteLength, 0);
    res.writeHead(answer.status, { ...headers, 'Content-Length': String(length), ...(this.stopping ? { Connection: 'close' } : {}) });
    // One write for headers and body: each extra write is a syscall, and they dominate a small answer's cost.
    if (parts.length <= 1 || length <= 1 << 20) res.end(parts.length === 1 ? parts[0] : Buffer.concat(parts, length));
    else {
      for (const p of parts) res.write(p);
      res.end();
    }
  }
}

/** Aborts when the client closes the connection before its answer: that cancels the request (Triton does since 23.10). */
function closedBeforeAnswer(res: ServerResponse): Cancellation {
  const client = new ClientGone();
  res.once('close', () => {
    if (!res.writableEnded) client.set();
  });
  return client;
}

function errorOf(answer: Answer): string | undefined {
  const body = answer.json;
  return typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string'
    ? (body as { error: string }).error
    : undefined;
}
