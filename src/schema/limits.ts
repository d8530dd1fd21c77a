/**
 * Facts of the PopEF open layout that both src/format/ (the blob walk) and
 * src/schema/ (the metadata decoder, on the floor below) need: a leaf, so
 * the two floors import in one direction only. schemas/FORMAT.md is the
 * normative description; test/format/spec.test.ts keeps the two in step.
 */

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
