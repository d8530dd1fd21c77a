import { ByteBuffer } from 'flatbuffers';
import { ErrorCode, PopefError } from '../errors.js';
import { DESCRIPTOR_IDENTIFIER, Limits, METADATA_IDENTIFIER } from './limits.js';
import { BlobDescriptor as FbBlobDescriptor } from './generated/popef/open/blob-descriptor.js';
import { Metadata as FbMetadata } from './generated/popef/open/metadata.js';
import type { TensorInfo as FbTensorInfo } from './generated/popef/open/tensor-info.js';
import { dataTypeOfCode } from './data-types.js';
import { TENSOR_TYPES, type Anchor, type Metadata, type Option, type RawDescriptor, type TensorInfo } from './model.js';
import { verifyBuffer } from './verify.js';

/**
 * The only seam between generated FlatBuffers accessors and the domain
 * model: verify, then read into plain objects, checking every value that
 * the type system of the wire format does not (enum ranges, signs, limits).
 */

export interface DecodeWhere {
  readonly file: string;
  /** Absolute offset of the buffer in the file. */
  readonly offset: number;
}

export type { RawDescriptor } from './model.js';

/**
 * A field's path, or a function that makes it: a million anchors must not
 * cost a million path strings that only an error would print.
 */
type FieldName = string | (() => string);
const named = (field: FieldName): string => (typeof field === 'string' ? field : field());

/** Shared by every anchor without programs (most weights): no array per anchor. */
const NO_PROGRAMS: readonly number[] = Object.freeze([]);

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

class Decoder {
  constructor(
    private readonly where: DecodeWhere,
    private readonly what: string,
  ) {}

  fail(field: FieldName, message: string): never {
    throw new PopefError(ErrorCode.BadFlatBuffer, `${this.what}: ${message}`, {
      file: this.where.file,
      offset: this.where.offset,
      field: named(field),
      suggestion: 'the file is damaged or was written by a newer tool',
    });
  }

  count(field: FieldName, value: number, limit: number): number {
    if (value > limit) {
      throw new PopefError(ErrorCode.LimitExceeded, `${this.what}: ${named(field)} has ${value} entries, more than the limit of ${limit}`, {
        file: this.where.file,
        offset: this.where.offset,
        field: named(field),
      });
    }
    return value;
  }

  int(field: FieldName, value: bigint): number {
    if (value < 0n) this.fail(field, `must not be negative (is ${value})`);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(field, `is ${value}, too large to represent exactly`);
    return Number(value);
  }

  tensorInfo(field: FieldName, info: FbTensorInfo | null): TensorInfo {
    if (info === null) this.fail(field, 'tensor info is missing');
    const code = info.dataType() as number;
    // By the code's entry in DATA_TYPE_INFO, not by position: the wire code is a fact of its own.
    const dtype = dataTypeOfCode(code);
    if (dtype === undefined) this.fail(() => `${named(field)}.data_type`, `unknown data type code ${code}`);
    const rank = this.count(() => `${named(field)}.shape`, info.shapeLength(), Limits.maxRank);
    const shape: number[] = [];
    for (let i = 0; i < rank; i++) {
      const dim = info.shape(i) ?? 0n;
      // The common case checked inline; the path is built only for a bad value.
      shape.push(dim >= 0n && dim <= MAX_SAFE ? Number(dim) : this.int(() => `${named(field)}.shape[${i}]`, dim));
    }
    return { dtype, shape };
  }

  u32List(field: FieldName, length: number, get: (i: number) => number | null): readonly number[] {
    const n = this.count(field, length, Limits.maxPrograms);
    if (n === 0) return NO_PROGRAMS;
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(get(i) ?? 0);
    return out;
  }
}

