import { ErrorCode, PopefError } from '../errors.js';
import type { ByteSource } from '../io/byte-source.js';
import { Cursor } from '../io/cursor.js';
import { FileSource } from '../io/file-source.js';
import { crc32, inflate } from '../io/platform.js';
import { decodeDescriptor, decodeMetadata, verifyDescriptor, type RawDescriptor } from '../schema/decode.js';
import { sizeInBytes, type Metadata } from '../schema/model.js';
import type { Blob, BlobFrame, ReadWarning } from './blob.js';
import { BlobType, Codec, HEADER_SIZE, LAYOUT_MINOR, Limits } from './constants.js';
import { DecodedByBytes } from './decoded-by-bytes.js';
import { END_OF_SEGMENT, END_PAYLOAD_SIZE, align, beginsAsMagic, decodeHeader, hex, notOpenLayout, type BlobHeader } from './header.js';

/** Chunk size for streamed payload reads: large enough for throughput, small for memory. */
export const STREAM_CHUNK = 1024 * 1024;

/** How PopefFile.open reads a file. */
export interface OpenOptions {
  /** Name used in messages instead of the source's own name. */
  readonly name?: string;
}

/** Descriptors and metadata already decoded in this thread, by their bytes (decoded-by-bytes.ts says why that is sound). */
const DESCRIPTORS = new DecodedByBytes<RawDescriptor>();
const METADATA = new DecodedByBytes<Metadata>();
/** Descriptors checked for structure alone (the metadata blob's, unknown types'): the verdict is all there is to keep. */
const VERIFIED = new DecodedByBytes<true>();

/** Progress of a long operation: bytes done out of bytes total. */
export type ProgressCallback = (done: number, total: number) => void;

/**
 * One PopEF open-layout file. Opening walks the blob headers and descriptors
 * only; payloads are read on demand, by offset, through the byte source.
 */
export class PopefFile {
  private constructor(
    readonly source: ByteSource,
    readonly name: string,
    readonly blobs: readonly Blob[],
    readonly warnings: readonly ReadWarning[],
    /** Absolute offsets of the end-of-segment markers, in file order. */
    readonly segmentEnds: readonly number[],
  ) {}

  /** Opens a file by path, or wraps an existing byte source. */
  static async open(input: string | ByteSource, options: OpenOptions = {}): Promise<PopefFile> {
    const source = typeof input === 'string' ? await FileSource.open(input) : input;
    try {
      const name = options.name ?? source.name;
      const walked = await walk(source, name);
      return new PopefFile(source, name, walked.blobs, walked.warnings, walked.segmentEnds);
    } catch (error) {
      await source.close();
      throw error;
    }
  }

  get size(): number {
    return this.source.size;
  }

  /** Closes the byte source. */
  async close(): Promise<void> {
    await this.source.close();
  }

  /** Reads, checksums and decodes a metadata blob. */
  async readMetadata(blob: Blob): Promise<Metadata> {
    if (blob.kind !== 'metadata') throw new TypeError('readMetadata needs a metadata blob');
    if (blob.payloadLength > Limits.maxMetadataBytes) {
      throw new PopefError(ErrorCode.LimitExceeded, `metadata of ${blob.payloadLength} bytes exceeds the limit of ${Limits.maxMetadataBytes}`, {
        file: this.name,
        offset: blob.offset,
        field: 'payload length',
      });
    }
    const bytes = await this.source.read(blob.payloadOffset, blob.payloadLength, 'metadata');
    checkCrc(bytes, blob.payloadCrc, this.name, blob.payloadOffset, 'metadata crc32');
    return METADATA.get(bytes, blob.payloadCrc, () => decodeMetadata(bytes, { file: this.name, offset: blob.payloadOffset }));
  }

  /** Stored payload bytes [start, start+length) of a blob (no decompression). */
  async readPayload(blob: BlobFrame, start = 0, length = blob.payloadLength - start): Promise<Uint8Array> {
    if (start < 0 || length < 0 || start + length > blob.payloadLength) {
      throw new RangeError(`range ${start}+${length} is outside the ${blob.payloadLength}-byte payload`);
    }
    return this.source.read(blob.payloadOffset + start, length, 'payload');
  }

