import type { Readable, Writable } from 'node:stream';
import { isDataType } from '../schema/model.js';
import type { Tensor, TensorSpec } from './plugin-api.js';

/**
 * Frames of the plugin protocol (PROTOCOL.md): 4-byte tag, u64 LE length,
 * payload. Control messages are JSON; tensor bytes follow their
 * announcement as raw frames, written without copying.
 */

export const PROTOCOL = 'popef-plugin/1';

/**
 * The limits of PROTOCOL.md ("Limits"), each checked against a frame's
 * announced length before a byte of it is buffered: a corrupt or hostile
 * length must not make the host allocate without bound (CWE-789).
 */
export const FRAME_LIMITS = {
  /**
   * A JSON control message. Real ones are kilobytes (a model's metadata in
   * an import is the largest); far below V8's longest string (about
   * 512 MiB), which a larger frame would hit as an abort, not an error.
   */
  controlBytes: 64 * 1024 ** 2,
  /** One TENS frame of a chunked tensor, which is streamed and never held whole. */
  chunkBytes: 16 * 1024 ** 3,
  /** A tensor sent whole (one TENS frame, held in one buffer): Node's largest Buffer on 64-bit Node 20. */
  wholeTensorBytes: 4 * 1024 ** 3,
} as const;
/** The control and chunk limits by the names PROTOCOL.md and the bridge's frames.py give them. */
export const MAX_JSON_FRAME_BYTES = FRAME_LIMITS.controlBytes;
export const MAX_FRAME_BYTES = FRAME_LIMITS.chunkBytes;

/** How much of a chunk frame is gathered before it is handed on (see `chunks`). */
const BATCH_BYTES = 2 * 1024 * 1024;

export interface Announcement extends TensorSpec {
  readonly bytes: number;
  /**
   * The bytes come as several TENS frames whose lengths add up to `bytes`,
   * so that neither side holds a large payload whole (import/export).
   */
  readonly chunked?: boolean;
}

export type Message = Record<string, unknown> & { readonly type: string; readonly id: number };

/**
 * What is wrong with the stream, for the host to act on without reading the
 * message: `ended` (the other side closed it: its exit is the story),
 * `malformed` (bytes that are not the protocol) or `limit` (a size beyond
 * FRAME_LIMITS or the request's own bounds).
 */
export type ProtocolErrorKind = 'ended' | 'malformed' | 'limit';

export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  constructor(
    readonly kind: ProtocolErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** What one reply may announce, beyond FRAME_LIMITS: a run's result holds no more, and no larger, tensors than the model's outputs. */
export interface ReplyBounds {
  readonly maxTensors: number;
  readonly maxTensorBytes: number;
  /** Names the bound in errors: "the model's 1 output". */
  readonly what: string;
}

function header(tag: 'JSON' | 'TENS', length: number): Buffer {
  const h = Buffer.allocUnsafe(12);
  h.write(tag, 0, 'ascii');
  h.writeBigUInt64LE(BigInt(length), 4);
  return h;
}

/**
 * The time spent waiting for the other side: for bytes to read, or for room
 * to write. A plugin's timeout is measured on this clock, so that the host's
 * own work (parsing a reply, storing a chunk) is never counted against it.
 */
export class WaitClock {
  private waiters = 0;
  private since = 0;
  private total = 0;

  /** Milliseconds waited so far, the current wait included. */
  get waitedMs(): number {
    return this.total + (this.waiters > 0 ? performance.now() - this.since : 0);
  }

  /** Counts the time until `wait` settles (waits that overlap count once). */
  async during<T>(wait: Promise<T>): Promise<T> {
    if (this.waiters++ === 0) this.since = performance.now();
    try {
      return await wait;
    } finally {
      if (--this.waiters === 0) this.total += performance.now() - this.since;
    }
  }
}

/** Writes a message and the tensors it announces; resolves when the data is handed to the stream. */
export async function writeMessage(out: Writable, message: Message, tensors: readonly Uint8Array[] = [], clock?: WaitClock): Promise<void> {
  const json = Buffer.from(JSON.stringify(message), 'utf8');
  // The plugin applies the same limit: a message it would refuse is not sent.
  if (json.length > FRAME_LIMITS.controlBytes)
    throw new ProtocolError(
      'limit',
      `the "${message.type}" message is ${json.length} bytes, more than the protocol's ${FRAME_LIMITS.controlBytes} for a control message`,
    );
  const chunks: Uint8Array[] = [header('JSON', json.length), json];
  for (const t of tensors) chunks.push(header('TENS', t.byteLength), t);
  let ok = true;
  for (const c of chunks) ok = out.write(c);
  if (!ok) await (clock?.during(drained(out)) ?? drained(out));
}

/** Resolves when `out` can take more, rejects if it fails first. */
function drained(out: Writable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onDrain = (): void => {
      out.off('error', onError);
      resolve();
    };
    const onError = (error: Error): void => {
      out.off('drain', onDrain);
      reject(error);
    };
    out.once('drain', onDrain);
    out.once('error', onError);
  });
}

