import { access, open, unlink, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createDeflate, crc32 } from 'node:zlib';
import { commitAtomically } from '../io/commit.js';
import { removeStaleSiblings, tempSibling } from '../io/temp-names.js';
import { ErrorCode, PopefError, destinationExists, ioError } from '../errors.js';
import { checkCount, checkMetadata, checkName, checkTensorInfo, invalid, toLength } from '../schema/check-values.js';
import { encodeDescriptorOf, encodeMetadata } from '../schema/encode.js';
import { sizeInBytes, type Metadata, type TensorInfo } from '../schema/model.js';
import { BlobType, Codec, HEADER_SIZE, LAYOUT_VERSION, Limits } from './constants.js';
import { END_OF_SEGMENT, END_PAYLOAD_SIZE, align, encodeHeader } from './header.js';
import { PopefFile } from './reader.js';

/** Bytes of a payload: in memory, or streamed chunk by chunk (never held whole). */
export type PayloadSource = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

/** How PopefWriter.create writes a file. */
export interface WriterOptions {
  /** Replace an existing file (atomically). Without it an existing file is an error. */
  readonly force?: boolean;
  /** Add blobs to the end of an existing open-layout file instead of creating one. */
  readonly append?: boolean;
  /** zlib level for compressed executables (default 6). Part of what makes output deterministic. */
  readonly compressionLevel?: number;
  /** Stops a write in progress (Ctrl-C): the writer aborts and removes what it wrote. */
  readonly signal?: AbortSignal;
}

/** How one blob is written (writeBlob): its header fields and descriptor, and what its payload must be. */
interface BlobSpec {
  readonly type: number;
  readonly codec: number;
  /** The descriptor for a payload of this uncompressed size; called first with 0 for a placeholder of the same length. */
  readonly descriptor: (uncompressedSize: number) => Uint8Array;
  /** The uncompressed length the payload must have, when the blob type fixes it. */
  readonly expectedLength?: number;
  /** The header's layout version (default LAYOUT_VERSION). */
  readonly version?: string;
  /** Copied as given: the payload is stored as it is (no compression) and the placeholder is the descriptor. */
  readonly raw?: boolean;
}

/** How one executable blob is written. */
export interface ExecutableOptions {
  /** Store the executable as one zlib stream. */
  readonly compress?: boolean;
}

/** Raw blob for pass-through of blob types this code does not model. */
export interface RawBlob {
  readonly typeCode: number;
  readonly version: string;
  readonly codec: number;
  readonly descriptor: Uint8Array;
}

const ZEROS = new Uint8Array(8);

/**
 * Writes PopEF open-layout files. Payloads are streamed: each blob's header
 * is written last, once its payload length and checksum are known, so no
 * payload is ever held whole in memory. A new file is written to a
 * temporary file beside the destination and moved into place by `close()`;
 * any error removes it (or, in append mode, cuts the file back to its
 * original length), so no half-written file is ever left behind.
 */
export class PopefWriter {
  private position: number;
  private segmentStart: number;
  private segmentBlobs = 0;
  private state: 'open' | 'busy' | 'closed' = 'open';
  private readonly executableNames: Set<string>;

  private constructor(
    private readonly handle: FileHandle,
    readonly path: string,
    private readonly tempPath: string | undefined,
    private readonly originalSize: number,
    private readonly options: WriterOptions,
    existingExecutables: readonly string[],
  ) {
    this.position = originalSize;
    this.segmentStart = originalSize;
    this.executableNames = new Set(existingExecutables);
  }

  /** Starts a file at `path` (written to a temporary name and renamed into place by close), or appends to one with `append`. */
  static async create(path: string, options: WriterOptions = {}): Promise<PopefWriter> {
    if (options.append === true) return PopefWriter.openForAppend(path, options);
    if (options.force !== true && (await exists(path))) {
      throw destinationExists(path, 'destination already exists', 'name');
    }
    await removeStaleSiblings(path);
    const tempPath = tempSibling(path, 'tmp');
    let handle: FileHandle;
    try {
      handle = await open(tempPath, 'wx');
    } catch (error) {
      throw ioError(error, path, 'create the file');
    }
    return new PopefWriter(handle, path, tempPath, 0, options, []);
  }

  private static async openForAppend(path: string, options: WriterOptions): Promise<PopefWriter> {
    // The existing file must be whole and valid: appending to a damaged file
    // would bury the damage under new blobs.
    const existing = await PopefFile.open(path);
    const names = existing.blobs.flatMap((b) => (b.kind === 'executable' ? [b.name] : []));
    const size = existing.size;
    await existing.close();
    let handle: FileHandle;
    try {
      handle = await open(path, 'r+');
    } catch (error) {
      throw ioError(error, path, 'open the file for appending');
    }
    return new PopefWriter(handle, path, undefined, size, options, names);
  }