  /** The stored payload as a stream of chunks, read lazily. */
  async *storedChunks(blob: BlobFrame, chunkSize = STREAM_CHUNK): AsyncGenerator<Uint8Array> {
    for (let at = 0; at < blob.payloadLength; at += chunkSize) {
      yield await this.source.read(blob.payloadOffset + at, Math.min(chunkSize, blob.payloadLength - at), 'payload');
    }
  }

  /**
   * The payload as the producer wrote it: compressed executables are
   * inflated on the fly. The length is checked against the descriptor.
   */
  async *payloadChunks(blob: Blob, chunkSize = STREAM_CHUNK): AsyncGenerator<Uint8Array> {
    if (blob.codec === Codec.NONE) {
      yield* this.storedChunks(blob, chunkSize);
      return;
    }
    const expected = blob.kind === 'executable' ? blob.uncompressedSize : -1;
    const inflation = inflate(this.storedChunks(blob, chunkSize));
    let produced = 0;
    try {
      for await (const bytes of inflation.chunks) {
        produced += bytes.byteLength;
        if (expected >= 0 && produced > expected) break;
        yield bytes;
      }
    } catch (error) {
      if (error instanceof PopefError) throw error;
      throw new PopefError(ErrorCode.Compression, `compressed payload cannot be inflated: ${(error as Error).message}`, {
        file: this.name,
        offset: blob.payloadOffset,
        field: 'payload',
        suggestion: 'the file is damaged: pack or export it again',
      });
    } finally {
      inflation.destroy();
    }
    // Section 7: the stream must end exactly at the end of the stored bytes.
    if (produced === expected && inflation.consumed() !== blob.payloadLength) {
      throw new PopefError(ErrorCode.Compression, `the zlib stream ends after ${inflation.consumed()} of the ${blob.payloadLength} stored bytes`, {
        file: this.name,
        offset: blob.payloadOffset + inflation.consumed(),
        field: 'payload',
        suggestion: 'the file is damaged: pack or export it again',
      });
    }
    if (expected >= 0 && produced !== expected) {
      throw new PopefError(
        ErrorCode.Compression,
        `payload inflates to ${produced > expected ? 'more than' : ''} ${produced} bytes, but the descriptor says ${expected}`,
        { file: this.name, offset: blob.payloadOffset, field: 'uncompressed size' },
      );
    }
  }

  /**
   * Reads every byte of a blob: descriptor and payload checksums, zero
   * padding, and for compressed payloads a full inflate with its length.
   */
  async verifyBlob(blob: Blob, onProgress?: ProgressCallback): Promise<void> {
    let crc = 0;
    let done = 0;
    for await (const chunk of this.storedChunks(blob)) {
      crc = crc32(chunk, crc);
      done += chunk.byteLength;
      onProgress?.(done, blob.payloadLength);
    }
    if (crc !== blob.payloadCrc) {
      throw new PopefError(ErrorCode.Checksum, `payload checksum mismatch: stored ${hex(blob.payloadCrc)}, computed ${hex(crc)}`, {
        file: this.name,
        offset: blob.payloadOffset,
        field: `${blob.type} payload crc32`,
        suggestion: 'the payload is damaged: pack or export the file again',
      });
    }
    const padStart = blob.payloadOffset + blob.payloadLength;
    const padLength = blob.offset + blob.totalSize - padStart;
    if (padLength > 0) checkZero(await this.source.read(padStart, padLength, 'payload padding'), this.name, padStart, 'payload padding');
    if (blob.codec !== Codec.NONE && blob.kind === 'executable') {
      // Inflating to the end checks the zlib stream, its Adler-32 and the length.
      for await (const chunk of this.payloadChunks(blob)) crc32(chunk);
    }
    if (blob.kind === 'metadata') await this.readMetadata(blob);
  }
}

function checkCrc(bytes: Uint8Array, stored: number, file: string, offset: number, field: string): void {
  const actual = crc32(bytes);
  if (actual !== stored) {
    throw new PopefError(ErrorCode.Checksum, `checksum mismatch: stored ${hex(stored)}, computed ${hex(actual)}`, {
      file,
      offset,
      field,
      suggestion: 'the file is damaged: pack or export it again',
    });
  }
}

