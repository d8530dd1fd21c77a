import { Buffer, isUtf8 as nodeIsUtf8 } from 'node:buffer';
import { Readable } from 'node:stream';
import { createInflate, crc32 as nodeCrc32 } from 'node:zlib';

/**
 * The few primitives the format and schema layers need from the runtime:
 * CRC-32, a byte comparison, a strict UTF-8 check and a zlib inflater. This module is Node's;
 * `platform.browser.ts` beside it gives the same three in a browser, and the
 * page's build (scripts/build.mjs) puts that one in its place, so that the
 * reader runs unchanged in both and Node keeps its native, faster versions.
 */

/** CRC-32 (IEEE 802.3, the one zlib computes), continuing from `seed`. */
export function crc32(bytes: Uint8Array, seed = 0): number {
  return nodeCrc32(bytes, seed);
}

/**
 * Whether two byte arrays hold the same bytes: one native comparison.
 * Buffer.compare takes plain Uint8Arrays; wrapping one in a Buffer first
 * (Buffer.from(arrayBuffer, ...)) cost more than the comparison.
 */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

/** Whether the bytes are well-formed UTF-8. */
export function isUtf8(bytes: Uint8Array): boolean {
  return nodeIsUtf8(bytes);
}

/** A zlib stream being inflated: its output, and how much of its input it used. */
export interface Inflation {
  readonly chunks: AsyncIterable<Uint8Array>;
  /** Stored bytes the inflater consumed once the stream ended (the zlib end marker included). */
  consumed(): number;
  /** Stops reading and inflating; safe to call more than once. */
  destroy(): void;
}

/** Inflates a zlib (RFC 1950) stream read lazily from `stored`. */
export function inflate(stored: AsyncIterable<Uint8Array>): Inflation {
  const inflater = createInflate();
  const input = Readable.from(stored);
  input.on('error', (error) => inflater.destroy(error));
  input.pipe(inflater);
  return {
    chunks: inflater as AsyncIterable<Uint8Array>,
    consumed: () => inflater.bytesWritten,
    destroy: () => {
      input.destroy();
      inflater.destroy();
    },
  };
}
