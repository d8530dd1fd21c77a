import type { TensorInfo } from '../schema/model.js';
import type { BlobTypeName } from './constants.js';

/** Where a blob sits in its file and how it is framed. */
export interface BlobFrame {
  /** File (or source name) the blob was read from. */
  readonly file: string;
  /** Position among the blobs of its file, counting from 0 (end markers excluded). */
  readonly index: number;
  /** Absolute offset of the blob header. */
  readonly offset: number;
  readonly typeCode: number;
  readonly version: string;
  /** Codec code: 0 none, 1 zlib. */
  readonly codec: number;
  readonly descriptorOffset: number;
  readonly descriptorLength: number;
  readonly descriptorCrc: number;
  readonly payloadOffset: number;
  /** Stored payload bytes (compressed length for compressed executables). */
  readonly payloadLength: number;
  readonly payloadCrc: number;
  /** Header + padded descriptor + padded payload. */
  readonly totalSize: number;
}

export interface ExecutableBlob extends BlobFrame {
  readonly kind: 'executable';
  readonly type: 'POPLAR_EXECUTABLE';
  readonly name: string;
  readonly compressed: boolean;
  readonly uncompressedSize: number;
}

export interface MetadataBlob extends BlobFrame {
  readonly kind: 'metadata';
  readonly type: 'METADATA';
}

export interface TensorDataBlob extends BlobFrame {
  readonly kind: 'tensor';
  readonly type: 'DATA_TENSOR';
  readonly name: string;
  readonly tensorInfo: TensorInfo;
}

export interface FeedDataBlob extends BlobFrame {
  readonly kind: 'feed';
  readonly type: 'DATA_FEED';
  readonly name: string;
  readonly tensorInfo: TensorInfo;
  readonly sampleCount: number;
}

export interface OpaqueBlob extends BlobFrame {
  readonly kind: 'opaque';
  readonly type: 'OPAQUE';
  readonly name: string;
  readonly executable: string;
}

/** A blob of a type this reader does not know; skipped by size. */
export interface UnknownBlob extends BlobFrame {
  readonly kind: 'unknown';
  readonly type: 'UNKNOWN';
}

/** One blob of a PopEF file, as the reader found it: its header facts and its decoded descriptor, by kind. */
export type Blob = ExecutableBlob | MetadataBlob | TensorDataBlob | FeedDataBlob | OpaqueBlob | UnknownBlob;
/** A blob's kind: `executable`, `metadata`, `tensor`, `feed`, `opaque` or `unknown`. */
export type BlobKind = Blob['kind'];

/** The BlobType name of a blob kind, for messages and JSON. */
export const KIND_TYPE_NAMES: Readonly<Record<Exclude<BlobKind, 'unknown'>, BlobTypeName>> = {
  executable: 'POPLAR_EXECUTABLE',
  metadata: 'METADATA',
  tensor: 'DATA_TENSOR',
  feed: 'DATA_FEED',
  opaque: 'OPAQUE',
};

/** A non-fatal observation made while reading (unknown blob, newer minor). */
export interface ReadWarning {
  readonly code: 'W_UNKNOWN_BLOB_TYPE' | 'W_NEWER_MINOR_VERSION';
  readonly message: string;
  readonly file: string;
  readonly offset: number;
}