function checkZero(bytes: Uint8Array, file: string, offset: number, field: string): void {
  // A loop, not findIndex with a closure: every blob's descriptor padding passes here.
  let at = 0;
  while (at < bytes.length && bytes[at] === 0) at++;
  if (at < bytes.length) {
    throw new PopefError(ErrorCode.BadStructure, `${field} byte is ${bytes[at]}, must be zero`, {
      file,
      offset: offset + at,
      field,
      suggestion: 'the file is damaged: pack or export it again',
    });
  }
}

interface Walked {
  blobs: Blob[];
  warnings: ReadWarning[];
  segmentEnds: number[];
}

/** Walks the headers and descriptors of every blob; reads no payload but the tiny end markers. */
async function walk(source: ByteSource, name: string): Promise<Walked> {
  const blobs: Blob[] = [];
  const warnings: ReadWarning[] = [];
  const segmentEnds: number[] = [];
  if (source.size === 0) {
    throw new PopefError(ErrorCode.NotPopef, 'not a PopEF open-layout file: the file is empty', { file: name, offset: 0 });
  }
  // A few bytes of text are no PopEF file, not a truncated one: only a file that begins as a signature is cut short.
  if (source.size < HEADER_SIZE) {
    const start = await source.read(0, source.size, 'blob header');
    if (!beginsAsMagic(start)) throw notOpenLayout(start, name, 0);
  }
  let offset = 0;
  let segmentStart = 0;
  let segmentBlobs = 0;
  let lastWasEnd = false;
  while (offset < source.size) {
    if (blobs.length + segmentEnds.length >= Limits.maxBlobsPerFile) {
      throw new PopefError(ErrorCode.LimitExceeded, `more than ${Limits.maxBlobsPerFile} blobs in one file`, { file: name, offset });
    }
    // peek first: a small file is in the source's read-ahead, and an awaited read per header and descriptor costs more than the rest.
    const headerBytes = source.peek?.(offset, HEADER_SIZE, 'blob header') ?? (await source.read(offset, HEADER_SIZE, 'blob header'));
    const header = decodeHeader(headerBytes, name, offset, offset === 0);
    if (header.totalSize > source.size - offset) {
      throw new PopefError(ErrorCode.Truncated, `blob of ${header.totalSize} bytes starting here runs past the end of the ${source.size}-byte file`, {
        file: name,
        offset,
        field: 'total blob size',
        suggestion: 'the file is truncated: copy or export it again',
      });
    }
    if (header.minor > LAYOUT_MINOR) {
      warnings.push({
        code: 'W_NEWER_MINOR_VERSION',
        message: `blob layout version ${header.version} is newer than 1.${LAYOUT_MINOR}; fields added since are ignored`,
        file: name,
        offset,
      });
    }
    const descriptorOffset = offset + HEADER_SIZE;
    const payloadOffset = descriptorOffset + align(header.descriptorLength);
    if (header.blobType === END_OF_SEGMENT) {
      const marker =
        source.peek?.(payloadOffset, END_PAYLOAD_SIZE, 'end-of-segment marker') ??
        (await source.read(payloadOffset, END_PAYLOAD_SIZE, 'end-of-segment marker'));
      checkEndMarker(marker, name, offset, header, payloadOffset, segmentStart, segmentBlobs);
      segmentEnds.push(offset);
      offset += header.totalSize;
      segmentStart = offset;
      segmentBlobs = 0;
      lastWasEnd = true;
      continue;
    }
    lastWasEnd = false;
    segmentBlobs += 1;
    const frame: BlobFrame = {
      file: name,
      index: blobs.length,
      offset,
      typeCode: header.blobType,
      version: header.version,
      codec: header.codec,
      descriptorOffset,
      descriptorLength: header.descriptorLength,
      descriptorCrc: header.descriptorCrc,
      payloadOffset,
      payloadLength: header.payloadLength,
      payloadCrc: header.payloadCrc,
      totalSize: header.totalSize,
    };
    const padded = align(header.descriptorLength);
    const descriptor = source.peek?.(descriptorOffset, padded, 'blob descriptor') ?? (await source.read(descriptorOffset, padded, 'blob descriptor'));
    if (header.blobType > BlobType.OPAQUE) {
      // Not interpreted, but held to the rules of every blob (FORMAT.md section 8, item 5).
      checkDescriptor(descriptor, name, frame, header, true);
      warnings.push({
        code: 'W_UNKNOWN_BLOB_TYPE',
        message: `blob type ${header.blobType} is unknown to this reader; skipped (${header.totalSize} bytes)`,
        file: name,
        offset,
      });
      blobs.push(blobOf(frame, { kind: 'unknown', type: 'UNKNOWN' }));
    } else {
      blobs.push(describe(descriptor, name, frame, header));
    }
    offset += header.totalSize;
  }
  if (!lastWasEnd) {
    throw new PopefError(
      ErrorCode.Truncated,
      `file ends after ${segmentBlobs} blob(s) without the end-of-segment marker that closes every complete file`,
      { file: name, offset, field: 'end-of-segment marker', suggestion: 'the file is truncated or still being written: copy or export it again' },
    );
  }
  return { blobs, warnings, segmentEnds };
}

