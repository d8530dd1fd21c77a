import type { Readable, Writable } from 'node:stream';
import { isDataType } from '../schema/model.js';
import type { Tensor, TensorSpec } from './plugin-api.js';

/**
 * Frames of the plugin protocol (PROTOCOL.md): 4-byte tag, u64 LE length,
 * payload. Control messages are JSON; tensor bytes follow their
 * announcement as raw frames, written without copying.
 */

export const PROTOCOL = 'popef-plugin/1';
/** Refuse frames beyond this: a corrupt length must not make the host allocate without bound. */
export const MAX_FRAME_BYTES = 16 * 1024 ** 3;

export interface Announcement extends TensorSpec {
  readonly bytes: number;
}

export type Message = Record<string, unknown> & { readonly type: string; readonly id: number };

export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
}

function header(tag: 'JSON' | 'TENS', length: number): Buffer {
  const h = Buffer.allocUnsafe(12);
  h.write(tag, 0, 'ascii');
  h.writeBigUInt64LE(BigInt(length), 4);
  return h;
}

/** Writes a message and the tensors it announces; resolves when the data is handed to the stream. */
export async function writeMessage(out: Writable, message: Message, tensors: readonly Uint8Array[] = []): Promise<void> {
  const json = Buffer.from(JSON.stringify(message), 'utf8');
  const chunks: Uint8Array[] = [header('JSON', json.length), json];
  for (const t of tensors) chunks.push(header('TENS', t.byteLength), t);
  let ok = true;
  for (const c of chunks) ok = out.write(c);
  if (!ok) {
    await new Promise<void>((resolve, reject) => {
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
}

export function announce(tensors: readonly Tensor[]): Announcement[] {
  return tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, bytes: t.data.byteLength }));
}

/**
 * Reads frames from a stream. `next()` resolves with the next message and
 * the tensors it announces; a malformed stream rejects with ProtocolError;
 * the end of the stream rejects with `ended`.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private waiting: (() => void) | undefined;
  private ended = false;
  private failure: Error | undefined;

  constructor(stream: Readable) {
    stream.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
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

  /** Exactly n bytes, waiting as needed; one copy at most. */
  private async take(n: number): Promise<Buffer> {
    while (this.buffered < n) {
      if (this.failure !== undefined) throw this.failure;
      if (this.ended) throw new ProtocolError('ended');
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
    const first = this.chunks[0];
    if (first !== undefined && first.length >= n) {
      // The common small case: no copy of the rest of the chunk.
      const out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let done = 0;
    while (done < n) {
      const c = this.chunks[0];
      if (c === undefined) throw new ProtocolError('internal: buffer accounting');
      const take = Math.min(c.length, n - done);
      c.copy(out, done, 0, take);
      done += take;
      if (take === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(take);
    }
    this.buffered -= n;
    return out;
  }

  private async frame(expect: 'JSON' | 'TENS'): Promise<Buffer> {
    const h = await this.take(12);
    const tag = h.toString('ascii', 0, 4);
    const length = h.readBigUInt64LE(4);
    if (tag !== expect) throw new ProtocolError(`expected a ${expect} frame, got tag ${JSON.stringify(tag)}`);
    if (length > BigInt(MAX_FRAME_BYTES)) throw new ProtocolError(`frame of ${length} bytes exceeds the limit of ${MAX_FRAME_BYTES}`);
    return this.take(Number(length));
  }

  async next(): Promise<{ message: Message; tensors: Tensor[] }> {
    const body = await this.frame('JSON');
    let message: Message;
    try {
      message = JSON.parse(body.toString('utf8')) as Message;
    } catch {
      throw new ProtocolError(`a JSON frame does not hold valid JSON: ${body.toString('utf8', 0, Math.min(body.length, 200))}`);
    }
    if (typeof message !== 'object' || typeof message.type !== 'string' || typeof message.id !== 'number') {
      throw new ProtocolError('a message lacks its "type" or "id"');
    }
    const announced = parseAnnouncements(message.tensors);
    const tensors: Tensor[] = [];
    for (const a of announced) {
      const data = await this.frame('TENS');
      if (data.length !== a.bytes) throw new ProtocolError(`tensor "${a.name}" was announced with ${a.bytes} bytes but its frame holds ${data.length}`);
      tensors.push({ name: a.name, dtype: a.dtype, shape: a.shape, data });
    }
    return { message, tensors };
  }
}

export function parseAnnouncements(value: unknown): Announcement[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ProtocolError('"tensors" is not a list');
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
    if (!ok) throw new ProtocolError(`tensor announcement ${i} is malformed: ${JSON.stringify(v)}`);
    return a as Announcement;
  });
}

export function parseSpecs(value: unknown, what: string): TensorSpec[] {
  if (!Array.isArray(value)) throw new ProtocolError(`"${what}" is not a list`);
  return value.map((v: unknown, i) => {
    const s = v as Partial<TensorSpec>;
    if (typeof s.name !== 'string' || typeof s.dtype !== 'string' || !isDataType(s.dtype) || !Array.isArray(s.shape) || !s.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new ProtocolError(`${what}[${i}] is not a tensor spec: ${JSON.stringify(v)}`);
    }
    return { name: s.name, dtype: s.dtype, shape: s.shape };
  });
}
