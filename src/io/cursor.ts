import { ErrorCode, PopefError } from '../errors.js';

/**
 * Checked little-endian reads over bytes that came from `file` at absolute
 * offset `base`. Every read names its field; reading past the end throws a
 * typed truncation error with the absolute offset. 64-bit values come back
 * as bigint and are narrowed only through `u64AsNumber`, which checks.
 */
export class Cursor {
  private readonly view: DataView;
  private pos = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly base: number,
    private readonly file: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Absolute offset of the next byte to read. */
  get offset(): number {
    return this.base + this.pos;
  }

  private need(length: number, field: string): number {
    const at = this.pos;
    if (at + length > this.bytes.byteLength) {
      throw new PopefError(ErrorCode.Truncated, `${field} needs ${length} bytes but only ${this.bytes.byteLength - at} remain`, {
        file: this.file,
        offset: this.base + at,
        field,
      });
    }
    this.pos += length;
    return at;
  }

  u8(field: string): number {
    return this.view.getUint8(this.need(1, field));
  }

  u16(field: string): number {
    return this.view.getUint16(this.need(2, field), true);
  }

  u32(field: string): number {
    return this.view.getUint32(this.need(4, field), true);
  }

  u64(field: string): bigint {
    return this.view.getBigUint64(this.need(8, field), true);
  }

  /** A u64 that must fit in a JS number (sizes and offsets within a file). */
  u64AsNumber(field: string): number {
    const at = this.offset;
    return u64AsNumberAt(this.view, this.need(8, field), this.file, at, field);
  }

  bytesOf(length: number, field: string): Uint8Array {
    const at = this.need(length, field);
    return this.bytes.subarray(at, at + length);
  }
}

/** Past this, a u64 is no JS number: 2^53 - 1 is 2^21 - 1 in its upper half. */
const MAX_SAFE_HIGH_WORD = 0x1fffff;

/**
 * The little-endian u64 at `at` of `view` as a number, from its two 32-bit
 * halves (no bigint: the blob header reads two per blob, issue 26); a
 * LimitExceeded error naming `field` at absolute `offset` past 2^53 - 1.
 */
export function u64AsNumberAt(view: DataView, at: number, file: string, offset: number, field: string): number {
  const low = view.getUint32(at, true);
  const high = view.getUint32(at + 4, true);
  if (high > MAX_SAFE_HIGH_WORD) {
    throw new PopefError(ErrorCode.LimitExceeded, `${field} is ${view.getBigUint64(at, true)}, larger than any file this reader can address`, {
      file,
      offset,
      field,
    });
  }
  return high * 2 ** 32 + low;
}
