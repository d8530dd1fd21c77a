import { crc32 } from '../io/platform.js';
import { ErrorCode, PopefError } from '../errors.js';
import { u64AsNumberAt } from '../io/cursor.js';
import { ALIGNMENT, BLOB_MAGIC, BlobType, Codec, HEADER_SIZE, HeaderField, LAYOUT_MAJOR, LAYOUT_MINOR, Limits } from './constants.js';

/** Blob type code of the end-of-segment marker (see FORMAT.md). */
export const END_OF_SEGMENT = 0xff;
/** Payload length of the end-of-segment marker. */
export const END_PAYLOAD_SIZE = 16;

/** The fixed 64-byte header of one blob, decoded. */
export interface BlobHeader {
  readonly version: string;
  readonly major: number;
  readonly minor: number;
  readonly blobType: number;
  readonly codec: number;
  readonly descriptorLength: number;
  readonly totalSize: number;
  readonly payloadLength: number;
  readonly descriptorCrc: number;
  readonly payloadCrc: number;
}

export function align(n: number): number {
  return Math.ceil(n / ALIGNMENT) * ALIGNMENT;
}

/** Total blob size implied by its parts: header, padded descriptor, padded payload. */
export function blobSizeFor(descriptorLength: number, payloadLength: number): number {
  return HEADER_SIZE + align(descriptorLength) + align(payloadLength);
}

/**
 * Whether `bytes` begin as the signature does, as much of it as they hold:
 * a file shorter than one blob header that does could be a PopEF file cut
 * short; anything else is no PopEF at all, whatever its length.
 */
export function beginsAsMagic(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length, BLOB_MAGIC.length);
  for (let i = 0; i < n; i++) if (bytes[i] !== BLOB_MAGIC[i]) return false;
  return true;
}

export function hasMagic(bytes: Uint8Array): boolean {
  return bytes.byteLength >= BLOB_MAGIC.length && beginsAsMagic(bytes);
}

const NOT_OPEN_LAYOUT_HINT =
  'if the Poplar SDK wrote it, convert it on a machine with the SDK: popef import FILE -o FILE.open.popef ' +
  "(the SDK's encoding is unpublished, so it is not read directly)";

/**
 * How a file that begins with printable text begins, for the message
 * (a config.pbtxt or name_map.json given where the PopEF belongs); empty
 * for anything else. The hint is left as it is: the SDK's encoding is
 * unpublished, so text at the start does not prove the SDK did not write it.
 */
function textStart(bytes: Uint8Array): string {
  const head = bytes.subarray(0, 24);
  if (head.length === 0 || !head.every((b) => b === 0x09 || b === 0x0a || b === 0x0d || (b >= 0x20 && b < 0x7f))) return '';
  return ` (the file begins with text: ${JSON.stringify(String.fromCharCode(...head))}${bytes.length > head.length ? '...' : ''})`;
}

/** The error for a file whose first bytes are not a blob's signature. */
export function notOpenLayout(bytes: Uint8Array, file: string, offset: number): PopefError {
  return new PopefError(ErrorCode.NotPopef, `not a PopEF open-layout file: the blob signature is missing${textStart(bytes)}`, {
    file,
    offset,
    field: 'blob magic',
    suggestion: NOT_OPEN_LAYOUT_HINT,
  });
}

/**
 * Decodes and checks the header at absolute `offset` of `file`. `first` says
 * whether this is the first blob of the file, where a wrong magic means "not
 * our format at all" rather than "damaged".
 */