export function decodeMetadata(bytes: Uint8Array, where: DecodeWhere): Metadata {
  verifyBuffer(bytes, 'Metadata', METADATA_IDENTIFIER, { file: where.file, base: where.offset, what: 'metadata' });
  const d: Decoder = new Decoder(where, 'metadata');
  const fb = FbMetadata.getRootAsMetadata(new ByteBuffer(bytes));

  const anchorCount = d.count('anchors', fb.anchorsLength(), Limits.maxAnchors);
  const anchors: Anchor[] = [];
  for (let i = 0; i < anchorCount; i++) {
    const a = fb.anchors(i);
    const field = (): string => `anchors[${i}]`;
    if (a === null) d.fail(field, 'anchor is missing');
    const typeCode = a.type() as number;
    const type = TENSOR_TYPES[typeCode];
    if (type === undefined) d.fail(() => `${field()}.type`, `unknown tensor type code ${typeCode}`);
    anchors.push({
      name: a.name() ?? '',
      handle: a.handle() ?? '',
      tensorInfo: d.tensorInfo(() => `${field()}.tensor_info`, a.tensorInfo()),
      isPerReplica: a.isPerReplica(),
      type,
      programs: d.u32List(
        () => `${field()}.programs`,
        a.programsLength(),
        (k) => a.programs(k),
      ),
    });
  }

  const flow = fb.programFlow();
  const programFlow = {
    load: flow === null ? [] : d.u32List('program_flow.load', flow.loadLength(), (k) => flow.load(k)),
    main: flow === null ? [] : d.u32List('program_flow.main', flow.mainLength(), (k) => flow.main(k)),
    save: flow === null ? [] : d.u32List('program_flow.save', flow.saveLength(), (k) => flow.save(k)),
  };

  const mapCount = d.count('programs_map', fb.programsMapLength(), Limits.maxPrograms);
  const programsMap = [];
  for (let i = 0; i < mapCount; i++) {
    const entry = fb.programsMap(i);
    if (entry === null) d.fail(`programs_map[${i}]`, 'entry is missing');
    programsMap.push({ index: entry.index(), name: entry.name() ?? '' });
  }

  const options = (field: string, length: number, get: (i: number) => { name(): string | null; value(): string | null } | null): Option[] => {
    const n = d.count(field, length, Limits.maxOptions);
    const out: Option[] = [];
    for (let i = 0; i < n; i++) {
      const o = get(i);
      if (o === null) d.fail(`${field}[${i}]`, 'option is missing');
      out.push({ name: o.name() ?? '', value: o.value() ?? '' });
    }
    return out;
  };

  return {
    executable: fb.executable() ?? '',
    anchors,
    programFlow,
    programsMap,
    replicationFactor: d.int('replication_factor', fb.replicationFactor()),
    numIpus: d.int('num_ipus', fb.numIpus()),
    ipuVersion: d.int('ipu_version', fb.ipuVersion()),
    isPOD: fb.isPod(),
    numProcesses: d.int('num_processes', fb.numProcesses()),
    isInference: fb.isInference(),
    deviceIterations: d.int('device_iterations', fb.deviceIterations()),
    seedHandle: fb.seedHandle() ?? '',
    engineOptions: options('engine_options', fb.engineOptionsLength(), (i) => fb.engineOptions(i)),
    deviceOptions: options('device_options', fb.deviceOptionsLength(), (i) => fb.deviceOptions(i)),
  };
}

/** The structural check alone, for blobs whose descriptor is not interpreted (unassigned types). */
export function verifyDescriptor(bytes: Uint8Array, where: DecodeWhere): void {
  verifyBuffer(bytes, 'BlobDescriptor', DESCRIPTOR_IDENTIFIER, { file: where.file, base: where.offset, what: 'blob descriptor' });
}

export function decodeDescriptor(bytes: Uint8Array, where: DecodeWhere): RawDescriptor {
  verifyBuffer(bytes, 'BlobDescriptor', DESCRIPTOR_IDENTIFIER, { file: where.file, base: where.offset, what: 'blob descriptor' });
  const d: Decoder = new Decoder(where, 'blob descriptor');
  const fb = FbBlobDescriptor.getRootAsBlobDescriptor(new ByteBuffer(bytes));
  const info = fb.tensorInfo();
  return {
    name: fb.name() ?? '',
    executable: fb.executable() ?? '',
    tensorInfo: info === null ? undefined : d.tensorInfo('tensor_info', info),
    sampleCount: fb.sampleCount(),
    uncompressedSize: fb.uncompressedSize(),
  };
}
