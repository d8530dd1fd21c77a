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

/** FlatBuffers file identifiers. */
export const METADATA_IDENTIFIER = 'PEFM';
export const DESCRIPTOR_IDENTIFIER = 'PEFD';

/**
 * Limits on values read from a file, checked before anything is allocated.
 * Each is far above what a real model needs and far below what would let a
 * hostile file exhaust memory (CWE-789, CWE-400).
 */
export const Limits = {
  /** Blobs in one file: real files hold a handful; each costs a header read. */
  maxBlobsPerFile: 1_000_000,
  /** A descriptor holds a name and a tensor info: 1 MiB is generous. */
  maxDescriptorBytes: 1024 * 1024,
  /** Room for maxAnchors anchors (about 92 bytes each with short names); real metadata is kilobytes. */
  maxMetadataBytes: 256 * 1024 * 1024,
  /** Anchors per metadata. */
  maxAnchors: 1_000_000,
  /** Dimensions of one tensor (Poplar tensors rarely exceed 8). */
  maxRank: 64,
  /** Programs listed per anchor or program flow phase. */
  maxPrograms: 100_000,
  /** Options per engine/device option list. */
  maxOptions: 100_000,
  /** Bytes of one string (names, handles, option values). */
  maxStringBytes: 1024 * 1024,
  /** FlatBuffers table nesting in our schema is at most 4; allow slack. */
  maxTableDepth: 16,
} as const;