/** Writes one tensor's bytes as chunk frames, reading them from `source` as they come. */
export async function writeChunks(out: Writable, source: AsyncIterable<Uint8Array>, clock?: WaitClock): Promise<number> {
  let total = 0;
  for await (const chunk of source) {
    if (chunk.byteLength === 0) continue;
    total += chunk.byteLength;
    const ok = out.write(header('TENS', chunk.byteLength)) && out.write(chunk);
    if (!ok) await (clock?.during(drained(out)) ?? drained(out));
  }
  return total;
}

export function announce(tensors: readonly Tensor[]): Announcement[] {
  return tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, bytes: t.data.byteLength }));
}

/** From this size on, a whole frame is copied into place as it arrives (FrameReader.takeLarge). */
const LARGE_FRAME = 1 << 20;

/**
 * Reads frames from a stream. `next()` resolves with the next message and
 * the tensors it announces; a malformed stream rejects with a ProtocolError
 * of kind `malformed` or `limit`, the end of the stream with kind `ended`.
 */
export class FrameReader {
  private buffers: Buffer[] = [];
  private buffered = 0;
  private waiting: (() => void) | undefined;
  private ended = false;
  private failure: Error | undefined;
  /**
   * Flow control: a plugin streaming an import can write faster than the
   * host stores, so reading stops while this much is buffered and nobody
   * waits for more (a single frame larger than this is still read whole).
   */
  private static readonly HIGH_WATER = 8 * 1024 * 1024;
  private paused = false;
  private wanted = 0;

  constructor(
    private readonly stream: Readable,
    /** Where the time spent waiting for bytes is counted. */
    readonly clock = new WaitClock(),
  ) {
    stream.on('data', (chunk: Buffer) => {
      this.buffers.push(chunk);
      this.buffered += chunk.length;
      if (this.buffered >= FrameReader.HIGH_WATER && this.buffered >= this.wanted) {
        this.paused = true;
        stream.pause();
      }
      this.wake();
    });
    stream.on('end', () => {
      this.ended = true;
      this.wake();
    });
    stream.on('error', (error: Error) => {
      this.failure = error;
      this.wake();
    });
  }

  private wake(): void {
    const w = this.waiting;
    this.waiting = undefined;
    w?.();
  }

  /** Reading goes on when less than the window, or less than the `n` bytes awaited, is buffered. */
  private resumeUnder(n: number): void {
    this.wanted = n;
    if (this.paused && this.buffered < Math.max(n, FrameReader.HIGH_WATER)) {
      this.paused = false;
      this.stream.resume();
    }
  }

  /** Waits until at least `n` bytes are buffered; the stream's failure or end rejects. */
  private async buffer(n: number): Promise<void> {
    while (this.buffered < n) {
      if (this.failure !== undefined) throw this.failure;
      if (this.ended) throw new ProtocolError('ended', 'the stream ended');
      await this.clock.during(new Promise<void>((resolve) => (this.waiting = resolve)));
    }
  }

