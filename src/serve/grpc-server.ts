import {
  constants as http2Constants,
  createServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { BodyBudget, BodyReservation } from './body-budget.js';
import { ClientGone, type Cancellation } from './cancellation.js';
import {
  ACCEPTED_ENCODINGS,
  GrpcCode,
  GrpcStatusError,
  MessageDeframer,
  decodeMessage,
  frameMessage,
  knownEncoding,
  parseTimeout,
  percentEncode,
  type RawMessage,
} from './grpc-wire.js';

/**
 * A gRPC server on node:http2, for the service of grpc-transport.ts: unary
 * methods and bidirectional streams, with deadlines (grpc-timeout),
 * cancellation (the client's RST_STREAM or a closed connection), compressed
 * requests (grpc-encoding gzip/deflate), a per-message size limit, the
 * server's --max-buffered budget counted on every stream as its bytes
 * arrive, and a graceful drain (GOAWAY, running calls finish). The wire
 * format is in grpc-wire.ts.
 *
 * Why not @grpc/grpc-js's server: per call it builds metadata, an
 * interceptor chain, channelz counters and several closures, and a
 * do-nothing grpc-js server cost 0.8-2.1 ms of CPU per request here, more
 * than Triton's whole path; and it gives no public hook to count a
 * stream's bytes before a whole message is buffered.
 */

/** What a method is given besides its request. */
export interface CallContext {
  /** Aborted when the client cancels the call or its deadline passes. */
  readonly signal: Cancellation;
}

/** A bidirectional stream as its method sees it. */
export interface StreamCall extends CallContext {
  /** False once the call has ended (answered, cancelled or past its deadline). */
  readonly open: boolean;
  /** Sends one response message. */
  write(message: Record<string, unknown>): void;
  /** Ends the call with OK. */
  end(): void;
}

interface Codecs {
  decode(bytes: Buffer): Record<string, unknown>;
  encode(message: Record<string, unknown>): Buffer;
}

/** A method that takes one request and answers one response (or throws a GrpcStatusError). */
export interface UnaryMethod extends Codecs {
  readonly kind: 'unary';
  handle(request: Record<string, unknown>, call: CallContext): Promise<Record<string, unknown>>;
}

/** A method that reads a stream of requests and writes a stream of responses. */
export interface BidiMethod extends Codecs {
  readonly kind: 'bidi';
  /**
   * Called once per call; the returned listeners receive its requests in order, then its half-close. A
   * request's promise, when `message` returns one, settles once it is answered: until then its bytes count
   * as the stream's, and past --max-request-size of them the stream's next requests wait.
   */
  open(call: StreamCall): { message(request: Record<string, unknown>): unknown; halfClose(): void };
}

export type GrpcMethod = UnaryMethod | BidiMethod;

export interface GrpcServerOptions {
  /** The largest message a request may hold, compressed or not (--max-request-size). */
  readonly maxMessageLength: number;
  /** The bytes of request bodies held across the whole server (body-budget.ts). */
  readonly budget?: BodyBudget;
}

/** The longest delay setTimeout keeps (a signed 32-bit count of milliseconds). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The most bytes of headers a response's status is given, whatever the client allows: grpc C-core's clients
 * (grpcio, so tritonclient) advertise 16 KiB but fail a call whose metadata passes 8 KiB (the soft limit of
 * grpc.max_metadata_size) with RESOURCE_EXHAUSTED, losing the status (Triton's own long messages do that).
 */
const MAX_MESSAGE_HEADER = 8192;

/** The most requests of one stream waiting for their answers before its next ones are not read. */
const MAX_WAITING = 1024;

/** A response's leading headers (a new object each time: node:http2 may keep what it is given). */
function responseHeaders(): OutgoingHttpHeaders {
  return { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': ACCEPTED_ENCODINGS };
}

/** The server: `methods` by path, '/package.Service/Method'. */
export class GrpcServer {
  private readonly http2: Http2Server;
  private readonly sessions = new Set<Http2Session>();

  constructor(
    private readonly methods: ReadonlyMap<string, GrpcMethod>,
    private readonly options: GrpcServerOptions,
  ) {
    // Node's session memory limit refuses new streams (ENHANCE_YOUR_CALM) while large messages are in flight;
    // the budget bounds what is held instead.
    this.http2 = createServer({ maxSessionMemory: Number.MAX_SAFE_INTEGER });
    this.http2.on('session', (session: Http2Session) => {
      this.sessions.add(session);
      session.on('error', () => undefined);
      session.once('close', () => this.sessions.delete(session));
    });
    this.http2.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => this.call(stream, headers));
  }

  /** Resolves with the port bound; rejects with the listen error (its errno code, e.g. EADDRINUSE). */
  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.http2.once('error', reject);
      this.http2.listen(port, host, () => {
        this.http2.off('error', reject);
        const address = this.http2.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  /** Stops accepting connections and sends every session GOAWAY; resolves once the calls running have ended. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.http2.listening) return resolve();
      this.http2.close(() => resolve());
      for (const session of this.sessions) session.close();
    });
  }

  /** Cuts every session still open, with its calls. */
  closeAll(): void {
    for (const session of this.sessions) session.destroy();
  }

  private call(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    // Errors of a stream (a reset, a closed session) end it; its 'close' says so to the call.
    stream.on('error', () => undefined);
    const contentType = headers['content-type'];
    // application/grpc, alone or with a +subtype or ;parameters: "application/grpcfoo" is another type (Triton resets it).
    if (typeof contentType !== 'string' || !/^application\/grpc(?:$|[+;])/.test(contentType)) {
      // The protocol's answer to a request that is not gRPC: HTTP 415.
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    const path = headers[':path'] ?? '';
    const method = this.methods.get(path);
    new Call(stream, headers, path, method, this.options);
  }
}

/** One call on one HTTP/2 stream, from its headers to its trailers. */
class Call implements StreamCall {
  private done = false;
  /** Set when the client resets the call, its connection goes, or its deadline passes. */
  private readonly gone = new ClientGone();
  private timer: NodeJS.Timeout | undefined;
  private trailers: OutgoingHttpHeaders | undefined;
  private readonly encoding: string;
  private readonly deframer: MessageDeframer;
  private reservation: BodyReservation | undefined;
  /** Messages still being decompressed, so that the next ones wait their turn. */
  private queue: Promise<void> | undefined;
  private request: Record<string, unknown> | undefined;
  private listeners: ReturnType<BidiMethod['open']> | undefined;
  /** A stream's request that could not be read: its status once the answers before it are out. */
  private failure: { error: GrpcStatusError; stopReading: boolean } | undefined;
  /** A stream's requests handed to its method and not yet answered: their count and bytes. */
  private waiting = 0;
  private waitingBytes = 0;
  /** A 'drain' listener is registered: the answers are backed up, whatever else paused the stream. */
  private drainPending = false;

  constructor(
    private readonly stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    private readonly path: string,
    private readonly method: GrpcMethod | undefined,
    private readonly options: GrpcServerOptions,
  ) {
    const encoding = headers['grpc-encoding'];
    this.encoding = typeof encoding === 'string' ? encoding : 'identity';
    this.deframer = new MessageDeframer(options.maxMessageLength);
    stream.once('close', () => this.closed());
    const refusal = this.refusal(headers['grpc-timeout']);
    if (refusal !== undefined || method === undefined) {
      this.fail(refusal ?? new GrpcStatusError(GrpcCode.UNIMPLEMENTED, `The server does not implement the method ${path}`));
      return;
    }
    this.reservation = options.budget?.open();
    if (method.kind === 'bidi') this.listeners = method.open(this);
    stream.on('data', (chunk: Buffer) => this.data(chunk));
    stream.once('end', () => this.after(() => this.halfClosed()));
  }

  /** Why the call cannot start (no such method, an encoding not read, a bad grpc-timeout); starts its deadline otherwise. */
  private refusal(timeout: string | string[] | undefined): GrpcStatusError | undefined {
    if (this.method === undefined) return new GrpcStatusError(GrpcCode.UNIMPLEMENTED, `The server does not implement the method ${this.path}`);
    if (!knownEncoding(this.encoding)) {
      return new GrpcStatusError(
        GrpcCode.UNIMPLEMENTED,
        `the request is compressed with "${this.encoding}", which this server does not read (it reads ${ACCEPTED_ENCODINGS})`,
      );
    }
    if (typeof timeout !== 'string') return undefined;
    const ms = parseTimeout(timeout);
    if (ms === undefined) return new GrpcStatusError(GrpcCode.INTERNAL, `invalid grpc-timeout "${timeout}"`);
    // setTimeout waits at most 2^31-1 ms (24.8 days) and turns anything longer into 1 ms, with a warning on
    // stderr: a deadline that far off (up to 99999999H is valid) is no deadline, as for a client that sends none.
    if (ms > MAX_TIMER_MS) return undefined;
    this.timer = setTimeout(() => this.expire(), Math.max(0, Math.ceil(ms)));
    return undefined;
  }

  get open(): boolean {
    return !this.done;
  }

  get signal(): Cancellation {
    return this.gone;
  }

  write(message: Record<string, unknown>): void {
    if (this.done || this.stream.destroyed) return;
    let frame: Buffer;
    try {
      frame = frameMessage((this.method as GrpcMethod).encode(message));
    } catch (error) {
      return this.fail(new GrpcStatusError(GrpcCode.INTERNAL, `cannot encode the response: ${(error as Error).message}`));
    }
    this.sendHeaders();
    if (this.stream.write(frame) || this.drainPending) return;
    // The client is not taking its answers: its requests are not read until it does, so that HTTP/2 flow
    // control holds it back, instead of the server answering every request it sends into a buffer without bound.
    // The listener is keyed on the backed-up answers, not on isPaused(): a stream that too many waiting
    // requests paused first would otherwise never be resumed once its answers drain.
    this.drainPending = true;
    this.stream.pause();
    this.stream.once('drain', () => {
      this.drainPending = false;
      this.resume();
    });
  }

  /** Reads the stream's requests again, unless its answers are still backed up or too many requests wait. */
  private resume(): void {
    if (this.done || this.failure !== undefined || this.stream.writableNeedDrain || this.tooManyWaiting()) return;
    this.stream.resume();
  }

  private tooManyWaiting(): boolean {
    return this.waitingBytes >= this.options.maxMessageLength || this.waiting >= MAX_WAITING;
  }

  end(): void {
    if (this.failure !== undefined) return this.fail(this.failure.error, this.failure.stopReading);
    this.finish({ 'grpc-status': String(GrpcCode.OK) });
  }

  private data(chunk: Buffer): void {
    if (this.done || this.failure !== undefined) return;
    let messages: RawMessage[];
    try {
      this.reservation?.take(chunk.byteLength);
      messages = this.deframer.push(chunk);
    } catch (error) {
      // Past the budget or the size limit: answered now, and the rest of the request is not read.
      this.refuse(error instanceof GrpcStatusError ? error : new GrpcStatusError(GrpcCode.RESOURCE_EXHAUSTED, (error as Error).message), true);
      return;
    }
    if (this.method?.kind === 'bidi' && this.reservation !== undefined && this.options.budget !== undefined) {
      // A stream holds only the message arriving: a long stream of small messages does not add up.
      this.reservation.release();
      this.reservation = this.options.budget.open();
      this.reservation.take(this.deframer.heldBytes);
    }
    for (const message of messages) {
      if (message.compressed || this.queue !== undefined) {
        // Decompressed at once, handed over in turn.
        const decoded = decodeMessage(message, this.encoding, this.options.maxMessageLength);
        this.enqueue(async () => this.received(this.count(await decoded)));
      } else this.received(message.bytes);
    }
  }

  /**
   * A decompressed message's bytes, counted against the budget as well: the compressed ones alone would let
   * a stream of small gzip bombs hold --max-request-size each, past --max-buffered.
   */
  private count(bytes: Buffer): Buffer {
    try {
      this.reservation?.take(bytes.byteLength);
    } catch (error) {
      throw new GrpcStatusError(GrpcCode.RESOURCE_EXHAUSTED, (error as Error).message);
    }
    return bytes;
  }

  /** Runs `step` after the messages being decompressed, or now when there are none. */
  private after(step: () => void): void {
    if (this.queue === undefined) step();
    else this.enqueue(step);
  }

  private enqueue(step: () => void | Promise<void>): void {
    const next = (this.queue ?? Promise.resolve()).then(step).catch((error: unknown) => this.refuse(asStatus(error)));
    this.queue = next;
    void next.then(() => {
      if (this.queue === next) this.queue = undefined;
    });
  }

  private received(bytes: Buffer): void {
    if (this.done || this.failure !== undefined) return;
    const method = this.method as GrpcMethod;
    let request: Record<string, unknown>;
    try {
      request = method.decode(bytes);
    } catch (error) {
      return this.refuse(new GrpcStatusError(GrpcCode.INTERNAL, `cannot decode the request message: ${(error as Error).message}`));
    }
    if (this.listeners !== undefined) this.wait(this.listeners.message(request), bytes.byteLength);
    else if (this.request !== undefined)
      this.fail(new GrpcStatusError(GrpcCode.UNIMPLEMENTED, `a second request message on the unary method ${this.path}`));
    else this.request = request;
  }

  /**
   * Counts a stream's request until it is answered: a client pipelining requests faster than the model
   * answers them is held back by flow control once they add up, rather than queued without bound (the
   * budget counts each message only while it arrives).
   */
  private wait(answered: unknown, bytes: number): void {
    if (!(answered instanceof Promise)) return;
    this.waiting += 1;
    this.waitingBytes += bytes;
    if (this.tooManyWaiting()) this.stream.pause();
    const settled = (): void => {
      this.waiting -= 1;
      this.waitingBytes -= bytes;
      if (this.stream.isPaused()) this.resume();
    };
    // A rejection is the method's to report; here it only ends the wait (finally would pass it on, unhandled).
    answered.then(settled, settled);
  }

  private halfClosed(): void {
    if (this.done || this.failure !== undefined) return;
    // A message cut short by the end of the request is an error, not a message that was never sent.
    const incomplete = this.deframer.incomplete;
    if (incomplete !== undefined) return this.refuse(new GrpcStatusError(GrpcCode.INTERNAL, `the request ended inside a message (${incomplete})`));
    if (this.listeners !== undefined) return this.listeners.halfClose();
    const method = this.method as UnaryMethod;
    const request = this.request;
    if (request === undefined) return this.fail(new GrpcStatusError(GrpcCode.UNIMPLEMENTED, `no request message on the unary method ${this.path}`));
    let answer: Promise<Record<string, unknown>>;
    try {
      answer = method.handle(request, this);
    } catch (error) {
      return this.fail(asStatus(error));
    }
    answer.then(
      (response) => {
        if (this.done) return;
        this.write(response);
        this.end();
      },
      (error: unknown) => this.fail(asStatus(error)),
    );
  }

  private sendHeaders(): void {
    if (this.stream.headersSent) return;
    this.stream.respond(responseHeaders(), { waitForTrailers: true });
    this.stream.once('wantTrailers', () => {
      if (this.trailers !== undefined && !this.stream.destroyed) this.stream.sendTrailers(this.trailers);
    });
  }

  /** Ends the call with `trailers` (its status), trailers-only when nothing was sent yet. */
  private finish(trailers: OutgoingHttpHeaders, stopReading = false): void {
    if (this.done) return;
    this.done = true;
    this.trailers = trailers;
    this.settle();
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    if (stream.headersSent) stream.end();
    else stream.respond({ ...responseHeaders(), ...trailers }, { endStream: true });
    // A request still arriving is cut after the status (RST_STREAM), so that no more of it is sent or read;
    // otherwise what is left of it is read and dropped. The reset waits a turn of the event loop: submitted at
    // once, nghttp2 would drop the status frame queued before it, and the client would see only CANCELLED.
    if (stopReading && !stream.readableEnded) setImmediate(() => stream.close(http2Constants.NGHTTP2_CANCEL));
    else stream.resume();
  }

  /**
   * A request the call cannot read: a unary call fails now; a stream stops reading and ends with the error
   * once the answers to the requests before it are written (its method is told of the half-close and ends the
   * call when they are), so that those answers are not lost with it.
   */
  private refuse(error: GrpcStatusError, stopReading = false): void {
    if (this.listeners === undefined || this.done) return this.fail(error, stopReading);
    if (this.failure !== undefined) return;
    this.failure = { error, stopReading };
    this.stream.pause();
    this.listeners.halfClose();
  }

  private fail(error: GrpcStatusError, stopReading = false): void {
    this.finish({ 'grpc-status': String(error.code), 'grpc-message': this.fitted(percentEncode(error.message)) }, stopReading);
  }

  /**
   * grpc-message cut to what the client takes in one header list (its SETTINGS_MAX_HEADER_LIST_SIZE, 8 KiB
   * at most): a longer one (a message quoting a 200 KB model name) makes nghttp2 reset the stream, and the
   * client gets no status at all.
   */
  private fitted(encoded: string): string {
    const limit = Math.min(this.stream.session?.remoteSettings.maxHeaderListSize ?? MAX_MESSAGE_HEADER, MAX_MESSAGE_HEADER) - 1024;
    if (encoded.length <= limit) return encoded;
    // Not inside a %XX.
    return `${encoded.slice(0, Math.max(0, limit - 3)).replace(/%[0-9A-F]?$/, '')}...`;
  }

  private expire(): void {
    this.timer = undefined;
    this.gone.set();
    this.fail(new GrpcStatusError(GrpcCode.DEADLINE_EXCEEDED, 'Deadline Exceeded'), true);
  }

  /** The stream closed: a call not yet ended was cancelled by its client (or its connection). */
  private closed(): void {
    if (!this.done) {
      this.done = true;
      this.gone.set();
    }
    this.settle();
    this.reservation?.release();
  }

  private settle(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** A method's failure as a status: a GrpcStatusError as it is, anything else UNKNOWN with its message. */
function asStatus(error: unknown): GrpcStatusError {
  if (error instanceof GrpcStatusError) return error;
  return new GrpcStatusError(GrpcCode.UNKNOWN, error instanceof Error ? error.message : String(error));
}