  /** Writes a Poplar executable blob named `name`, compressed if asked. */
  async writeExecutable(name: string, payload: PayloadSource, options: ExecutableOptions = {}): Promise<void> {
    checkName('executable name', name, false);
    if (this.executableNames.has(name)) invalid(`executable name "${name}" is already used in this file`, 'executable name');
    const compress = options.compress === true;
    await this.writeBlob(
      {
        type: BlobType.POPLAR_EXECUTABLE,
        codec: compress ? Codec.ZLIB : Codec.NONE,
        descriptor: (size) => encodeDescriptorOf({ name, uncompressedSize: BigInt(size) }),
      },
      payload,
    );
    this.executableNames.add(name);
  }

  /** Writes a metadata blob (checked first: a value the layout cannot hold is an error). */
  async writeMetadata(metadata: Metadata): Promise<void> {
    checkMetadata(metadata);
    const bytes = encodeMetadata(metadata);
    if (bytes.byteLength > Limits.maxMetadataBytes)
      invalid(`metadata encodes to ${bytes.byteLength} bytes, over the limit of ${Limits.maxMetadataBytes}`, 'metadata');
    await this.writeBlob(
      { type: BlobType.METADATA, codec: Codec.NONE, descriptor: () => encodeDescriptorOf({}), expectedLength: bytes.byteLength },
      bytes,
    );
  }

  /** Writes a tensor data blob; the payload must be exactly the tensor's size. */
  async writeTensorData(desc: { readonly name: string; readonly tensorInfo: TensorInfo }, payload: PayloadSource): Promise<void> {
    checkName('tensor name', desc.name, false);
    checkTensorInfo('tensor info', desc.tensorInfo);
    const size = toLength(sizeInBytes(desc.tensorInfo), 'tensor size');
    await this.writeBlob(
      {
        type: BlobType.DATA_TENSOR,
        codec: Codec.NONE,
        descriptor: () => encodeDescriptorOf({ name: desc.name, tensorInfo: desc.tensorInfo }),
        expectedLength: size,
      },
      payload,
    );
  }

  /** Writes a feed data blob of `sampleCount` samples of the tensor. */
  async writeFeedData(
    desc: { readonly name: string; readonly tensorInfo: TensorInfo; readonly sampleCount: number },
    payload: PayloadSource,
  ): Promise<void> {
    checkName('feed name', desc.name, true);
    checkTensorInfo('tensor info', desc.tensorInfo);
    checkCount('sample count', desc.sampleCount);
    const size = toLength(sizeInBytes(desc.tensorInfo) * BigInt(desc.sampleCount), 'feed size');
    const descriptor = (): Uint8Array => encodeDescriptorOf({ name: desc.name, tensorInfo: desc.tensorInfo, sampleCount: BigInt(desc.sampleCount) });
    await this.writeBlob({ type: BlobType.DATA_FEED, codec: Codec.NONE, descriptor, expectedLength: size }, payload);
  }

  /** Writes an opaque blob that belongs to `executable`. */
  async writeOpaque(desc: { readonly name: string; readonly executable: string }, payload: PayloadSource): Promise<void> {
    checkName('opaque name', desc.name, true);
    checkName('executable name', desc.executable, true);
    await this.writeBlob(
      { type: BlobType.OPAQUE, codec: Codec.NONE, descriptor: () => encodeDescriptorOf({ name: desc.name, executable: desc.executable }) },
      payload,
    );
  }

  /** Copies a blob of a type this code does not model, byte for byte. */
  async writeRaw(raw: RawBlob, payload: PayloadSource): Promise<void> {
    if (!Number.isInteger(raw.typeCode) || raw.typeCode <= BlobType.OPAQUE || raw.typeCode > 0xfe) {
      invalid(`raw blob type code ${raw.typeCode} must be an unassigned code (5..254)`, 'typeCode');
    }
    if (!/^\d{1,5}\.\d{1,5}$/.test(raw.version)) invalid(`version ${JSON.stringify(raw.version)} is not MAJOR.MINOR`, 'version');
    if (!Number.isInteger(raw.codec) || raw.codec < 0 || raw.codec > 255) invalid(`codec ${raw.codec} is not a byte`, 'codec');
    if (raw.descriptor.byteLength > Limits.maxDescriptorBytes) invalid('descriptor too large', 'descriptor');
    await this.writeBlob({ type: raw.typeCode, codec: raw.codec, descriptor: () => raw.descriptor, version: raw.version, raw: true }, payload);
  }

  /** Closes the current segment with an end-of-segment marker. */
  async endSegment(): Promise<void> {
    const payload = new Uint8Array(END_PAYLOAD_SIZE);
    const view = new DataView(payload.buffer);
    view.setBigUint64(0, BigInt(this.position - this.segmentStart), true);
    view.setUint32(8, this.segmentBlobs, true);
    await this.writeBlob(
      { type: END_OF_SEGMENT, codec: Codec.NONE, descriptor: () => new Uint8Array(0), expectedLength: END_PAYLOAD_SIZE, raw: true },
      payload,
    );
    this.segmentStart = this.position;
    this.segmentBlobs = 0;
  }

