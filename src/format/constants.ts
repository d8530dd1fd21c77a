/**
 * Constants of the PopEF open layout (see schemas/FORMAT.md, which is the
 * normative description; this file must agree with it).
 */

/** First 8 bytes of every blob: 0x8A "PEFO" CR LF 0x1A. The high bit and the
 * CR LF catch 7-bit and newline-translating transfers, as PNG's signature does. */
export const BLOB_MAGIC = Uint8Array.of(0x8a, 0x50, 0x45, 0x46, 0x4f, 0x0d, 0x0a, 0x1a);

/** The layout version this code writes and fully understands. */
export const LAYOUT_MAJOR = 1;
export const LAYOUT_MINOR = 0;
/** The layout version written into every blob header, as "major.minor" (FORMAT.md section 3). */
export const LAYOUT_VERSION = `${LAYOUT_MAJOR}.${LAYOUT_MINOR}`;

/** Fixed header size; descriptors start right after it. */
export const HEADER_SIZE = 64;
/** Every blob starts, and every payload starts, on this boundary. */
export const ALIGNMENT = 8;

/** Header field offsets (bytes from the start of the blob). */
export const HeaderField = {
  magic: 0,
  version: 8,
  versionLength: 16,
  blobType: 24,
  codec: 25,
  reserved0: 26,
  descriptorLength: 28,
  totalSize: 32,
  payloadLength: 40,
  descriptorCrc: 48,
  payloadCrc: 52,
  reserved1: 56,
  headerCrc: 60,
} as const;

/** Blob type codes, in the order of Graphcore's BlobType documentation. */
export const BlobType = {
  POPLAR_EXECUTABLE: 0,
  METADATA: 1,
  DATA_TENSOR: 2,
  DATA_FEED: 3,
  OPAQUE: 4,
} as const;
export type KnownBlobType = (typeof BlobType)[keyof typeof BlobType];
/** A blob type's name in Graphcore's documentation (`POPLAR_EXECUTABLE`, `METADATA`, ...). */
export type BlobTypeName = keyof typeof BlobType;

export function blobTypeName(code: number): BlobTypeName | undefined {
  for (const [name, value] of Object.entries(BlobType)) {
    if (value === code) return name as BlobTypeName;
  }
  return undefined;
}

/** Payload codecs. Only executables may be compressed. */
export const Codec = {
  NONE: 0,
  /** One zlib stream (RFC 1950: deflate with header and Adler-32 trailer). */
  ZLIB: 1,
} as const;
export type Codec = (typeof Codec)[keyof typeof Codec];

// The FlatBuffers identifiers and the limits on values read from a file are
// shared with src/schema/ (which decodes the metadata), on the floor below:
// they live there, in a leaf, so that schema/ never imports format/.
export { DESCRIPTOR_IDENTIFIER, Limits, METADATA_IDENTIFIER } from '../schema/limits.js';