/** Checks the end-of-segment marker whose 16-byte payload is `payload`. */
function checkEndMarker(
  payload: Uint8Array,
  name: string,
  offset: number,
  header: BlobHeader,
  payloadOffset: number,
  segmentStart: number,
  segmentBlobs: number,
): void {
  const bad = (message: string): PopefError =>
    new PopefError(ErrorCode.BadStructure, message, {
      file: name,
      offset,
      field: 'end-of-segment marker',
      suggestion: 'the file is damaged: pack or export it again',
    });
  if (header.descriptorLength !== 0 || header.payloadLength !== END_PAYLOAD_SIZE) {
    throw bad(`end-of-segment marker must have no descriptor and a ${END_PAYLOAD_SIZE}-byte payload`);
  }
  checkCrc(payload, header.payloadCrc, name, payloadOffset, 'end-of-segment crc32');
  const c = new Cursor(payload, payloadOffset, name);
  const length = c.u64AsNumber('segment length');
  const count = c.u32('segment blob count');
  const reserved = c.u32('reserved');
  if (reserved !== 0) throw bad('reserved bytes of the end-of-segment marker are not zero');
  if (length !== offset - segmentStart || count !== segmentBlobs) {
    throw bad(
      `end-of-segment marker records ${count} blob(s) in ${length} bytes, but the segment holds ${segmentBlobs} blob(s) in ${offset - segmentStart} bytes`,
    );
  }
}

/**
 * The descriptor's CRC, its zero padding and its FlatBuffer structure: what
 * every blob but the end marker must pass. `bytes` are the descriptor with
 * its padding, a view the caller may reuse: what is kept is decoded or copied.
 */
function checkDescriptor(bytes: Uint8Array, name: string, frame: BlobFrame, header: BlobHeader, structureOnly: boolean): RawDescriptor | undefined {
  const descriptorBytes = bytes.subarray(0, header.descriptorLength);
  checkCrc(descriptorBytes, header.descriptorCrc, name, frame.descriptorOffset, 'descriptor crc32');
  checkZero(bytes.subarray(header.descriptorLength), name, frame.descriptorOffset + header.descriptorLength, 'descriptor padding');
  if (structureOnly) {
    VERIFIED.get(descriptorBytes, header.descriptorCrc, () => {
      verifyDescriptor(descriptorBytes, { file: name, offset: frame.descriptorOffset });
      return true;
    });
    return undefined;
  }
  return DESCRIPTORS.get(descriptorBytes, header.descriptorCrc, () =>
    decodeDescriptor(descriptorBytes, { file: name, offset: frame.descriptorOffset }),
  );
}

/**
 * A blob: its frame, given its kind's fields. The frame is made by the walk
 * for this blob alone and not used after, so it becomes the blob rather
 * than being copied. Not `{ ...frame, ...kind }`: before V8 (11, Node 20)
 * optimises the code, such a spread with fields after it costs several
 * microseconds per blob, which was the largest share of opening a small
 * file (validate opens one per model: issue 26).
 */