export function decodeHeader(bytes: Uint8Array, file: string, offset: number, first: boolean): BlobHeader {
  if (!hasMagic(bytes)) {
    if (first) throw notOpenLayout(bytes, file, offset);
    throw new PopefError(ErrorCode.BadStructure, 'expected a blob header here, but the blob signature is missing', {
      file,
      offset,
      field: 'blob magic',
      suggestion: "the previous blob's size is wrong or the file is damaged: pack or export it again",
    });
  }
  if (bytes.length < HEADER_SIZE) {
    throw new PopefError(ErrorCode.Truncated, `blob header needs ${HEADER_SIZE} bytes but only ${bytes.length} remain`, {
      file,
      offset,
      field: 'blob header',
    });
  }
  // Fixed offsets read from one view, rather than through a Cursor: every blob has a header, and before V8 optimises the
  // code each call and bigint costs (issue 26). The bounds are the length check above.
  const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_SIZE);
  const version = isCurrentVersion(bytes)
    ? CURRENT_VERSION
    : parseVersion(bytes.subarray(HeaderField.version, HeaderField.blobType), file, offset + HeaderField.version);
  if (version.major !== LAYOUT_MAJOR) {
    const newer = version.major > LAYOUT_MAJOR;
    throw new PopefError(
      ErrorCode.UnsupportedVersion,
      `blob layout version ${version.text} is ${newer ? 'newer than' : 'older than'} the supported major version ${LAYOUT_MAJOR}`,
      {
        file,
        offset: offset + HeaderField.version,
        field: 'blob version',
        suggestion: newer ? 'upgrade popef-toolkit to read this file' : 'this version was never published: the file is damaged',
      },
    );
  }
  const headerCrc = view.getUint32(HeaderField.headerCrc, true);
  const actualCrc = crc32(bytes.subarray(0, HeaderField.headerCrc));
  if (headerCrc !== actualCrc) {
    throw new PopefError(ErrorCode.Checksum, `blob header checksum mismatch: stored ${hex(headerCrc)}, computed ${hex(actualCrc)}`, {
      file,
      offset,
      field: 'header crc32',
      suggestion: 'the file is damaged: pack or export it again',
    });
  }
  const blobType = view.getUint8(HeaderField.blobType);
  const codec = view.getUint8(HeaderField.codec);
  const reserved0 = view.getUint16(HeaderField.reserved0, true);
  const descriptorLength = view.getUint32(HeaderField.descriptorLength, true);
  const totalSize = u64AsNumberAt(view, HeaderField.totalSize, file, offset + HeaderField.totalSize, 'total blob size');
  const payloadLength = u64AsNumberAt(view, HeaderField.payloadLength, file, offset + HeaderField.payloadLength, 'payload length');
  const descriptorCrc = view.getUint32(HeaderField.descriptorCrc, true);
  const payloadCrc = view.getUint32(HeaderField.payloadCrc, true);
  const reserved1 = view.getUint32(HeaderField.reserved1, true);
  if (reserved0 !== 0 || reserved1 !== 0)
    throw damagedHeader(
      file,
      offset,
      'reserved',
      reserved0 !== 0 ? HeaderField.reserved0 : HeaderField.reserved1,
      'reserved header bytes are not zero',
    );
  if (descriptorLength > Limits.maxDescriptorBytes) {
    throw new PopefError(ErrorCode.LimitExceeded, `descriptor length ${descriptorLength} exceeds the limit of ${Limits.maxDescriptorBytes} bytes`, {
      file,
      offset: offset + HeaderField.descriptorLength,
      field: 'descriptor length',
    });
  }
  const expected = blobSizeFor(descriptorLength, payloadLength);
  if (totalSize !== expected) {
    throw damagedHeader(
      file,
      offset,
      'total blob size',
      HeaderField.totalSize,
      `total blob size ${totalSize} disagrees with its parts (64-byte header, ${descriptorLength}-byte descriptor, ${payloadLength}-byte payload, padded to 8: ${expected})`,
    );
  }
  // FORMAT.md section 7: codec 1 only for executables; a type this version does not assign may use either codec it defines, no other.
  const assigned = blobType <= BlobType.OPAQUE || blobType === END_OF_SEGMENT;
  if (codec !== Codec.NONE && codec !== Codec.ZLIB)
    throw damagedHeader(file, offset, 'codec', HeaderField.codec, `codec ${codec} is not one this layout defines (0 none, 1 zlib)`);
  if (assigned && codec === Codec.ZLIB && blobType !== BlobType.POPLAR_EXECUTABLE)
    throw damagedHeader(file, offset, 'codec', HeaderField.codec, `codec ${codec} is not allowed for blob type ${blobType}`);
  return {
    version: version.text,
    major: version.major,
    minor: version.minor,
    blobType,
    codec,
    descriptorLength,
    totalSize,
    payloadLength,
    descriptorCrc,
    payloadCrc,
  };
}

/**
 * A header field that breaks the layout's rules, `at` bytes into the header
 * at `offset`. A function of the module, not a closure in decodeHeader:
 * unoptimized, a closure is allocated on every call, and every blob has a
 * header (issue 26).
 */
function damagedHeader(file: string, offset: number, field: string, at: number, message: string): PopefError {
  return new PopefError(ErrorCode.BadStructure, message, {
    file,
    offset: offset + at,
    field,
    suggestion: 'the file is damaged: pack or export it again',
  });
}

