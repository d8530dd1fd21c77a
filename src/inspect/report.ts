import type { Blob, ReadWarning } from '../format/blob.js';
import { Codec, LAYOUT_VERSION } from '../format/constants.js';
import { hex } from '../format/header.js';
import type { ModelSet } from '../format/model-set.js';
import { sizeInBytes, type DataType, type Metadata, type TensorInfo, type TensorType } from '../schema/model.js';
import { anchorRole, type AnchorRole } from './anchor-roles.js';

/**
 * Everything `popef dump` can show, as plain JSON-ready data. Presenters
 * (text, Markdown, JSON) render it; none of them reads a file. Its JSON form
 * is specified by schemas/dump.schema.json.
 */

/** A byte count: a number when it fits in 2^53, else a decimal string. */
export type Size = number | string;

export function toSize(value: bigint | number): Size {
  const big = BigInt(value);
  return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString();
}

/** One anchor in a dump, with its size and role. */
export interface AnchorReport {
  readonly name: string;
  readonly handle: string;
  readonly type: TensorType;
  readonly dtype: DataType;
  readonly shape: readonly number[];
  readonly sizeInBytes: Size;
  readonly isPerReplica: boolean;
  readonly programs: readonly number[];
  readonly role: AnchorRole;
}

/** The metadata as stored, with anchors flattened and classified. */
export type MetadataReport = Omit<Metadata, 'anchors'> & { readonly anchors: readonly AnchorReport[] };

/** One model (an executable and what belongs to it) in a dump; exported from the library as DumpModelReport. */
export interface ModelReport {
  readonly executable: string;
  readonly file: string;
  readonly compressed: boolean;
  readonly executableSize: Size;
  readonly metadata: MetadataReport | null;
  readonly opaques: readonly string[];
  readonly tensors: readonly string[];
}

/** One blob in a dump: where it is, its header and descriptor facts. */
export interface BlobReport {
  readonly file: string;
  readonly index: number;
  readonly type: string;
  readonly typeCode: number;
  readonly version: string;
  readonly name: string | null;
  readonly executable: string | null;
  readonly offset: number;
  readonly totalSize: number;
  readonly payloadOffset: number;
  readonly payloadLength: number;
  readonly compression: string;
  readonly uncompressedSize: number | null;
  readonly crc32: string;
}

/** A tensor data blob in a dump. */
export interface TensorReport {
  readonly name: string;
  readonly file: string;
  readonly dtype: DataType;
  readonly shape: readonly number[];
  readonly sizeInBytes: Size;
}

/** A feed data blob in a dump. */
export interface FeedReport extends TensorReport {
  readonly sampleCount: number;
  readonly totalBytes: Size;
}

/** An opaque blob in a dump. */
export interface OpaqueReport {
  readonly name: string;
  readonly executable: string;
  readonly file: string;
  readonly size: number;
}

/** One file of a dump: its path, size, blob count and segments. */
export interface FileReport {
  readonly path: string;
  readonly size: number;
  readonly blobs: number;
  readonly segments: number;
  /**
   * Present when the file is not in the open layout and was read with the
   * Poplar SDK's popef.Reader (through the IPU bridge, which converts it):
   * size, offsets and blob sizes are then those of the open-layout copy.
   */
  readonly readBy?: { readonly reader: 'poplar-sdk'; readonly sdkVersion: string | null };
}

/** What `dump --verify` found: the checksums checked and the damage found. */
export interface VerifyReport {
  readonly blobs: number;
  readonly bytes: number;
  /** Blobs whose checksum, padding or compressed length is wrong. */
  readonly damaged: number;
  readonly ok: boolean;
}

/** What `popef dump` reports about a set of files, as data (schemas/dump.schema.json). */
export interface DumpReport {
  readonly tool: 'popef-toolkit';
  readonly reportVersion: 1;
  readonly layoutVersion: string;
  readonly files: readonly FileReport[];
  readonly models: readonly ModelReport[];
  readonly blobs: readonly BlobReport[];
  readonly tensors: readonly TensorReport[];
  readonly feeds: readonly FeedReport[];
  readonly opaques: readonly OpaqueReport[];
  readonly warnings: readonly ReadWarning[];
  readonly verify: VerifyReport | null;
}