function blobOf<K extends object>(frame: BlobFrame, kind: K): BlobFrame & K {
  return Object.assign(frame, kind);
}

/** The u64 up to which every value converts to a number exactly (Number.MAX_SAFE_INTEGER). */
const MAX_SAFE_U64 = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A descriptor that is missing a field, holds a value out of range, or
 * disagrees with its blob. A function of the module, not a closure in
 * describe: unoptimized, a closure is allocated on every call, and describe
 * runs for every executable, tensor, feed and opaque blob.
 */
function damagedDescriptor(name: string, frame: BlobFrame, field: string, message: string): PopefError {
  return new PopefError(ErrorCode.BadStructure, message, {
    file: name,
    offset: frame.offset,
    field,
    suggestion: 'the file is damaged: pack or export it again',
  });
}

/** The tensor info a tensor or feed descriptor must carry. */
function tensorInfoOf(d: RawDescriptor, name: string, frame: BlobFrame): NonNullable<RawDescriptor['tensorInfo']> {
  if (d.tensorInfo === undefined) throw damagedDescriptor(name, frame, 'tensor_info', `descriptor of blob ${frame.index} has no tensor info`);
  return d.tensorInfo;
}

/** Reads and checks a blob's descriptor and turns the frame into a typed blob. */
function describe(descriptor: Uint8Array, name: string, frame: BlobFrame, header: BlobHeader): Blob {
  // The metadata descriptor carries nothing; it is still verified.
  const d = checkDescriptor(descriptor, name, frame, header, header.blobType === BlobType.METADATA);
  if (d === undefined) return blobOf(frame, { kind: 'metadata', type: 'METADATA' });
  switch (header.blobType) {
    case BlobType.POPLAR_EXECUTABLE: {
      const compressed = header.codec === Codec.ZLIB;
      if (d.uncompressedSize > MAX_SAFE_U64)
        throw damagedDescriptor(name, frame, 'uncompressed_size', `uncompressed size ${d.uncompressedSize} is too large`);
      const uncompressedSize = Number(d.uncompressedSize);
      if (!compressed && uncompressedSize !== header.payloadLength) {
        throw damagedDescriptor(
          name,
          frame,
          'uncompressed_size',
          `uncompressed executable records ${uncompressedSize} bytes but stores ${header.payloadLength}`,
        );
      }
      return blobOf(frame, { kind: 'executable', type: 'POPLAR_EXECUTABLE', name: d.name, compressed, uncompressedSize });
    }
    case BlobType.DATA_TENSOR: {
      const tensorInfo = tensorInfoOf(d, name, frame);
      const expected = sizeInBytes(tensorInfo);
      if (expected !== BigInt(header.payloadLength)) {
        throw damagedDescriptor(
          name,
          frame,
          'payload length',
          `tensor "${d.name}" stores ${header.payloadLength} bytes but its tensor info (${tensorInfo.dtype} [${tensorInfo.shape.join(', ')}]) needs ${expected}`,
        );
      }
      return blobOf(frame, { kind: 'tensor', type: 'DATA_TENSOR', name: d.name, tensorInfo });
    }
    case BlobType.DATA_FEED: {
      const tensorInfo = tensorInfoOf(d, name, frame);
      // A sample of zero bytes makes any count fit the payload: bound it on its own, as every u64 outside the metadata is.
      if (d.sampleCount > MAX_SAFE_U64) throw damagedDescriptor(name, frame, 'sample_count', `sample count ${d.sampleCount} is too large`);
      const expected = sizeInBytes(tensorInfo) * d.sampleCount;
      if (expected !== BigInt(header.payloadLength)) {
        throw damagedDescriptor(
          name,
          frame,
          'payload length',
          `feed "${d.name}" stores ${header.payloadLength} bytes but ${d.sampleCount} sample(s) of ${tensorInfo.dtype} [${tensorInfo.shape.join(', ')}] need ${expected}`,
        );
      }
      return blobOf(frame, { kind: 'feed', type: 'DATA_FEED', name: d.name, tensorInfo, sampleCount: Number(d.sampleCount) });
    }
    default:
      return blobOf(frame, { kind: 'opaque', type: 'OPAQUE', name: d.name, executable: d.executable });
  }
}