/** The version field as this code writes it ("1.0" and NUL padding), met in nearly every header read. */
const CURRENT_VERSION_BYTES = versionField(`${LAYOUT_MAJOR}.${LAYOUT_MINOR}`);
const CURRENT_VERSION = { text: `${LAYOUT_MAJOR}.${LAYOUT_MINOR}`, major: LAYOUT_MAJOR, minor: LAYOUT_MINOR } as const;

function versionField(text: string): Uint8Array {
  const out = new Uint8Array(HeaderField.versionLength);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

const VERSION_AT = HeaderField.version;
const VERSION_LENGTH = HeaderField.versionLength;

function isCurrentVersion(header: Uint8Array): boolean {
  // The offsets from module constants, not HeaderField's properties: unoptimized, each is a property lookup, up to 33 per header.
  for (let i = 0; i < VERSION_LENGTH; i++) if (header[VERSION_AT + i] !== CURRENT_VERSION_BYTES[i]) return false;
  return true;
}

function parseVersion(bytes: Uint8Array, file: string, offset: number): { text: string; major: number; minor: number } {
  // By hand, not with a regular expression and spread arrays: every blob header has one (issue 26 measured this).
  let end = bytes.indexOf(0);
  if (end === -1) end = bytes.length;
  let text = '';
  let dot = -1;
  let wellFormed = end > 0;
  for (let i = 0; i < end; i++) {
    const b = bytes[i] ?? 0;
    text += String.fromCharCode(b);
    if (b === 0x2e && dot === -1) dot = i;
    else if (b < 0x30 || b > 0x39) wellFormed = false;
  }
  wellFormed &&= dot > 0 && dot <= 5 && end - dot - 1 >= 1 && end - dot - 1 <= 5;
  for (let i = end; i < bytes.length && wellFormed; i++) if (bytes[i] !== 0) wellFormed = false;
  if (!wellFormed) {
    throw new PopefError(ErrorCode.BadStructure, `blob version ${JSON.stringify(text)} is not "MAJOR.MINOR" padded with NUL bytes`, {
      file,
      offset,
      field: 'blob version',
      suggestion: 'the file is damaged: pack or export it again',
    });
  }
  return { text, major: Number(text.slice(0, dot)), minor: Number(text.slice(dot + 1)) };
}

export function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}

export interface HeaderFields {
  readonly blobType: number;
  readonly codec: number;
  readonly descriptorLength: number;
  readonly payloadLength: number;
  readonly descriptorCrc: number;
  readonly payloadCrc: number;
  /** Defaults to this code's layout version. */
  readonly version?: string;
}

/** Encodes a 64-byte header, computing the total size and the header CRC. */
export function encodeHeader(h: HeaderFields): Uint8Array {
  const out = new Uint8Array(HEADER_SIZE);
  const view = new DataView(out.buffer);
  out.set(BLOB_MAGIC, HeaderField.magic);
  out.set(h.version === undefined ? CURRENT_VERSION_BYTES : versionField(h.version), HeaderField.version);
  view.setUint8(HeaderField.blobType, h.blobType);
  view.setUint8(HeaderField.codec, h.codec);
  view.setUint32(HeaderField.descriptorLength, h.descriptorLength, true);
  view.setBigUint64(HeaderField.totalSize, BigInt(blobSizeFor(h.descriptorLength, h.payloadLength)), true);
  view.setBigUint64(HeaderField.payloadLength, BigInt(h.payloadLength), true);
  view.setUint32(HeaderField.descriptorCrc, h.descriptorCrc, true);
  view.setUint32(HeaderField.payloadCrc, h.payloadCrc, true);
  view.setUint32(HeaderField.headerCrc, crc32(out.subarray(0, HeaderField.headerCrc)), true);
  return out;
}

/**
 * What a file's first bytes say it is: `open` when it begins with the open
 * layout's blob signature (damage after that is the reader's to report),
 * `empty` for a file of no bytes, `foreign` otherwise (an SDK-written export
 * or not PopEF at all: its encoding is never guessed at).
 */
export function layoutOf(firstBytes: Uint8Array, size: number): 'open' | 'empty' | 'foreign' {
  if (size === 0) return 'empty';
  return size >= BLOB_MAGIC.length && hasMagic(firstBytes) ? 'open' : 'foreign';
}