  /** Exactly n bytes, waiting as needed; one copy at most. */
  private async take(n: number): Promise<Buffer> {
    this.resumeUnder(n);
    await this.buffer(n);
    const first = this.buffers[0];
    if (first !== undefined && first.length >= n) {
      // The common small case: no copy of the rest of the chunk.
      const out = first.subarray(0, n);
      if (first.length === n) this.buffers.shift();
      else this.buffers[0] = first.subarray(n);
      this.buffered -= n;
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    this.drainInto(out, 0, n);
    this.buffered -= n;
    return out;
  }

  /** Moves `n` buffered bytes into `out` at `at`; the caller adjusts `buffered`. */
  private drainInto(out: Buffer, at: number, n: number): void {
    let done = 0;
    while (done < n) {
      const c = this.buffers[0];
      if (c === undefined) throw new Error('internal: buffer accounting');
      const take = Math.min(c.length, n - done);
      c.copy(out, at + done, 0, take);
      done += take;
      if (take === c.length) this.buffers.shift();
      else this.buffers[0] = c.subarray(take);
    }
  }

  /**
   * Exactly n bytes of a large frame, copied into place as they arrive:
   * the copy overlaps the transfer instead of following it, and nothing
   * but the destination grows.
   */
  private async takeLarge(n: number, into?: Buffer): Promise<Buffer> {
    const out = into ?? Buffer.allocUnsafe(n);
    let done = 0;
    while (done < n) {
      this.resumeUnder(n - done);
      await this.buffer(1);
      const step = Math.min(this.buffered, n - done);
      this.drainInto(out, done, step);
      this.buffered -= step;
      done += step;
    }
    return out;
  }

  /** Up to n bytes (at least one), as they arrived: no copy, no waiting for the rest. */
  private async takeSome(n: number): Promise<Buffer> {
    this.resumeUnder(1);
    await this.buffer(1);
    const first = this.buffers[0];
    if (first === undefined) throw new Error('internal: buffer accounting');
    return this.take(Math.min(n, first.length));
  }

  /** The length of the next frame, which must have tag `expect` and be no longer than `limit` (what it is, for the error). */
  private async frameLength(expect: 'JSON' | 'TENS', limit: number, what: string): Promise<number> {
    const h = await this.take(12);
    const tag = h.toString('ascii', 0, 4);
    const length = h.readBigUInt64LE(4);
    if (tag !== expect) throw new ProtocolError('malformed', `expected a ${expect} frame, got tag ${JSON.stringify(tag)}`);
    if (length > BigInt(limit)) throw new ProtocolError('limit', `${what} of ${length} bytes exceeds the limit of ${limit}`);
    return Number(length);
  }

  /**
   * The next message without its tensors: the caller then reads each
   * announced tensor, in order, with `chunks()`. For chunked announcements.
   */
  async nextMessage(bounds?: ReplyBounds): Promise<{ message: Message; announced: Announcement[] }> {
    const n = await this.frameLength('JSON', FRAME_LIMITS.controlBytes, 'a control message (JSON frame)');
    const body = n >= LARGE_FRAME ? await this.takeLarge(n) : await this.take(n);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new ProtocolError('malformed', `a JSON frame does not hold valid JSON: ${body.toString('utf8', 0, Math.min(body.length, 200))}`);
    }
    // `null` and arrays are JSON too: a message is an object with its type and id.
    const m = parsed as Partial<Message> | null;
    if (typeof m !== 'object' || m === null || typeof m.type !== 'string' || typeof m.id !== 'number') {
      throw new ProtocolError('malformed', 'a message lacks its "type" or "id"');
    }
    const message = m as Message;
    return { message, announced: parseAnnouncements(message.tensors, bounds) };
  }

  /**
   * The frames of one announced tensor, chunk by chunk, checking that they
   * add up to its size. With `reuse`, every chunk is a view of one buffer
   * that the next chunk overwrites: for a consumer that is done with each
   * chunk before it asks for the next (it saves the garbage of a fresh
   * buffer per chunk, which is most of the memory of a long import).
   */
  async *chunks(a: Announcement, reuse = false): AsyncGenerator<Uint8Array> {
    if (a.chunked !== true) {
      const data = await this.wholeTensor(a, undefined);
      if (data.length > 0) yield data;
      return;
    }
    // Each frame is passed on in the pieces the pipe delivered: no frame is
    // assembled whole, so memory stays at the flow-control window.
    let left = a.bytes;
    let shared: Buffer | undefined;
    while (left > 0) {
      const length = await this.frameLength('TENS', FRAME_LIMITS.chunkBytes, `a chunk of tensor "${a.name}"`);
      if (length === 0 || length > left) throw new ProtocolError('malformed', `a chunk of tensor "${a.name}" has ${length} bytes with ${left} left`);
      left -= length;
      // Pieces are gathered to BATCH_BYTES first: the consumer writes each
      // to disk, and a write per pipe read (64 KiB) costs more than a copy.
      let batch: Buffer[] = [];
      let batched = 0;
      for (let rest = length; rest > 0;) {
        const piece = await this.takeSome(rest);
        rest -= piece.length;
        batch.push(piece);
        batched += piece.length;
        if (batched >= BATCH_BYTES || rest === 0) {
          if (batch.length === 1) yield piece;
          else if (!reuse) yield Buffer.concat(batch, batched);
          else {
            // A batch overshoots BATCH_BYTES by less than one piece.
            if (shared === undefined || shared.length < batched) shared = Buffer.allocUnsafe(Math.max(batched, 2 * BATCH_BYTES));
            let at = 0;
            for (const b of batch) at += b.copy(shared, at);
            yield shared.subarray(0, batched);
          }
          batch = [];
          batched = 0;
        }
      }
    }
  }

