import { promisify } from 'node:util';
import { gunzip, inflate, type InputType, type ZlibOptions } from 'node:zlib';

/**
 * The wire format of gRPC over HTTP/2, as the protocol document defines it
 * (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md): the
 * Length-Prefixed-Message framing of request and response bodies, the
 * grpc-timeout header, the percent-encoding of grpc-message, and the
 * message encodings a client may compress with. No sockets here:
 * grpc-server.ts drives the streams.
 */

/** The status codes of gRPC (https://github.com/grpc/grpc/blob/master/doc/statuscodes.md) used by the server. */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

/** A call's end that is not OK: a status code and its message, sent in the trailers. */
export class GrpcStatusError extends Error {
  constructor(
    readonly code: GrpcCode,
    message: string,
  ) {
    super(message);
    this.name = 'GrpcStatusError';
  }
}

/** The Compressed-Flag (1 byte) and Message-Length (4 bytes, big-endian) before every message. */
export const PREFIX_BYTES = 5;

/** The encodings a request may be compressed with, in grpc-accept-encoding's order. */
export const ACCEPTED_ENCODINGS = 'identity,deflate,gzip';

/** A Length-Prefixed-Message around an uncompressed message. */
export function frameMessage(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(PREFIX_BYTES + message.byteLength);
  out[0] = 0;
  out.writeUInt32BE(message.byteLength, 1);
  out.set(message, PREFIX_BYTES);
  return out;
}

/** One message as it came off the stream: still compressed when `compressed` is set. */
export interface RawMessage {
  readonly compressed: boolean;
  readonly bytes: Buffer;
}

/**
 * Cuts a request body into its messages as the chunks arrive. A message
 * longer than `maxLength` is refused from its prefix, before any of it is
 * held (the message is C-core's, which Triton's server answers).
 */
export class MessageDeframer {
  private readonly prefix = Buffer.alloc(PREFIX_BYTES);
  private prefixSeen = 0;
  private compressed = false;
  private body: Buffer | undefined;
  private bodySeen = 0;

  constructor(private readonly maxLength: number) {}

  /** The bytes of the message arriving now (0 between messages). */
  get heldBytes(): number {
    return this.prefixSeen < PREFIX_BYTES ? this.prefixSeen : PREFIX_BYTES + this.bodySeen;
  }

  /** How much of a message cut short is held, for the error when the request ends there; undefined between messages. */
  get incomplete(): string | undefined {
    if (this.prefixSeen === 0) return undefined;
    if (this.prefixSeen < PREFIX_BYTES) return `${this.prefixSeen} of the ${PREFIX_BYTES} bytes of its prefix`;
    return `${this.bodySeen} of ${this.body?.byteLength ?? 0} bytes`;
  }

  /** The messages completed by `chunk`; throws RESOURCE_EXHAUSTED for one past the limit. */
  push(chunk: Buffer): RawMessage[] {
    const out: RawMessage[] = [];
    let i = 0;
    while (i < chunk.byteLength) {
      if (this.prefixSeen < PREFIX_BYTES) {
        // The common case, a whole message in one chunk, is cut without copying.
        if (this.prefixSeen === 0 && chunk.byteLength - i >= PREFIX_BYTES) {
          const length = chunk.readUInt32BE(i + 1);
          this.check(length);
          if (chunk.byteLength - i - PREFIX_BYTES >= length) {
            out.push({ compressed: chunk[i] !== 0, bytes: chunk.subarray(i + PREFIX_BYTES, i + PREFIX_BYTES + length) });
            i += PREFIX_BYTES + length;
            continue;
          }
        }
        this.prefix[this.prefixSeen++] = chunk[i++] ?? 0;
        if (this.prefixSeen < PREFIX_BYTES) continue;
        const length = this.prefix.readUInt32BE(1);
        this.check(length);
        this.compressed = this.prefix[0] !== 0;
        this.body = Buffer.allocUnsafe(length);
        this.bodySeen = 0;
      }
      const body = this.body ?? Buffer.alloc(0);
      const n = Math.min(body.byteLength - this.bodySeen, chunk.byteLength - i);
      chunk.copy(body, this.bodySeen, i, i + n);
      this.bodySeen += n;
      i += n;
      if (this.bodySeen === body.byteLength) {
        out.push({ compressed: this.compressed, bytes: body });
        this.prefixSeen = 0;
        this.body = undefined;
      }
    }
    return out;
  }

  private check(length: number): void {
    if (length > this.maxLength)
      throw new GrpcStatusError(GrpcCode.RESOURCE_EXHAUSTED, `Received message larger than max (${length} vs. ${this.maxLength})`);
  }
}

const decompressors: Readonly<Record<string, (input: InputType, options: ZlibOptions) => Promise<Buffer>>> = {
  // gRPC's "deflate" is zlib's format (RFC 1950), which inflate reads.
  deflate: promisify(inflate),
  gzip: promisify(gunzip),
};

/** True for a grpc-encoding this server can read (absent means identity). */
export function knownEncoding(encoding: string): boolean {
  return encoding === 'identity' || encoding in decompressors;
}

/**
 * A message's bytes, decompressed with the call's grpc-encoding when its
 * flag says so, and never more than `maxLength` of them (a small message can
 * inflate to gigabytes).
 */
export async function decodeMessage(message: RawMessage, encoding: string, maxLength: number): Promise<Buffer> {
  if (!message.compressed) return message.bytes;
  const decompress = decompressors[encoding];
  if (decompress === undefined)
    throw new GrpcStatusError(GrpcCode.INTERNAL, `a message is flagged as compressed, but the call's grpc-encoding is "${encoding}"`);
  try {
    return await decompress(message.bytes, { maxOutputLength: maxLength });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      throw new GrpcStatusError(GrpcCode.RESOURCE_EXHAUSTED, `Received message that decompresses to a size larger than ${maxLength}`);
    throw new GrpcStatusError(GrpcCode.INTERNAL, `cannot decompress a ${encoding} message: ${(error as Error).message}`);
  }
}

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000_001 };

/**
 * The milliseconds of a grpc-timeout header (TimeoutValue: 1 to 8 digits,
 * TimeoutUnit: H M S m u n), or undefined when the value is not one.
 */
export function parseTimeout(value: string): number | undefined {
  const match = /^(\d{1,8})([HMSmun])$/.exec(value.trim());
  if (match === null) return undefined;
  return Number(match[1]) * (TIMEOUT_UNIT_MS[match[2] ?? ''] ?? NaN);
}

/**
 * grpc-message's Percent-Encoded form: bytes of the UTF-8 text outside
 * space..tilde, and '%' itself, as %XX; a space at either end too, since
 * an HTTP field value may not begin or end with one.
 */
export function percentEncode(text: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text) && !text.startsWith(' ') && !text.endsWith(' ')) return text;
  const bytes = Buffer.from(text, 'utf8');
  let out = '';
  bytes.forEach((b, i) => {
    const edge = b === 0x20 && (i === 0 || i === bytes.byteLength - 1);
    out += b < 0x20 || b > 0x7e || b === 0x25 || edge ? `%${b.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(b);
  });
  return out;
}