  /** Ends the last segment (if it has blobs or the file is empty) and commits the file. */
  async close(): Promise<void> {
    if (this.state !== 'open') throw new Error(`PopefWriter is ${this.state}: close() needs an open writer`);
    if (this.segmentBlobs > 0 || this.position === 0) await this.endSegment();
    this.enter();
    try {
      await this.handle.close();
      if (this.tempPath !== undefined) await commitAtomically(this.tempPath, this.path, { force: this.options.force });
      this.state = 'closed';
    } catch (error) {
      await this.abort();
      throw error;
    }
  }

  /** Discards everything written by this writer. Safe to call at any time, more than once. */
  async abort(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    try {
      if (this.tempPath === undefined) await this.handle.truncate(this.originalSize);
    } catch {
      // Best effort: the handle may already be closed.
    }
    await this.handle.close().catch(() => undefined);
    if (this.tempPath !== undefined) await unlink(this.tempPath).catch(() => undefined);
  }

  private enter(): void {
    if (this.state !== 'open') throw new Error(`PopefWriter is ${this.state}: write one blob at a time, and not after close()`);
    this.state = 'busy';
  }

  private async writeBlob(spec: BlobSpec, payload: PayloadSource): Promise<void> {
    const { type: blobType, codec, descriptor: descriptorFor, expectedLength, version = LAYOUT_VERSION, raw = false } = spec;
    this.enter();
    try {
      const start = this.position;
      const placeholder = descriptorFor(0);
      const descriptorLength = placeholder.byteLength;
      const payloadOffset = start + HEADER_SIZE + align(descriptorLength);
      // Payload first, header last: the header needs the payload's length and CRC.
      const stored = await this.writePayload(payload, payloadOffset, codec === Codec.ZLIB && !raw);
      if (expectedLength !== undefined && stored.uncompressed !== expectedLength) {
        invalid(`payload has ${stored.uncompressed} bytes, but ${expectedLength} are required`, 'payload');
      }
      const descriptor = raw ? placeholder : descriptorFor(stored.uncompressed);
      if (descriptor.byteLength !== descriptorLength) throw new Error('descriptor length changed between placeholder and final encoding');
      await this.pad(payloadOffset + stored.length);
      const header = encodeHeader({
        blobType,
        codec,
        descriptorLength,
        payloadLength: stored.length,
        descriptorCrc: crc32(descriptor),
        payloadCrc: stored.crc,
        version,
      });
      await this.writeAt(header, start);
      await this.writeAt(descriptor, start + HEADER_SIZE);
      await this.pad(start + HEADER_SIZE + descriptorLength);
      this.position = payloadOffset + align(stored.length);
      if (blobType !== END_OF_SEGMENT) this.segmentBlobs += 1;
      this.state = 'open';
    } catch (error) {
      await this.abort();
      throw error;
    }
  }

  /** Streams the payload to `offset`, compressing if asked; returns stored length, CRC and input length. */
  private async writePayload(
    payload: PayloadSource,
    offset: number,
    compress: boolean,
  ): Promise<{ length: number; crc: number; uncompressed: number }> {
    let length = 0;
    let crc = 0;
    let uncompressed = 0;
    const store = async (chunk: Uint8Array): Promise<void> => {
      if (this.options.signal?.aborted === true) {
        throw new PopefError(ErrorCode.Io, 'interrupted; nothing was written', { file: this.path });
      }
      // The CRC is computed on this thread while the write runs on libuv's pool.
      const written = this.writeAt(chunk, offset + length);
      crc = crc32(chunk, crc);
      await written;
      length += chunk.byteLength;
    };
    if (!compress) {
      for await (const chunk of chunksOf(payload)) {
        await store(chunk);
        uncompressed += chunk.byteLength;
      }
      return { length, crc, uncompressed };
    }
    const deflate = createDeflate({ level: this.options.compressionLevel ?? 6 });
    const input = Readable.from(
      (async function* counted() {
        for await (const chunk of chunksOf(payload)) {
          uncompressed += chunk.byteLength;
          yield chunk;
        }
      })(),
    );
    input.on('error', (error) => deflate.destroy(error));
    input.pipe(deflate);
    for await (const chunk of deflate) await store(chunk as Buffer);
    return { length, crc, uncompressed };
  }

  private async pad(end: number): Promise<void> {
    const padding = align(end) - end;
    if (padding > 0) await this.writeAt(ZEROS.subarray(0, padding), end);
  }

  private async writeAt(bytes: Uint8Array, position: number): Promise<void> {
    let done = 0;
    try {
      while (done < bytes.byteLength) {
        const { bytesWritten } = await this.handle.write(bytes, done, bytes.byteLength - done, position + done);
        done += bytesWritten;
      }
    } catch (error) {
      throw ioError(error, this.path, 'write the file');
    }
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

async function* chunksOf(payload: PayloadSource): AsyncGenerator<Uint8Array> {
  if (payload instanceof Uint8Array) {
    if (payload.byteLength > 0) yield payload;
    return;
  }
  for await (const chunk of payload) {
    if (!(chunk instanceof Uint8Array)) throw new TypeError('payload chunks must be Uint8Array');
    if (chunk.byteLength > 0) yield chunk;
  }
}