  /**
   * The next message with all its tensors, each read whole; a tensor for
   * which `into` lends a buffer of exactly its size is received into it.
   */
  async next(into?: ReadonlyMap<string, Uint8Array>, bounds?: ReplyBounds): Promise<{ message: Message; tensors: Tensor[] }> {
    const { message, announced } = await this.nextMessage(bounds);
    const tensors: Tensor[] = [];
    for (const a of announced) tensors.push({ name: a.name, dtype: a.dtype, shape: a.shape, data: await this.wholeTensor(a, into?.get(a.name)) });
    return { message, tensors };
  }

  /** The single frame of an announced tensor that is not chunked. */
  private async wholeTensor(a: Announcement, lent: Uint8Array | undefined): Promise<Buffer> {
    const n = await this.frameLength('TENS', FRAME_LIMITS.wholeTensorBytes, `tensor "${a.name}", sent whole,`);
    if (n !== a.bytes) throw new ProtocolError('malformed', `tensor "${a.name}" was announced with ${a.bytes} bytes but its frame holds ${n}`);
    if (lent === undefined || lent.byteLength !== n) return n >= LARGE_FRAME ? this.takeLarge(n) : this.take(n);
    const into = Buffer.from(lent.buffer, lent.byteOffset, lent.byteLength);
    if (n >= LARGE_FRAME) return this.takeLarge(n, into);
    (await this.take(n)).copy(into);
    return into;
  }
}

export function parseAnnouncements(value: unknown, bounds?: ReplyBounds): Announcement[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ProtocolError('malformed', '"tensors" is not a list');
  if (bounds !== undefined && value.length > bounds.maxTensors)
    throw new ProtocolError('limit', `the reply announces ${value.length} tensors, more than ${bounds.what} (${bounds.maxTensors})`);
  return value.map((v: unknown, i) => {
    const a = v as Partial<Announcement>;
    const ok =
      typeof a.name === 'string' &&
      typeof a.dtype === 'string' &&
      isDataType(a.dtype) &&
      Array.isArray(a.shape) &&
      a.shape.every((d) => Number.isSafeInteger(d) && d >= 0) &&
      typeof a.bytes === 'number' &&
      Number.isSafeInteger(a.bytes) &&
      a.bytes >= 0;
    if (!ok) throw new ProtocolError('malformed', `tensor announcement ${i} is malformed: ${JSON.stringify(v).slice(0, 200)}`);
    if (bounds !== undefined && (a.bytes ?? 0) > bounds.maxTensorBytes)
      throw new ProtocolError(
        'limit',
        `tensor "${a.name ?? ''}" is announced with ${a.bytes ?? 0} bytes, more than the largest of ${bounds.what} (${bounds.maxTensorBytes})`,
      );
    return a as Announcement;
  });
}

export function parseSpecs(value: unknown, what: string): TensorSpec[] {
  if (!Array.isArray(value)) throw new ProtocolError('malformed', `"${what}" is not a list`);
  return value.map((v: unknown, i) => {
    const s = v as Partial<TensorSpec>;
    if (
      typeof s.name !== 'string' ||
      typeof s.dtype !== 'string' ||
      !isDataType(s.dtype) ||
      !Array.isArray(s.shape) ||
      !s.shape.every((d) => Number.isSafeInteger(d) && d >= 0)
    ) {
      throw new ProtocolError('malformed', `${what}[${i}] is not a tensor spec: ${JSON.stringify(v).slice(0, 200)}`);
    }
    return { name: s.name, dtype: s.dtype, shape: s.shape };
  });
}
