import { sameBytes } from '../io/platform.js';

/**
 * Decoded FlatBuffers (blob descriptors, metadata) kept by the bytes they
 * were decoded from, so that bytes met again are not verified and decoded
 * again. A repository of many copies of one model (validate's benchmark,
 * or a fleet of configs over one export) holds the same descriptors and
 * metadata in every PopEF file; before V8 has optimised the decoder, each
 * decode costs tens of microseconds (issue 26).
 *
 * This is honest because decoding is a pure function of the bytes: the
 * verifier and the decoder look at nothing else, and the plain objects
 * they return hold no file name or offset (those appear only in errors,
 * and a failed decode is never kept, so each file's failure is reported
 * for that file). A hit is exact: the checksum that the reader has just
 * checked against the blob picks the candidates, and the bytes are then
 * compared in full. Everything else is still done per file: its read, its
 * checksums, its header walk and every rule that uses what was decoded.
 *
 * What is kept is frozen, deeply: it is shared by every file with those
 * bytes, so a caller that changed it would change another file's model
 * (the types are readonly; freezing makes a slip throw instead). Memory is
 * bounded: only buffers of up to MAX_KEPT_BYTES are kept, and no more than
 * MAX_TOTAL_BYTES of them; past that, bytes are decoded as before.
 */

/** Larger buffers are decoded every time (a model of a million anchors is not met twice). */
export const MAX_KEPT_BYTES = 64 * 1024;
/** Bytes kept by one cache at most. */
export const MAX_TOTAL_BYTES = 16 * 1024 * 1024;

interface Kept<T> {
  readonly bytes: Uint8Array;
  readonly value: T;
}

/** Freezes a decoded value and everything it holds (plain objects and arrays only). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** One cache of decoded values of one kind, keyed by the bytes and their CRC-32. */
export class DecodedByBytes<T> {
  private readonly byCrc = new Map<number, Kept<T>[]>();
  private total = 0;

  /**
   * The value `decode` makes of `bytes`, decoded once per distinct bytes.
   * `crc` must be the CRC-32 of `bytes` (the reader has just checked it).
   */
  get(bytes: Uint8Array, crc: number, decode: () => T): T {
    const candidates = this.byCrc.get(crc);
    if (candidates !== undefined) {
      // Indexed: every descriptor and metadata blob validate reads passes here (issue 26).
      for (let k = 0; k < candidates.length; k++) {
        const kept = candidates[k] as Kept<T>;
        if (sameBytes(kept.bytes, bytes)) return kept.value;
      }
    }
    const value = decode();
    if (bytes.byteLength <= MAX_KEPT_BYTES && this.total + bytes.byteLength <= MAX_TOTAL_BYTES) {
      // A copy: the caller's buffer may be a view of memory that it reuses.
      const kept: Kept<T> = { bytes: bytes.slice(), value: deepFreeze(value) };
      if (candidates === undefined) this.byCrc.set(crc, [kept]);
      else candidates.push(kept);
      this.total += bytes.byteLength;
    }
    return value;
  }
}