/** The metadata's fields but its anchors, field by field rather than a spread: this order is the JSON report's. */
export function metadataFields(m: Omit<Metadata, 'anchors'>): Omit<Metadata, 'anchors'> {
  return {
    executable: m.executable,
    replicationFactor: m.replicationFactor,
    numIpus: m.numIpus,
    ipuVersion: m.ipuVersion,
    isPOD: m.isPOD,
    numProcesses: m.numProcesses,
    isInference: m.isInference,
    deviceIterations: m.deviceIterations,
    seedHandle: m.seedHandle,
    programFlow: m.programFlow,
    programsMap: m.programsMap,
    engineOptions: m.engineOptions,
    deviceOptions: m.deviceOptions,
  };
}

function metadataReport(m: Metadata, stored: ReadonlySet<string>): MetadataReport {
  return {
    ...metadataFields(m),
    anchors: m.anchors.map((a) => ({
      name: a.name,
      handle: a.handle,
      type: a.type,
      dtype: a.tensorInfo.dtype,
      shape: a.tensorInfo.shape,
      sizeInBytes: toSize(sizeInBytes(a.tensorInfo)),
      isPerReplica: a.isPerReplica,
      programs: a.programs,
      role: anchorRole(a, m, stored),
    })),
  };
}

export function codecName(codec: number): string {
  if (codec === Codec.NONE) return 'none';
  if (codec === Codec.ZLIB) return 'zlib';
  return `codec ${codec}`;
}

function blobReport(b: Blob): BlobReport {
  const name = b.kind === 'metadata' || b.kind === 'unknown' ? null : b.name;
  return {
    file: b.file,
    index: b.index,
    type: b.type,
    typeCode: b.typeCode,
    version: b.version,
    name,
    executable: b.kind === 'opaque' ? b.executable : null,
    offset: b.offset,
    totalSize: b.totalSize,
    payloadOffset: b.payloadOffset,
    payloadLength: b.payloadLength,
    compression: codecName(b.codec),
    uncompressedSize: b.kind === 'executable' ? b.uncompressedSize : null,
    crc32: hex(b.payloadCrc),
  };
}

/** A tensor or feed blob's name, file and tensor info (a feed's shape is one sample's). */
function tensorReport(t: { readonly name: string; readonly file: string; readonly tensorInfo: TensorInfo }): TensorReport {
  return { name: t.name, file: t.file, dtype: t.tensorInfo.dtype, shape: t.tensorInfo.shape, sizeInBytes: toSize(sizeInBytes(t.tensorInfo)) };
}

/** Builds the report of an open model set (reads nothing more from disk). */
export function buildReport(set: ModelSet, verify: VerifyReport | null = null): DumpReport {
  const stored = new Set(set.tensors.map((t) => t.name));
  return {
    tool: 'popef-toolkit',
    reportVersion: 1,
    layoutVersion: LAYOUT_VERSION,
    files: set.files.map((f) => ({ path: f.name, size: f.size, blobs: f.blobs.length, segments: f.segmentEnds.length })),
    models: set.models.map((m) => ({
      executable: m.name,
      file: m.executable.file,
      compressed: m.executable.compressed,
      executableSize: toSize(m.executable.uncompressedSize),
      metadata: m.metadata === undefined ? null : metadataReport(m.metadata, stored),
      opaques: m.opaques.map((o) => o.name),
      tensors: m.tensors.map((t) => t.name),
    })),
    blobs: set.blobs.map(blobReport),
    tensors: set.tensors.map(tensorReport),
    feeds: set.feeds.map((f) => ({ ...tensorReport(f), sampleCount: f.sampleCount, totalBytes: toSize(f.payloadLength) })),
    opaques: set.opaques.map((o) => ({ name: o.name, executable: o.executable, file: o.file, size: o.payloadLength })),
    warnings: set.warnings,
    verify,
  };
}
